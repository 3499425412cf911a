// SPDX-License-Identifier: Apache-2.0
// Inside libvattn_flashinfer_mla.so: the FlashInfer MLA kernels it instantiates, one entry per
// configuration, each launched with one MLAParams argument (flashinfer_mla_lib.cu launches them).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include <flashinfer/attention/mla_params.cuh>

namespace vfi {

using Params = flashinfer::MLAParams<nv_bfloat16, nv_bfloat16, nv_bfloat16, int32_t>;

constexpr int kHeadDimCkv = 512, kHeadDimKpe = 64;

struct KernelEntry {
  const void* kernel = nullptr;  // host stub of the __global__ function
  int stages = 0, tile_kv = 0, tile_q = 0;
  bool qk_shard = false, causal = false;
  size_t smem_bytes = 0;  // sizeof the kernel's SharedStorage: its dynamic shared memory
  dim3 block;
};

// fa2 (mla.cuh): the configuration FlashInfer's own DISPATCH_SMEM_CONFIG picks for a per-SM
// shared-memory limit. Throws flashinfer::Error (FlashInfer's message) below its smallest one.
cudaError_t fa2_kernel(int smem_limit_per_sm, bool causal, KernelEntry* entry);

// fa3 (mla_hopper.cuh): its single configuration. Defined only when the library has fa3.
cudaError_t fa3_kernel(bool causal, KernelEntry* entry);

}  // namespace vfi
