// SPDX-License-Identifier: Apache-2.0
// CUDA runtime calls on the host side of the suite: every return code checked, turned into
// an exception that names the call and the place.
#pragma once

#include <stdexcept>
#include <string>

#include <cuda_runtime_api.h>

#include "vattn/case/resource_error.h"

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

// A step that allocates for the suite itself (a case's buffers, the workspace, the oracle's
// scratch): the device out of memory there is a ResourceError, not the code under test's failure.
// Only where the suite allocates: the kernel's own calls go through cuda_check.
inline void cuda_check_alloc(cudaError_t e, const char* call, const char* file, int line) {
  if (e == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();  // not sticky; clear it so the next call does not see it
    throw ResourceError("device memory", std::string(call) + " failed: cudaErrorMemoryAllocation (" +
                                             cudaGetErrorString(e) + ") at " + file + ":" + std::to_string(line));
  }
  cuda_check(e, call, file, line);
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
#define VATTN_CUDA_ALLOC(call) ::vattn::cuda_check_alloc((call), #call, __FILE__, __LINE__)
