// SPDX-License-Identifier: Apache-2.0
// A device allocation with guard bands: kGuardBytes of a known canary pattern before and
// after the user region. After a run, any byte changed in a guard means something wrote
// outside its buffer; poison() fills the user region with 0xFF bytes (NaN as bf16 and fp32),
// so an element the kernel forgot to write shows up as NaN.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "vattn/gpu/cuda_check.h"

namespace vattn {

// How long an allocation that finds the device's memory full waits for other processes to free
// some (transient_retry.h) before it fails; 0 (the default) fails at once. The GPU tests set
// it: they share one GPU under ctest -j.
void set_device_memory_wait(std::chrono::milliseconds budget);
// Runs a CUDA step whose only transient failure is cudaErrorMemoryAllocation (an allocation,
// or a call that allocates first), retried within that wait; `what` names it in the note.
cudaError_t with_memory_wait(const std::string& what, size_t bytes, const std::function<cudaError_t()>& step);

class DeviceBuffer {
 public:
  static constexpr size_t kGuardBytes = 4096;
  static constexpr unsigned char kCanary = 0xA5;

  DeviceBuffer() = default;
  DeviceBuffer(std::string name, size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;

  void* data() const { return user_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(user_);
  }
  size_t bytes() const { return bytes_; }
  const std::string& name() const { return name_; }

  void upload(const void* host, size_t bytes);
  void download(void* host, size_t bytes) const;
  void fill(unsigned char byte);
  void poison() { fill(0xFF); }
  // "" when both guards are intact, else a description of the first damaged byte.
  std::string check_guards() const;

 private:
  std::string name_;
  unsigned char* base_ = nullptr;
  void* user_ = nullptr;
  size_t bytes_ = 0;
};

template <class T>
DeviceBuffer upload_vector(const std::string& name, const std::vector<T>& v) {
  DeviceBuffer b(name, v.size() * sizeof(T));
  if (!v.empty()) b.upload(v.data(), v.size() * sizeof(T));
  return b;
}

}  // namespace vattn
