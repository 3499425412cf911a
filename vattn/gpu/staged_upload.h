// SPDX-License-Identifier: Apache-2.0
// Host-to-device copies that do not wait for the GPU's other work: through two pinned staging
// halves on a non-blocking stream of their own, so a thread can upload the next case while
// another thread's kernels run (a plain cudaMemcpy from pageable memory goes through the
// legacy default stream and waits for them). One per thread; not thread-safe.
#pragma once

#include <cstddef>

#include <cuda_runtime.h>

namespace vattn {

class StagedUpload {
 public:
  static constexpr size_t kChunkBytes = size_t{8} << 20;  // per staging half

  StagedUpload();
  ~StagedUpload();
  StagedUpload(const StagedUpload&) = delete;
  StagedUpload& operator=(const StagedUpload&) = delete;

  // Queues `bytes` from `host` to device memory `dst`; `host` may be reused once this returns
  // (it has been copied into staging memory, the last chunk possibly still in flight).
  void copy(void* dst, const void* host, size_t bytes);
  // Returns once every queued copy has reached the device.
  void finish();

 private:
  cudaStream_t stream_ = nullptr;
  char* staging_[2] = {nullptr, nullptr};
  cudaEvent_t free_[2] = {nullptr, nullptr};  // recorded after a half's copy: it may be refilled
  int next_ = 0;
};

}  // namespace vattn
