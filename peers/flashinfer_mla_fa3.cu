// SPDX-License-Identifier: Apache-2.0
// The fa3 kernel (flashinfer/attention/mla_hopper.cuh, wgmma, sm_90a only):
// BatchMLAPageAttentionHopperKernel, bf16 in and out, 512 + 64 dims, causal and unmasked, in
// its one configuration, the one BatchMLAPageAttentionHopper launches: 2 stages, 64 x 64 tiles,
// 256 threads.
#include <flashinfer/attention/mla_hopper.cuh>

#include "flashinfer_mla_kernels.h"

namespace vfi {
namespace {

template <bool CAUSAL>
KernelEntry fa3_entry() {
  constexpr uint32_t kStages = 2, kTileQ = 64, kTileKv = 64;
  using KTraits = flashinfer::mla::hopper::HopperKernelTraits<CAUSAL, kStages, kHeadDimCkv, kHeadDimKpe, kTileQ,
                                                              kTileKv, nv_bfloat16, nv_bfloat16, nv_bfloat16, int32_t>;
  KernelEntry e;
  e.kernel =
      reinterpret_cast<const void*>(&flashinfer::mla::hopper::BatchMLAPageAttentionHopperKernel<KTraits, Params>);
  e.stages = kStages;
  e.tile_kv = kTileKv;
  e.tile_q = kTileQ;
  e.qk_shard = false;
  e.causal = CAUSAL;
  e.smem_bytes = sizeof(typename KTraits::SharedStorage);
  e.block = dim3(KTraits::NUM_THREADS);
  return e;
}

}  // namespace

cudaError_t fa3_kernel(bool causal, KernelEntry* entry) {
  *entry = causal ? fa3_entry<true>() : fa3_entry<false>();
  return cudaSuccess;
}

}  // namespace vfi
