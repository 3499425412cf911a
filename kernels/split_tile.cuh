// SPDX-License-Identifier: Apache-2.0
// The per-tile math of split-v1's work item (32 query rows x one 32-key stage), in the order
// the partial kernel runs it. Shared by the kernel (split_partial.cuh) and by
// vattn_ceiling_probe (vattn/gpu/probe/), so that the probe times the kernel's own per-tile math.
//  1. S partial: warp (dq, kh) multiplies its d_qk quarter dq (Q in registers) by key half kh;
//  2. softmax: warp w owns rows 4w..4w+3, sums the four partials in a fixed order, and (after
//     the caller's masking) keeps the running max and sum, writes P (bf16) and the rescale;
//  3. O = O * corr + P V over output columns 64w..64w+63 of all 32 rows.
#pragma once

#include <cmath>

#include "mma_sm80.cuh"
#include "split_params.h"

namespace vattn::VATTN_KERN_NS {

constexpr int kQuarterDims = kDqk / 4;  // 144 = 9 k-steps of 16
constexpr int kKSteps = kQuarterDims / 16;
constexpr int kChunksPerRow = kDqk / 8;  // 16-byte chunks per KV row
static_assert(kQuarterDims % 16 == 0, "d_qk quarter must be whole mma k-steps");

// Where a tile's copies are issued during the previous tile (eight threads per KV row, nine
// 16-byte chunks each): chunks [0, kCopyCut1) after S k-step kCopyStep1, [kCopyCut1,
// kCopyCut2) after k-step kCopyStep2, the rest after the softmax. Issued all at once they
// stall the warps).
constexpr int kCopyStep1 = 0, kCopyStep2 = 4, kCopyCut1 = 2, kCopyCut2 = 5;
static_assert(kCopyStep2 < kKSteps && kCopyCut2 < kChunksPerRow / 8, "copy schedule inside the S phase");

// Where this thread works in each phase.
struct TileLane {
  int warp, lane;
  int dq, kh;      // S phase: d_qk quarter, key half
  int g, t4;       // mma fragment coordinates
  int mat, mrow;   // ldmatrix: which 8x8 matrix / row this lane addresses
  int srow, skey;  // softmax phase: this lane's row and its four keys
};

__device__ __forceinline__ TileLane tile_lane() {
  TileLane tl;
  tl.warp = threadIdx.x >> 5;
  tl.lane = threadIdx.x & 31;
  tl.dq = tl.warp & 3;
  tl.kh = tl.warp >> 2;
  tl.g = tl.lane >> 2;
  tl.t4 = tl.lane & 3;
  tl.mat = tl.lane >> 3;
  tl.mrow = tl.lane & 7;
  tl.srow = tl.warp * 4 + (tl.lane >> 3);
  tl.skey = (tl.lane & 7) * 4;
  return tl;
}

// Q fragments of the 32 rows from row0 over this warp's d_qk quarter (rows not valid: zeros).
__device__ __forceinline__ void load_q(uint32_t (&qf)[2][kKSteps][4], const uint16_t* q, int64_t row0,
                                       const bool (&valid)[2][2], const TileLane& tl) {
#pragma unroll
  for (int mt = 0; mt < 2; ++mt) {
    const uint32_t* q_lo = reinterpret_cast<const uint32_t*>(q + (row0 + mt * 16 + tl.g) * kDqk);
    const uint32_t* q_hi = q_lo + 8 * kDqk / 2;
#pragma unroll
    for (int ks = 0; ks < kKSteps; ++ks) {
      const int w = (tl.dq * kQuarterDims + ks * 16 + 2 * tl.t4) >> 1;
      qf[mt][ks][0] = valid[mt][0] ? __ldg(q_lo + w) : 0u;
      qf[mt][ks][1] = valid[mt][1] ? __ldg(q_hi + w) : 0u;
      qf[mt][ks][2] = valid[mt][0] ? __ldg(q_lo + w + 4) : 0u;
      qf[mt][ks][3] = valid[mt][1] ? __ldg(q_hi + w + 4) : 0u;
    }
  }
}

// Phase 1, one k-step of the S partial (d_qk quarter dq x key half kh, all 32 rows): the
// caller loops over the kKSteps steps, so it can issue the next tile's copies between them.
// (A helper owning the loop and calling back between steps gets a different register
// allocation from ptxas: ~1% slower on the H200. This split keeps the kernel's SASS as it was.)
__device__ __forceinline__ void s_kstep(float (&acc)[2][2][4], const uint32_t (&qf)[2][kKSteps][4], const uint16_t* kv,
                                        const TileLane& tl, int ks) {
  const int d0 = tl.dq * kQuarterDims + ks * 16;
  uint32_t bk[4];
  ldmatrix_x4(bk, kv + (tl.kh * 16 + (tl.mat >> 1) * 8 + tl.mrow) * kSmemStride + d0 + (tl.mat & 1) * 8);
#pragma unroll
  for (int mt = 0; mt < 2; ++mt) {
    mma_bf16_16816(acc[mt][0], qf[mt][ks], bk[0], bk[1]);
    mma_bf16_16816(acc[mt][1], qf[mt][ks], bk[2], bk[3]);
  }
}

// The partial into the exchange buffer s_x ([dq][row][kXStride]).
__device__ __forceinline__ void store_partial(float* s_x, const float (&acc)[2][2][4], const TileLane& tl) {
  float* x = s_x + tl.dq * kRowsPerTile * kXStride;
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int n = 0; n < 2; ++n)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        *reinterpret_cast<float2*>(x + (mt * 16 + tl.g + 8 * h) * kXStride + tl.kh * 16 + n * 8 + 2 * tl.t4) =
            make_float2(acc[mt][n][2 * h], acc[mt][n][2 * h + 1]);
}

// Phase 2, first half: the full scores of this lane's row and four keys, the four quarters
// summed in a fixed order (so the result does not depend on timing).
__device__ __forceinline__ void sum_partials(float (&s)[4], const float* s_x, const TileLane& tl) {
  const float* x = s_x + tl.srow * kXStride + tl.skey;
  const float4 x0 = *reinterpret_cast<const float4*>(x);
  const float4 x1 = *reinterpret_cast<const float4*>(x + 1 * kRowsPerTile * kXStride);
  const float4 x2 = *reinterpret_cast<const float4*>(x + 2 * kRowsPerTile * kXStride);
  const float4 x3 = *reinterpret_cast<const float4*>(x + 3 * kRowsPerTile * kXStride);
  s[0] = ((x0.x + x1.x) + x2.x) + x3.x;
  s[1] = ((x0.y + x1.y) + x2.y) + x3.y;
  s[2] = ((x0.z + x1.z) + x2.z) + x3.z;
  s[3] = ((x0.w + x1.w) + x2.w) + x3.w;
}

// Phase 2, second half: the online softmax of scaled, masked scores s (log2 units, -inf =
// masked). Updates the row's running max and this lane's running sum, writes P (bf16) and
// the row's rescale factor.
__device__ __forceinline__ void online_softmax(const float (&s)[4], float& m_run, float& l_run, uint16_t* s_p,
                                               float* s_corr, const TileLane& tl) {
  float mx = fmaxf(fmaxf(s[0], s[1]), fmaxf(s[2], s[3]));
  mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
  mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
  mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 4));
  const float m_new = fmaxf(m_run, mx);
  const float m_use = m_new == -INFINITY ? 0.f : m_new;  // all masked so far: avoid -inf - -inf
  const float corr = exp2f(m_run - m_use);
  float pe[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) pe[e] = exp2f(s[e] - m_use);
  l_run = l_run * corr + ((pe[0] + pe[1]) + (pe[2] + pe[3]));
  m_run = m_new;
  *reinterpret_cast<uint2*>(s_p + tl.srow * kPStride + tl.skey) =
      make_uint2(pack_bf16x2(pe[0], pe[1]), pack_bf16x2(pe[2], pe[3]));
  if ((tl.lane & 7) == 0) s_corr[tl.srow] = corr;
}

// Phase 3, first half: O *= the rescale factor of its row. Deep in a long prefix the running
// max rarely moves: corr is exactly 1 and the rescale would change no bit, so the warp skips
// it when no lane needs it.
__device__ __forceinline__ void rescale_o(float (&o)[2][8][4], const float* s_corr, const TileLane& tl) {
  float corr[2][2];
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) corr[mt][h] = s_corr[mt * 16 + tl.g + 8 * h];
  if (__any_sync(0xffffffffu, corr[0][0] != 1.f || corr[0][1] != 1.f || corr[1][0] != 1.f || corr[1][1] != 1.f)) {
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int n = 0; n < 8; ++n) {
        o[mt][n][0] *= corr[mt][0];
        o[mt][n][1] *= corr[mt][0];
        o[mt][n][2] *= corr[mt][1];
        o[mt][n][3] *= corr[mt][1];
      }
  }
}

// Phase 3, second half: O += P V on the tensor cores, output columns 64 * warp.. of all rows.
__device__ __forceinline__ void pv_mma(float (&o)[2][8][4], const uint16_t* s_p, const uint16_t* kv,
                                       const TileLane& tl) {
#pragma unroll
  for (int kk = 0; kk < 2; ++kk) {
    uint32_t pa[2][4];
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
      ldmatrix_x4(pa[mt], s_p + (mt * 16 + (tl.mat & 1) * 8 + tl.mrow) * kPStride + kk * 16 + (tl.mat >> 1) * 8);
#pragma unroll
    for (int np = 0; np < 4; ++np) {
      uint32_t bv[4];
      ldmatrix_x4_trans(
          bv, kv + (kk * 16 + (tl.mat & 1) * 8 + tl.mrow) * kSmemStride + tl.warp * 64 + np * 16 + (tl.mat >> 1) * 8);
#pragma unroll
      for (int mt = 0; mt < 2; ++mt) {
        mma_bf16_16816(o[mt][2 * np], pa[mt], bv[0], bv[1]);
        mma_bf16_16816(o[mt][2 * np + 1], pa[mt], bv[2], bv[3]);
      }
    }
  }
}

}  // namespace vattn::VATTN_KERN_NS
