// Step 3 of 3: merge the split partials of each row by their LSE weights. Also the place
// where a run the planner refused is made loud: every output row becomes NaN.
#pragma once

#include <cmath>

#include "mma_sm80.cuh"
#include "split_plan.cuh"

namespace vattn::kern {

constexpr uint32_t kDevErrFatal = VATTN_DEVERR_INDPTR | VATTN_DEVERR_LIMITS | VATTN_DEVERR_SPLITS | VATTN_DEVERR_MASK;

__global__ void __launch_bounds__(kThreads) split_reduce_kernel(const __grid_constant__ SplitParams p) {
  const vattn_args& a = p.a;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (p.header->error & kDevErrFatal) {
    const int64_t rows = a.n_q * a.num_heads;
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < rows * kDv; i += stride)
      a.out[i] = 0x7fc0;  // bf16 quiet NaN
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < rows; i += stride)
      a.lse[i] = NAN;
    return;
  }
  // One warp per output row: 8 rows per block, 4 blocks per row tile. The split loop is a
  // chain of L2 round trips, so lanes first read all splits' LSEs at once, then the partial
  // rows stream in with several splits in flight.
  const int total = p.header->total_reduce * (kRowsPerTile / 8);
  const int H = a.num_heads;
  for (int item = blockIdx.x; item < total; item += gridDim.x) {
    const int tile_item = item / (kRowsPerTile / 8);
    const int b = find_request(a.num_requests, tile_item, [&](int i) { return p.requests[i].reduce_begin; });
    const RequestPlan r = p.requests[b];
    const int rt = tile_item - r.reduce_begin;
    const int tr = (item % (kRowsPerTile / 8)) * 8 + warp;  // row within the tile
    if (rt * kRowsPerTile + tr >= r.drafts * H) continue;
    const int64_t row0 = static_cast<int64_t>(a.qo_indptr[b]) * H + static_cast<int64_t>(rt) * kRowsPerTile;
    const int64_t slot0 = static_cast<int64_t>(r.partial_begin) + static_cast<int64_t>(rt) * r.splits;

    float mx = -INFINITY;
    bool nan = false;
    for (int s = lane; s < r.splits; s += 32) {
      const float v = p.partial_lse[(slot0 + s) * kRowsPerTile + tr];
      nan |= isnan(v);
      mx = fmaxf(mx, v);  // fmaxf drops NaN, hence the explicit flag
    }
    for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    nan = __any_sync(0xffffffffu, nan);

    float acc[16];
#pragma unroll
    for (int j = 0; j < 16; ++j) acc[j] = 0.f;
    float wsum = 0.f;
    if (mx != -INFINITY) {
#pragma unroll 4
      for (int s = 0; s < r.splits; ++s) {
        const float ls = p.partial_lse[(slot0 + s) * kRowsPerTile + tr];
#ifdef VATTN_PLANT_LOG2_MERGE
        const float w = exp2f(ls - mx);  // Planted bug: weights in base 2 although lse is natural.
#else
        const float w = ls == -INFINITY ? 0.f : expf(ls - mx);
#endif
        // An empty split holds o = 0, lse = -inf: weight 0, and its (finite) zeros add nothing.
        wsum += w;
        const float4* src = reinterpret_cast<const float4*>(p.partial_out + ((slot0 + s) * kRowsPerTile + tr) * kDv);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const float4 v = src[j * 32 + lane];
          acc[4 * j] += w * v.x;
          acc[4 * j + 1] += w * v.y;
          acc[4 * j + 2] += w * v.z;
          acc[4 * j + 3] += w * v.w;
        }
      }
    }
    const float inv = wsum > 0.f ? 1.f / wsum : 0.f;
    float lse = mx == -INFINITY ? -INFINITY : mx + logf(wsum);
    if (nan) lse = NAN;
    uint2* dst = reinterpret_cast<uint2*>(a.out + (row0 + tr) * kDv);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const float f = nan ? NAN : inv;
      dst[j * 32 + lane] = make_uint2(pack_bf16x2(acc[4 * j] * f, acc[4 * j + 1] * f),
                                      pack_bf16x2(acc[4 * j + 2] * f, acc[4 * j + 3] * f));
    }
    if (lane == 0) a.lse[row0 + tr] = lse;
  }
}

}  // namespace vattn::kern
