// SPDX-License-Identifier: Apache-2.0
#include "vattn/gpu/device_buffer.h"

#include <cuda_runtime.h>

#include <atomic>
#include <cstdio>
#include <thread>

#include "vattn/gpu/transient_retry.h"

namespace vattn {

int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky "no driver" error
    return 0;
  }
  return n;
}

CurrentDevice current_device() {
  int dev = 0;
  VATTN_CUDA(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  VATTN_CUDA(cudaGetDeviceProperties(&prop, dev));
  return {prop.name, prop.multiProcessorCount};
}

namespace {
std::atomic<int64_t> g_memory_wait_ms{0};
}  // namespace

void set_device_memory_wait(std::chrono::milliseconds budget) { g_memory_wait_ms = budget.count(); }

cudaError_t with_memory_wait(const std::string& what, size_t bytes, const std::function<cudaError_t()>& step) {
  RetryWaits w;
  w.budget = std::chrono::milliseconds(g_memory_wait_ms.load());
  return retry_transient(
      cudaErrorMemoryAllocation, w,
      [&] {
        const cudaError_t e = step();
        if (e == cudaErrorMemoryAllocation) (void)cudaGetLastError();  // not sticky: clear it for the retry
        return e;
      },
      [&](std::chrono::milliseconds d, std::chrono::milliseconds waited) {
        if (waited.count() == 0) {
          const std::string size = bytes > 0 ? " (" + std::to_string(bytes) + " B)" : "";
          std::fprintf(stderr,
                       "vattn: device memory full for '%s'%s: waiting up to %lld s for other processes to free some\n",
                       what.c_str(), size.c_str(), static_cast<long long>(w.budget.count() / 1000));
        }
        std::this_thread::sleep_for(d);
      });
}

DeviceBuffer::DeviceBuffer(std::string name, size_t bytes) : name_(std::move(name)), bytes_(bytes) {
  // The user region starts 256-aligned (cudaMalloc aligns the base; the guard is a multiple).
  const size_t padded = (bytes + 255) / 256 * 256;
  VATTN_CUDA_ALLOC(
      with_memory_wait(name_, padded + 2 * kGuardBytes, [&] { return cudaMalloc(&base_, padded + 2 * kGuardBytes); }));
  user_ = base_ + kGuardBytes;
  VATTN_CUDA(cudaMemset(base_, kCanary, kGuardBytes));
  VATTN_CUDA(cudaMemset(base_ + kGuardBytes + bytes, kCanary, padded - bytes + kGuardBytes));
}

DeviceBuffer::~DeviceBuffer() {
  if (base_) cudaFree(base_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (base_) cudaFree(base_);
    name_ = std::move(o.name_);
    base_ = o.base_;
    user_ = o.user_;
    bytes_ = o.bytes_;
    o.base_ = nullptr;
    o.user_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

void DeviceBuffer::upload(const void* host, size_t bytes) {
  if (bytes > bytes_)
    throw CudaError("upload of " + std::to_string(bytes) + " B into '" + name_ + "' of " + std::to_string(bytes_) +
                    " B");
  VATTN_CUDA(cudaMemcpy(user_, host, bytes, cudaMemcpyHostToDevice));
}

void DeviceBuffer::download(void* host, size_t bytes) const {
  if (bytes > bytes_) throw CudaError("download of " + std::to_string(bytes) + " B from '" + name_ + "'");
  VATTN_CUDA(cudaMemcpy(host, user_, bytes, cudaMemcpyDeviceToHost));
}

void DeviceBuffer::fill(unsigned char byte) {
  if (bytes_) VATTN_CUDA(cudaMemset(user_, byte, bytes_));
}

std::string DeviceBuffer::check_guards() const {
  if (!base_) return "";
  const size_t padded = (bytes_ + 255) / 256 * 256;
  std::vector<unsigned char> front(kGuardBytes), back(padded - bytes_ + kGuardBytes);
  VATTN_CUDA(cudaMemcpy(front.data(), base_, front.size(), cudaMemcpyDeviceToHost));
  VATTN_CUDA(cudaMemcpy(back.data(), base_ + kGuardBytes + bytes_, back.size(), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < front.size(); ++i)
    if (front[i] != kCanary)
      return "buffer '" + name_ + "': guard byte " + std::to_string(kGuardBytes - i) + " before the start was written";
  for (size_t i = 0; i < back.size(); ++i)
    if (back[i] != kCanary)
      return "buffer '" + name_ + "': guard byte " + std::to_string(i) + " past the end was written";
  return "";
}

}  // namespace vattn
