// SPDX-License-Identifier: Apache-2.0
// Step 3 of 3: merge the split partials of each row by their LSE weights. Also the place
// where a run the planner refused is made loud: every output row becomes NaN.
#pragma once

#include <cmath>

#include "mma_sm80.cuh"
#include "split_plan.cuh"
#include "timeline.cuh"

namespace vattn::VATTN_KERN_NS {

constexpr uint32_t kDevErrFatal = VATTN_DEVERR_INDPTR | VATTN_DEVERR_LIMITS | VATTN_DEVERR_SPLITS | VATTN_DEVERR_MASK;

constexpr int kReduceInFlight = 16;  // float4 rows a lane has requested at once
constexpr int kReduceGroups = kMaxSplits / 32;

// One output row's merge, or a share of it: the weighted sum over splits [s_lo, s_hi) of C * 128
// columns (lane l owns float4 columns l, l + 32, ...), the weights from all S splits' LSEs.
template <int C>
struct RowMerge {
  float4 acc[C];
  float wsum;  // sum of every split's weight (the whole warp's)
  float mx;    // the largest split LSE
  bool nan;    // some split LSE is NaN
};

// Lane s holds the LSE of split s of each group of 32; the LSEs and the first splits' rows are
// requested together, and the weights (which need every LSE) go through this warp's slice of
// shared memory, so the split loop needs no register indexing. Every column sees the same
// arithmetic whatever C is: the weighted sum in split order, the weights summed per lane in
// group order, then across the warp.
template <int C>
__device__ __forceinline__ RowMerge<C> merge_splits(int S, int s_lo, int s_hi, const float* lse_row, const float4* src,
                                                    int64_t split_stride, float* s_w, int lane) {
  constexpr int R = kReduceInFlight / C;  // splits per round of loads
  RowMerge<C> m;
  float ls[kReduceGroups];
#pragma unroll
  for (int g = 0; g < kReduceGroups; ++g) {
    const int s = 32 * g + lane;
    ls[g] = g * 32 < S && s < S ? lse_row[static_cast<int64_t>(s) * kRowsPerTile] : -INFINITY;
  }
  float4 v[R][C];
#pragma unroll
  for (int u = 0; u < R; ++u)  // the first rows, in flight with the LSEs
#pragma unroll
    for (int c = 0; c < C; ++c)
      v[u][c] = s_lo + u < s_hi ? src[(s_lo + u) * split_stride + 32 * c] : make_float4(0.f, 0.f, 0.f, 0.f);

  m.mx = -INFINITY;
  m.nan = false;
#pragma unroll
  for (int g = 0; g < kReduceGroups; ++g) {
    m.nan |= isnan(ls[g]);
    m.mx = fmaxf(m.mx, ls[g]);  // fmaxf drops NaN, hence the explicit flag
  }
  for (int o = 16; o > 0; o >>= 1) m.mx = fmaxf(m.mx, __shfl_xor_sync(0xffffffffu, m.mx, o));
  m.nan = __any_sync(0xffffffffu, m.nan);

#pragma unroll
  for (int c = 0; c < C; ++c) m.acc[c] = make_float4(0.f, 0.f, 0.f, 0.f);
  float wpart = 0.f;  // this lane's share of the weight sum
  if (m.mx != -INFINITY) {
#pragma unroll
    for (int g = 0; g < kReduceGroups; ++g) {
      if (g * 32 >= S) break;
      // An empty split holds o = 0, lse = -inf: weight 0, and its (finite) zeros add nothing.
      const float w_mine = ls[g] == -INFINITY ? 0.f : expf(ls[g] - m.mx);
      wpart += w_mine;
      s_w[32 * g + lane] = w_mine;
    }
    __syncwarp();
#pragma unroll 1
    for (int s0 = s_lo; s0 < s_hi; s0 += R) {
      float w[R];
#pragma unroll
      for (int u = 0; u < R; ++u) w[u] = s0 + u < s_hi ? s_w[s0 + u] : 0.f;
      if (s0 > s_lo) {
#pragma unroll
        for (int u = 0; u < R; ++u)  // all loads in flight before the first use; weight 0: not read
#pragma unroll
          for (int c = 0; c < C; ++c)
            v[u][c] = w[u] != 0.f ? src[(s0 + u) * split_stride + 32 * c] : make_float4(0.f, 0.f, 0.f, 0.f);
      }
#pragma unroll
      for (int u = 0; u < R; ++u) {
        if (s0 + u >= s_hi) break;
#pragma unroll
        for (int c = 0; c < C; ++c) {
          // A split of weight 0 (empty, or every key masked) adds nothing, whatever it holds.
          const float4 x = w[u] != 0.f ? v[u][c] : make_float4(0.f, 0.f, 0.f, 0.f);
          m.acc[c].x += w[u] * x.x;
          m.acc[c].y += w[u] * x.y;
          m.acc[c].z += w[u] * x.z;
          m.acc[c].w += w[u] * x.w;
        }
      }
    }
    __syncwarp();  // s_w is read by every lane before the warp's next row writes it
  }
  m.wsum = wpart;
  for (int o = 16; o > 0; o >>= 1) m.wsum += __shfl_xor_sync(0xffffffffu, m.wsum, o);
  return m;
}

// Writes a merged row: O / wsum in bf16 and the LSE (lane 0, when lse_out is given).
template <int C>
__device__ __forceinline__ void store_row(const RowMerge<C>& m, uint2* dst, float* lse_out, int lane) {
  const float inv = m.wsum > 0.f ? 1.f / m.wsum : 0.f;
  float lse = m.mx == -INFINITY ? -INFINITY : m.mx + logf(m.wsum);
  if (m.nan) lse = NAN;
  const float f = m.nan ? NAN : inv;
#pragma unroll
  for (int c = 0; c < C; ++c)
    dst[32 * c] = make_uint2(pack_bf16x2(m.acc[c].x * f, m.acc[c].y * f), pack_bf16x2(m.acc[c].z * f, m.acc[c].w * f));
  if (lse_out != nullptr && lane == 0) *lse_out = lse;
}

// A row's merge, or a span of it, when the call has at most 32 splits: merge_splits' arithmetic in
// the same order, so bitwise the same result, without its generality. Lane s holds split s's LSE
// and weight, which the FMAs take by shuffle; the splits go in rounds of R, all R loads in flight
// (one round for every split count the spans choose, but C = 1 with 18-32 splits). The reduce
// is bound by issuing instructions, not by bytes: merge_splits took about 1000 a warp item at
// B=1 T=64 P=4096 (2048 warp items, 16 warps an SM); this path takes half.
template <int C>
__device__ __forceinline__ void merge_rounds(int S, const float* lse_row, const float4* src, uint2* dst, float* lse_out,
                                             int lane) {
  // Splits per round of loads. One more with a float4 a lane (C = 1: 9-32 splits): a packed plan
  // of one request has 16 full splits and a short 17th (split_pack.h), which a second round
  // made as slow as the unpacked plan; the 17th register set still fits two blocks an SM.
  constexpr int R = C == 1 ? kReduceInFlight + 1 : kReduceInFlight / C;
  constexpr int64_t kSplitStride = static_cast<int64_t>(kRowsPerTile) * kDv / 4;  // float4s between splits
  // One base address for every load: without this, ptxas rebuilt it under each load's predicate.
  asm("" : "+l"(src));
  const float ls = lane < S ? lse_row[static_cast<int64_t>(lane) * kRowsPerTile] : -INFINITY;
  float4 v[R][C];
#pragma unroll
  for (int u = 0; u < R; ++u)  // the first round, in flight with the LSEs
#pragma unroll
    for (int c = 0; c < C; ++c) v[u][c] = u < S ? src[u * kSplitStride + 32 * c] : make_float4(0.f, 0.f, 0.f, 0.f);
  RowMerge<C> m;
  m.mx = fmaxf(-INFINITY, ls);  // fmaxf drops NaN, hence the flag
  for (int o = 16; o > 0; o >>= 1) m.mx = fmaxf(m.mx, __shfl_xor_sync(0xffffffffu, m.mx, o));
  m.nan = __any_sync(0xffffffffu, isnan(ls));
  // An empty split holds o = 0, lse = -inf: weight 0, and its (finite) zeros add nothing.
  const float w_mine = m.mx == -INFINITY || ls == -INFINITY ? 0.f : expf(ls - m.mx);
#pragma unroll
  for (int c = 0; c < C; ++c) m.acc[c] = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 1
  for (int s0 = 0; s0 < S; s0 += R) {
    if (s0 > 0) {
#pragma unroll
      for (int u = 0; u < R; ++u)
#pragma unroll
        for (int c = 0; c < C; ++c)
          v[u][c] = s0 + u < S ? src[(s0 + u) * kSplitStride + 32 * c] : make_float4(0.f, 0.f, 0.f, 0.f);
    }
#pragma unroll
    for (int u = 0; u < R; ++u) {
      // Splits past S weigh 0 and hold zeros: 0 * 0 added leaves every sum as it was (none is -0).
      const float w = __shfl_sync(0xffffffffu, w_mine, (s0 + u) & 31);
#pragma unroll
      for (int c = 0; c < C; ++c) {
        // A split of weight 0 (empty, or every key masked) adds nothing, whatever it holds.
        const float4 x = w != 0.f ? v[u][c] : make_float4(0.f, 0.f, 0.f, 0.f);
        m.acc[c].x += w * x.x;
        m.acc[c].y += w * x.y;
        m.acc[c].z += w * x.z;
        m.acc[c].w += w * x.w;
      }
    }
  }
  m.wsum = w_mine;
  for (int o = 16; o > 0; o >>= 1) m.wsum += __shfl_xor_sync(0xffffffffu, m.wsum, o);
  store_row<C>(m, dst, lse_out, lane);
}

__global__ void __launch_bounds__(kThreads) split_reduce_kernel(const __grid_constant__ SplitParams p) {
  const vattn_args& a = p.a;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  tl_reduce(0);  // timing probe builds only (timeline.cuh)
  // What a warp needs of its request's plan, copied to shared memory once per block, so a warp
  // goes from its item to its loads without a dependent global load (the plan, then the
  // indptr, then the LSEs, then the rows: four round trips in a row made the reduce 5-18 us on
  // the H200). Read while the error word is still in flight (unused when
  // the plan failed).
  // These are read before pdl_wait(), while the partial kernel may still run: only the planner
  // writes them, and it completed before any partial block passed its own pdl_wait(), which
  // comes before that block lets this grid launch (both partial kernels). The partial kernel
  // adds only VATTN_DEVERR_KV_INDEX to the error word, which is not fatal here. ld.global.cg
  // reads them at L2, so no L1 line left by an earlier grid can answer. About 0.5 us of a call
  // (0.5-2.5% at P <= 16384 on the H200).
  __shared__ int32_t s_reduce_begin[kMaxRequests];
  __shared__ int32_t s_partial_begin[kMaxRequests];
  __shared__ int32_t s_splits[kMaxRequests];
  __shared__ int32_t s_rows[kMaxRequests];  // T_b * H
  __shared__ int32_t s_qo[kMaxRequests];    // qo_indptr[b]
  __shared__ float s_weights[kThreads / 32][kMaxSplits];
  const uint32_t error = __ldcg(&p.header->error);
  const int total_reduce = __ldcg(&p.header->total_reduce);
  const int max_splits = static_cast<int>(__ldcg(&p.header->splits_used));
  const int B = a.num_requests;
  const int H = a.num_heads;
  for (int b = threadIdx.x; b < B; b += blockDim.x) {
    const RequestPlan* r = p.requests + b;
    s_reduce_begin[b] = __ldcg(&r->reduce_begin);
    s_partial_begin[b] = __ldcg(&r->partial_begin);
    s_splits[b] = __ldcg(&r->splits);
    s_rows[b] = __ldcg(&r->drafts) * H;
    s_qo[b] = __ldcg(a.qo_indptr + b);
  }
  __syncthreads();
  pdl_wait();  // the partial kernel has completed: its partials and LSEs are visible
  tl_reduce(1);
  if (error & kDevErrFatal) {
    const int64_t rows = a.n_q * a.num_heads;
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < rows * kDv; i += stride)
      a.out[i] = 0x7fc0;  // bf16 quiet NaN
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < rows; i += stride) a.lse[i] = NAN;
    return;
  }
  // Row merge item i = (row tile item, row, span of 512 / spans columns). False: no row to merge.
  struct Item {
    int S;
    int tr;
    int64_t slot0, row0;
  };
  auto decode = [&](int i, int spans, Item& it) {
    const int tile_item = i / (kRowsPerTile * spans);
    it.tr = (i / spans) % kRowsPerTile;  // row within the tile
    const int b = find_request(B, tile_item, [&](int j) { return s_reduce_begin[j]; });
    const int rt = tile_item - s_reduce_begin[b];
    if (rt * kRowsPerTile + it.tr >= s_rows[b]) return false;
    it.S = s_splits[b];
    it.slot0 = static_cast<int64_t>(s_partial_begin[b]) + static_cast<int64_t>(rt) * it.S;
    it.row0 = static_cast<int64_t>(s_qo[b]) * H + static_cast<int64_t>(rt) * kRowsPerTile;
    return true;
  };
  const int64_t split_stride = static_cast<int64_t>(kRowsPerTile) * kDv / 4;  // float4s between splits
  auto lse_of = [&](const Item& it) { return p.partial_lse + it.slot0 * kRowsPerTile + it.tr; };
  auto src_of = [&](const Item& it, int col4) {
    return reinterpret_cast<const float4*>(p.partial_out + (it.slot0 * kRowsPerTile + it.tr) * kDv) + col4;
  };
  auto dst_of = [&](const Item& it, int col4) {
    return reinterpret_cast<uint2*>(a.out + (it.row0 + it.tr) * kDv) + col4;
  };

  if (max_splits > 32) {
    // Many splits (B = 1, T = 16: 128 rows of up to 66): the block's eight warps share one
    // (row, quarter), each weighing a run of ceil(S / 8) splits, so a row costs one round trip
    // instead of one per 16 splits; warp 0 adds the eight sums in warp order and stores.
    __shared__ float4 s_part[kThreads / 32][32];
    const int total_items = total_reduce * kRowsPerTile * 4;
    for (int bi = blockIdx.x; bi < total_items; bi += gridDim.x) {
      Item it;
      if (!decode(bi, 4, it)) continue;  // the same for the whole block
      const int col4 = (bi % 4) * 32 + lane;
      const int per_warp = (it.S + kThreads / 32 - 1) / (kThreads / 32);
      const int s_lo = min(it.S, warp * per_warp), s_hi = min(it.S, s_lo + per_warp);
      RowMerge<1> m =
          merge_splits<1>(it.S, s_lo, s_hi, lse_of(it), src_of(it, col4), split_stride, s_weights[warp], lane);
      s_part[warp][lane] = m.acc[0];
      __syncthreads();
      if (warp == 0) {
        float4 sum = s_part[0][lane];
#pragma unroll
        for (int w = 1; w < kThreads / 32; ++w) {
          const float4 x = s_part[w][lane];
          sum.x += x.x;
          sum.y += x.y;
          sum.z += x.z;
          sum.w += x.w;
        }
        m.acc[0] = sum;
        store_row<1>(m, dst_of(it, col4), bi % 4 == 0 ? a.lse + it.row0 + it.tr : nullptr, lane);
      }
      __syncthreads();  // s_part is read before the next item writes it
    }
    tl_reduce(2);
    return;
  }
  // Otherwise a warp merges one row over 512 / spans columns. With few splits a warp takes more
  // columns, so each of its rounds of loads still asks for kReduceInFlight rows: many rows and
  // few splits (B=8, T=64: 4096 rows of 2 splits) would otherwise leave the loads too few to
  // hide the round trip. Both choices follow the call's largest split count. Item wi = (tile
  // item, row, span), decoded by shifts (spans is 1, 2 or 4).
  const int span_bits = max_splits <= 4 ? 0 : max_splits <= 8 ? 1 : 2, spans = 1 << span_bits;
  const int total_warps = total_reduce * kRowsPerTile * spans;
  constexpr int kRowBits = kRowsPerTile == 64 ? 6 : 5;
  static_assert(1 << kRowBits == kRowsPerTile, "item decode by shifts");
  for (int wi = blockIdx.x * (kThreads / 32) + warp; wi < total_warps; wi += gridDim.x * (kThreads / 32)) {
    // decode()'s body again, by shifts: the reduce's code moved with any shared form of it (a
    // lambda for both paths rescheduled the many-splits path on both targets; that path is
    // sensitive to its code), and that form was never timed.
    Item it;
    const int tile_item = wi >> (kRowBits + span_bits), span = wi & (spans - 1);
    it.tr = (wi >> span_bits) & (kRowsPerTile - 1);
    const int b = find_request(B, tile_item, [&](int j) { return s_reduce_begin[j]; });
    const int rt = tile_item - s_reduce_begin[b];
    if (rt * kRowsPerTile + it.tr >= s_rows[b]) continue;
    it.S = s_splits[b];
    it.slot0 = static_cast<int64_t>(s_partial_begin[b]) + static_cast<int64_t>(rt) * it.S;
    it.row0 = static_cast<int64_t>(s_qo[b]) * H + static_cast<int64_t>(rt) * kRowsPerTile;
    const int col4 = span * (kDv / 4 / spans) + lane;  // this lane's first float4 column
    float* lse_out = span == 0 ? a.lse + it.row0 + it.tr : nullptr;
    if (spans == 1)
      merge_rounds<4>(it.S, lse_of(it), src_of(it, col4), dst_of(it, col4), lse_out, lane);
    else if (spans == 2)
      merge_rounds<2>(it.S, lse_of(it), src_of(it, col4), dst_of(it, col4), lse_out, lane);
    else
      merge_rounds<1>(it.S, lse_of(it), src_of(it, col4), dst_of(it, col4), lse_out, lane);
  }
  tl_reduce(2);
}

}  // namespace vattn::VATTN_KERN_NS
