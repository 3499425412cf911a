// SPDX-License-Identifier: Apache-2.0
// CUDA runtime calls on the host side of the suite: every return code checked, turned into
// an exception that names the call and the place.
#pragma once

#include <stdexcept>
#include <string>

#include <cuda_runtime_api.h>

namespace vattn {

class CudaError : public std::runtime_error {
 public:
  explicit CudaError(const std::string& what) : std::runtime_error(what) {}
};

inline void cuda_check(cudaError_t e, const char* call, const char* file, int line) {
  if (e != cudaSuccess) {
    throw CudaError(std::string(call) + " failed: " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ") at " +
                    file + ":" + std::to_string(line));
  }
}

// Number of usable CUDA devices; 0 when there is no driver or no GPU (never throws).
int cuda_device_count();

// The current device's name and SM count (throws CudaError).
struct CurrentDevice {
  std::string name;
  int sms = 0;
};
CurrentDevice current_device();

}  // namespace vattn

#define VATTN_CUDA(call) ::vattn::cuda_check((call), #call, __FILE__, __LINE__)
