// SPDX-License-Identifier: Apache-2.0
// Step 1 of 3: the device-side planner. One block reads the lengths (they live on the device,
// so a captured graph re-plans on every replay), validates them against the plan limits,
// picks each request's split count and lays out the work items.
#pragma once

#include "pdl.cuh"
#include "split_pack.h"
#include "split_params.h"
#include "timeline.cuh"

namespace vattn::VATTN_KERN_NS {

__device__ __forceinline__ int ceil_div(int a, int b) { return (a + b - 1) / b; }

// The planner is on the critical path of every call (the partial kernel waits for it). The
// block reads and checks the lengths, one request per thread; then one warp plans: lane l takes
// the requests [l * n, (l + 1) * n), n = ceil(B / 32), and the sums, the largest split count
// and the first items are warp reductions and scans. A loop over every request in one thread,
// which read its running maximum back from global memory each time, cost 2-5 us per call on
// the H200; block-wide CUB scans cost ~1.5 us more than that loop at B = 1.
// Its loops are not unrolled: one block runs this code once a call, cold in the instruction
// cache, and the unrolled form (1352 instructions on sm_90a, against 728) took about 500 SM
// cycles longer to the plan's last store; split-v2 became 0.3-0.4% faster over the verify
// shapes and 0.5-1.5% at B=8 T=16 P=4096.
__device__ __forceinline__ int warp_exclusive_sum(int v, int lane, int& total) {
  int incl = v;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const int y = __shfl_up_sync(0xffffffffu, incl, o);
    if (lane >= o) incl += y;
  }
  total = __shfl_sync(0xffffffffu, incl, 31);
  return incl - v;
}

__global__ void __launch_bounds__(kThreads) split_plan_kernel(const __grid_constant__ SplitParams p) {
  pdl_launch_dependents();  // the partial kernel's blocks may get ready; they wait for this grid
  tl_plan();                // timing probe builds only (timeline.cuh)
  __shared__ int32_t s_prefix[kMaxRequests];
  __shared__ int32_t s_drafts[kMaxRequests];
  __shared__ int32_t s_splits[kMaxRequests];
  __shared__ int32_t s_chunk[kMaxRequests];
  __shared__ uint32_t s_error;
  __shared__ int s_forced;
  const vattn_args& a = p.a;
  const int B = a.num_requests;
  if (threadIdx.x == 0) s_error = 0;
  __syncthreads();

  uint32_t err = 0;
#pragma unroll 1
  for (int b = threadIdx.x; b < B; b += blockDim.x) {
    const int q0 = a.qo_indptr[b], q1 = a.qo_indptr[b + 1];
    const int k0 = a.kv_indptr[b], k1 = a.kv_indptr[b + 1];
    const int64_t m0 = a.mask_word_indptr[b], m1 = a.mask_word_indptr[b + 1];
    const int t = q1 - q0;
    if ((b == 0 && (q0 != 0 || k0 != 0 || m0 != 0)) || t < 1 || k1 < k0) err |= VATTN_DEVERR_INDPTR;
    if (t > p.max_drafts_per_request || q1 > a.n_q || k1 - k0 > kMaxPrefix) err |= VATTN_DEVERR_LIMITS;
    const int64_t words = static_cast<int64_t>(t) * ((t + 31) / 32);
    if (t >= 1 && m1 - m0 != words) err |= VATTN_DEVERR_MASK;
    s_prefix[b] = k1 - k0;
    s_drafts[b] = t;
  }
  if (threadIdx.x == 0) {
    const int f = a.forced_splits != nullptr ? *a.forced_splits : 0;
    if (f < 0 || f > p.max_splits) err |= VATTN_DEVERR_SPLITS;
    s_forced = f;
  }
  if (err) atomicOr(&s_error, err);
  __syncthreads();

  if (threadIdx.x >= 32) return;
  const int lane = threadIdx.x;
  WorkspaceHeader* h = p.header;
  if (s_error != 0) {  // nothing is trusted: no work; the reduce step writes NaN everywhere
    if (lane == 0) {
      h->error = s_error;
      h->num_requests = B;
      h->splits_used = 0;
      h->total_work = 0;
      h->total_reduce = 0;
      tl_plan_written();
    }
    return;
  }
  const int forced = s_forced;
  const int H = a.num_heads;
  const int per_lane = (B + 31) / 32;
  const int bl0 = lane * per_lane, bl1 = min(B, bl0 + per_lane);  // this lane's requests

  // Balance: each request gets splits in proportion to its keys so that all work items
  // together fill the GPU once (rounded down: a second, mostly idle wave costs a whole pass).
  long long key_work = 0;
#pragma unroll 1
  for (int b = bl0; b < bl1; ++b)
    key_work += static_cast<long long>(ceil_div(s_drafts[b] * H, kRowsPerTile)) * (s_prefix[b] + s_drafts[b]);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) key_work += __shfl_xor_sync(0xffffffffu, key_work, o);

  // Pass 1: each request's split count and chunk, and this lane's totals; pass 2 writes the
  // plans with the scanned first items.
  int work = 0, partial = 0, reduce = 0, max_s = 0;
  int rotate0 = 0;  // request 0's item rotation (split_pack.h; lane 0 plans request 0 in both passes)
  // A request's work items, partial slots and reduce items; a single split writes the output
  // directly: no partial, no reduce.
  auto count = [&](int row_tiles, int s) {
    work += row_tiles * s;
    if (s > 1) {
      partial += row_tiles * s;
      reduce += row_tiles;
    }
  };
#pragma unroll 1
  for (int b = bl0; b < bl1; ++b) {
    const int drafts = s_drafts[b], keys = s_prefix[b] + drafts;
    const int row_tiles = ceil_div(drafts * H, kRowsPerTile);
    int s, chunk;
    if (forced != 0) {
      s = forced < p.max_splits ? forced : p.max_splits;
      // Forced counts may exceed the tiles: the trailing splits are empty, on purpose.
      chunk = ceil_div(ceil_div(keys, s), kKeysPerTile) * kKeysPerTile;
    } else {
      // Whole tiles per split: as few as this request's share of the wave allows, never fewer
      // than kMinTilesPerSplit (shorter splits cost more than they give). The count is then
      // recomputed from the rounded chunk, so no automatic split is left empty: 129 tiles on a
      // share of 33 give 33 splits of 4 tiles (sizing by keys first gave 26 of 5).
      const int tiles = ceil_div(keys, kKeysPerTile);
      long long share = static_cast<long long>(p.target_items) * keys / (key_work > 0 ? key_work : 1);
      if (share > p.max_splits) share = p.max_splits;
      if (share < 1) share = 1;
      int per_split = ceil_div(tiles, static_cast<int>(share));
      if (per_split < kMinTilesPerSplit) per_split = kMinTilesPerSplit;
      // One request: a finer cut whose short last splits run two to a block on the blocks the
      // full ones leave (split_pack.h).
      if constexpr (Traits::kPackLoneRequest) {
        if (B == 1) {
          const split_pack::Choice c =
              split_pack::choose(tiles, row_tiles, p.grid_partial, ceil_div(tiles, per_split), per_split, p.max_splits);
          per_split = c.per_split;
          rotate0 = c.rotate;
        }
      }
      s = ceil_div(tiles, per_split);
      if (s < 1) s = 1;  // keys == 0 cannot happen (T_b >= 1), kept for safety
      chunk = per_split * kKeysPerTile;
    }
    s_splits[b] = s;
    s_chunk[b] = chunk;
    max_s = max(max_s, s);
    count(row_tiles, s);
  }
  // First items, partial slots and reduce items: exclusive scans in request order, so the
  // begins stay non-decreasing and items can be found by bisection.
  int total_work, total_partial, total_reduce;
  work = warp_exclusive_sum(work, lane, total_work);
  partial = warp_exclusive_sum(partial, lane, total_partial);
  reduce = warp_exclusive_sum(reduce, lane, total_reduce);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) max_s = max(max_s, __shfl_xor_sync(0xffffffffu, max_s, o));
#pragma unroll 1
  for (int b = bl0; b < bl1; ++b) {
    RequestPlan r;
    r.prefix = s_prefix[b];
    r.drafts = s_drafts[b];
    r.row_tiles = ceil_div(r.drafts * H, kRowsPerTile);
    r.splits = s_splits[b];
    r.chunk = s_chunk[b];
    r.work_begin = work;
    r.partial_begin = partial;
    r.reduce_begin = reduce;
    r.rotate = b == 0 ? rotate0 : 0;
    count(r.row_tiles, r.splits);
    p.requests[b] = r;
  }
  if (lane == 0) {
    h->error = 0;
    h->num_requests = B;
    h->splits_used = static_cast<uint32_t>(max_s);
    h->total_work = total_work;
    h->total_reduce = total_reduce;
    tl_plan_written();
  }
  (void)total_partial;
}

// Finds the request owning item `idx` given each request's first item (non-decreasing).
template <class Begin>
__device__ __forceinline__ int find_request(int B, int idx, Begin begin_of) {
  int lo = 0, hi = B - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (begin_of(mid) <= idx)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

}  // namespace vattn::VATTN_KERN_NS
