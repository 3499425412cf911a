// SPDX-License-Identifier: Apache-2.0
#include "vattn/gpu/staged_upload.h"

#include <cstring>

#include "vattn/gpu/cuda_check.h"

namespace vattn {

StagedUpload::StagedUpload() {
  VATTN_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  for (int i = 0; i < 2; ++i) {
    VATTN_CUDA(cudaHostAlloc(reinterpret_cast<void**>(&staging_[i]), kChunkBytes, cudaHostAllocDefault));
    VATTN_CUDA(cudaEventCreateWithFlags(&free_[i], cudaEventDisableTiming));
    VATTN_CUDA(cudaEventRecord(free_[i], stream_));
  }
}

StagedUpload::~StagedUpload() {
  // No throwing here: after a sticky error these calls fail, and the process is going anyway.
  if (stream_) (void)cudaStreamSynchronize(stream_);
  for (int i = 0; i < 2; ++i) {
    if (free_[i]) (void)cudaEventDestroy(free_[i]);
    if (staging_[i]) (void)cudaFreeHost(staging_[i]);
  }
  if (stream_) (void)cudaStreamDestroy(stream_);
}

void StagedUpload::copy(void* dst, const void* host, size_t bytes) {
  const char* src = static_cast<const char*>(host);
  char* out = static_cast<char*>(dst);
  while (bytes > 0) {
    const size_t n = bytes < kChunkBytes ? bytes : kChunkBytes;
    const int h = next_;
    next_ ^= 1;
    VATTN_CUDA(cudaEventSynchronize(free_[h]));  // this half's previous copy is done
    std::memcpy(staging_[h], src, n);            // while the other half is on its way
    VATTN_CUDA(cudaMemcpyAsync(out, staging_[h], n, cudaMemcpyHostToDevice, stream_));
    VATTN_CUDA(cudaEventRecord(free_[h], stream_));
    src += n;
    out += n;
    bytes -= n;
  }
}

void StagedUpload::finish() { VATTN_CUDA(cudaStreamSynchronize(stream_)); }

}  // namespace vattn
