// SPDX-License-Identifier: Apache-2.0
// The fa2 kernels (flashinfer/attention/mla.cuh, mma.sync): BatchMLAPagedAttentionKernel for
// each shared-memory configuration FlashInfer dispatches on, bf16 in and out, 512 + 64 dims,
// causal and unmasked.
#include <flashinfer/attention/mla.cuh>

#include "flashinfer_mla_kernels.h"

namespace vfi {
namespace {

template <bool CAUSAL, uint32_t STAGES, uint32_t TILE_KV, bool QK_SHARD>
KernelEntry fa2_entry() {
  // CTA_TILE_Q = 64 and 32x4x2 threads, as flashinfer::mla::BatchMLAPagedAttention launches it.
  using KTraits = flashinfer::mla::KernelTraits<CAUSAL, STAGES, QK_SHARD, kHeadDimCkv, kHeadDimKpe, 64, TILE_KV,
                                                nv_bfloat16, nv_bfloat16, nv_bfloat16, int32_t>;
  KernelEntry e;
  e.kernel = reinterpret_cast<const void*>(&flashinfer::mla::BatchMLAPagedAttentionKernel<KTraits, Params>);
  e.stages = STAGES;
  e.tile_kv = TILE_KV;
  e.tile_q = KTraits::CTA_TILE_Q;
  e.qk_shard = QK_SHARD;
  e.causal = CAUSAL;
  e.smem_bytes = sizeof(typename KTraits::SharedStorage);
  e.block = dim3(32, 4, 2);
  return e;
}

template <uint32_t STAGES, uint32_t TILE_KV, bool QK_SHARD>
cudaError_t pick(bool causal, KernelEntry* entry) {
  *entry = causal ? fa2_entry<true, STAGES, TILE_KV, QK_SHARD>() : fa2_entry<false, STAGES, TILE_KV, QK_SHARD>();
  return cudaSuccess;
}

}  // namespace

cudaError_t fa2_kernel(int smem_limit_per_sm, bool causal, KernelEntry* entry) {
  // FlashInfer's own dispatch macro, so the thresholds are exactly its own.
  DISPATCH_SMEM_CONFIG(smem_limit_per_sm, NUM_STAGES, CTA_TILE_KV, QK_SHARD,
                       { return pick<NUM_STAGES, CTA_TILE_KV, QK_SHARD>(causal, entry); });
}

}  // namespace vfi
