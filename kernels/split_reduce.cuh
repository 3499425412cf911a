// SPDX-License-Identifier: Apache-2.0
// Step 3 of 3: merge the split partials of each row by their LSE weights. Also the place
// where a run the planner refused is made loud: every output row becomes NaN.
#pragma once

#include <cmath>

#include "mma_sm80.cuh"
#include "split_plan.cuh"

namespace vattn::VATTN_KERN_NS {

constexpr uint32_t kDevErrFatal = VATTN_DEVERR_INDPTR | VATTN_DEVERR_LIMITS | VATTN_DEVERR_SPLITS | VATTN_DEVERR_MASK;

__global__ void __launch_bounds__(kThreads) split_reduce_kernel(const __grid_constant__ SplitParams p) {
  const vattn_args& a = p.a;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  pdl_wait();  // the partial kernel (and, before it, the planner) has completed
  // The plan is read while the error word is still in flight (unused when the plan failed).
  __shared__ int32_t s_reduce_begin[kMaxRequests];
  const uint32_t error = p.header->error;
  const int total_reduce = p.header->total_reduce;
  for (int b = threadIdx.x; b < a.num_requests; b += blockDim.x) s_reduce_begin[b] = p.requests[b].reduce_begin;
  __syncthreads();
  if (error & kDevErrFatal) {
    const int64_t rows = a.n_q * a.num_heads;
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < rows * kDv; i += stride)
      a.out[i] = 0x7fc0;  // bf16 quiet NaN
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < rows; i += stride)
      a.lse[i] = NAN;
    return;
  }
  // One warp per (row, quarter of the 512 output columns): a lane owns four columns. The
  // split loop is a chain of L2 round trips, so a warp first turns the row's split LSEs into
  // weights (lane s holds split s of each group of 32), then streams the partial rows with
  // sixteen splits in flight, taking each weight from its lane by a shuffle. Each request's
  // first reduce item is copied to shared memory once, so finding a warp's request costs no
  // chain of dependent global loads.
  constexpr int kQuarters = 4;
  constexpr int kInFlight = 16;
  const int total_warps = total_reduce * kRowsPerTile * kQuarters;
  const int H = a.num_heads;
  for (int wi = blockIdx.x * (kThreads / 32) + warp; wi < total_warps; wi += gridDim.x * (kThreads / 32)) {
    const int tile_item = wi / (kRowsPerTile * kQuarters);
    const int tr = (wi / kQuarters) % kRowsPerTile;  // row within the tile
    const int quarter = wi % kQuarters;
    const int b = find_request(a.num_requests, tile_item, [&](int i) { return s_reduce_begin[i]; });
    const RequestPlan r = p.requests[b];
    const int rt = tile_item - r.reduce_begin;
    if (rt * kRowsPerTile + tr >= r.drafts * H) continue;
    const int64_t row0 = static_cast<int64_t>(a.qo_indptr[b]) * H + static_cast<int64_t>(rt) * kRowsPerTile;
    const int64_t slot0 = static_cast<int64_t>(r.partial_begin) + static_cast<int64_t>(rt) * r.splits;
    auto split_lse = [&](int s) { return s < r.splits ? p.partial_lse[(slot0 + s) * kRowsPerTile + tr] : -INFINITY; };

    float mx = -INFINITY;
    bool nan = false;
    for (int s0 = 0; s0 < r.splits; s0 += 32) {
      const float v = split_lse(s0 + lane);
      nan |= isnan(v);
      mx = fmaxf(mx, v);  // fmaxf drops NaN, hence the explicit flag
    }
    for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    nan = __any_sync(0xffffffffu, nan);

    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    float wpart = 0.f;  // this lane's share of the weight sum
    if (mx != -INFINITY) {
      const float4* src = reinterpret_cast<const float4*>(p.partial_out + (slot0 * kRowsPerTile + tr) * kDv) +
                          quarter * 32 + lane;
      const int64_t split_stride = static_cast<int64_t>(kRowsPerTile) * kDv / 4;  // float4s between splits
      for (int s0 = 0; s0 < r.splits; s0 += 32) {
        const float ls = split_lse(s0 + lane);
#ifdef VATTN_PLANT_LOG2_MERGE
        const float w_mine = exp2f(ls - mx);  // Planted bug: weights in base 2 although lse is natural.
#else
        // An empty split holds o = 0, lse = -inf: weight 0, and its (finite) zeros add nothing.
        const float w_mine = ls == -INFINITY ? 0.f : expf(ls - mx);
#endif
        wpart += w_mine;
        const int n = min(32, r.splits - s0);
        for (int j0 = 0; j0 < n; j0 += kInFlight) {
          float4 v[kInFlight];
          float w[kInFlight];
#pragma unroll
          for (int u = 0; u < kInFlight; ++u) {  // all loads in flight before the first use
            w[u] = __shfl_sync(0xffffffffu, w_mine, (j0 + u) & 31);
            // A split of weight 0 (empty, or every key masked) is not read at all.
            v[u] = j0 + u < n && w[u] != 0.f ? src[(s0 + j0 + u) * split_stride] : make_float4(0.f, 0.f, 0.f, 0.f);
          }
#pragma unroll
          for (int u = 0; u < kInFlight; ++u) {
            if (j0 + u >= n) break;
            acc.x += w[u] * v[u].x;
            acc.y += w[u] * v[u].y;
            acc.z += w[u] * v[u].z;
            acc.w += w[u] * v[u].w;
          }
        }
      }
    }
    float wsum = wpart;
    for (int o = 16; o > 0; o >>= 1) wsum += __shfl_xor_sync(0xffffffffu, wsum, o);
    const float inv = wsum > 0.f ? 1.f / wsum : 0.f;
    float lse = mx == -INFINITY ? -INFINITY : mx + logf(wsum);
    if (nan) lse = NAN;
    const float f = nan ? NAN : inv;
    uint2* dst = reinterpret_cast<uint2*>(a.out + (row0 + tr) * kDv) + quarter * 32 + lane;
    *dst = make_uint2(pack_bf16x2(acc.x * f, acc.y * f), pack_bf16x2(acc.z * f, acc.w * f));
    if (quarter == 0 && lane == 0) a.lse[row0 + tr] = lse;
  }
}

}  // namespace vattn::VATTN_KERN_NS
