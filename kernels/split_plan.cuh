// SPDX-License-Identifier: Apache-2.0
// Step 1 of 3: the device-side planner. One block reads the lengths (they live on the device,
// so a captured graph re-plans on every replay), validates them against the plan limits,
// picks each request's split count and lays out the work items.
#pragma once

#include "pdl.cuh"
#include "split_params.h"

namespace vattn::VATTN_KERN_NS {

__device__ __forceinline__ int ceil_div(int a, int b) { return (a + b - 1) / b; }

__global__ void __launch_bounds__(kThreads) split_plan_kernel(const __grid_constant__ SplitParams p) {
  pdl_launch_dependents();  // the partial kernel's blocks may get ready; they wait for this grid
  __shared__ int32_t s_prefix[kMaxRequests];
  __shared__ int32_t s_drafts[kMaxRequests];
  __shared__ uint32_t s_error;
  const vattn_args& a = p.a;
  const int B = a.num_requests;
  if (threadIdx.x == 0) s_error = 0;
  __syncthreads();

  uint32_t err = 0;
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
  if (threadIdx.x == 0 && a.forced_splits != nullptr) {
    const int f = *a.forced_splits;
    if (f < 0 || f > p.max_splits) err |= VATTN_DEVERR_SPLITS;
  }
  if (err) atomicOr(&s_error, err);
  __syncthreads();

  if (threadIdx.x != 0) return;
  WorkspaceHeader* h = p.header;
  h->error = s_error;
  h->num_requests = B;
  h->splits_used = 0;
  if (s_error != 0) {  // nothing is trusted: no work; the reduce step writes NaN everywhere
    h->total_work = 0;
    h->total_reduce = 0;
    return;
  }
#ifdef VATTN_PLANT_IGNORE_FORCED_SPLITS
  const int forced = 0;  // Planted bug: the forced split count is read but never used.
#else
  const int forced = a.forced_splits != nullptr ? *a.forced_splits : 0;
#endif
  const int H = a.num_heads;

  // Balance: each request gets splits in proportion to its keys so that all work items
  // together fill the GPU once (rounded down: a second, mostly idle wave costs a whole pass).
  int64_t key_work = 0;
  for (int b = 0; b < B; ++b) key_work += static_cast<int64_t>(ceil_div(s_drafts[b] * H, kRowsPerTile)) *
                                          (s_prefix[b] + s_drafts[b]);

  int work = 0, partial = 0, reduce = 0;
  for (int b = 0; b < B; ++b) {
    RequestPlan r;
    r.prefix = s_prefix[b];
    r.drafts = s_drafts[b];
    r.row_tiles = ceil_div(r.drafts * H, kRowsPerTile);
    const int keys = r.prefix + r.drafts;
    int s;
    if (forced != 0) {
      s = forced < p.max_splits ? forced : p.max_splits;
      // Forced counts may exceed the tiles: the trailing splits are empty, on purpose.
      r.chunk = ceil_div(ceil_div(keys, s), kKeysPerTile) * kKeysPerTile;
    } else {
      // Whole tiles per split: as few as this request's share of the wave allows, never fewer
      // than kMinTilesPerSplit (shorter splits cost more than they give). The count is then
      // recomputed from the rounded chunk, so no automatic split is left empty: 129 tiles on a
      // share of 33 give 33 splits of 4 tiles (sizing by keys first gave 26 of 5).
      const int tiles = ceil_div(keys, kKeysPerTile);
      int64_t share = static_cast<int64_t>(p.target_items) * keys / (key_work > 0 ? key_work : 1);
      if (share > p.max_splits) share = p.max_splits;
      if (share < 1) share = 1;
      int per_split = ceil_div(tiles, static_cast<int>(share));
      if (per_split < kMinTilesPerSplit) per_split = kMinTilesPerSplit;
      s = ceil_div(tiles, per_split);
      if (s < 1) s = 1;  // keys == 0 cannot happen (T_b >= 1), kept for safety
      r.chunk = per_split * kKeysPerTile;
    }
    r.splits = s;
    if (static_cast<uint32_t>(s) > h->splits_used) h->splits_used = static_cast<uint32_t>(s);
    r.work_begin = work;
    r.partial_begin = partial;  // begins stay non-decreasing so items can be found by bisection
    r.reduce_begin = reduce;
    work += r.row_tiles * s;
    if (s > 1) {  // a single split writes the output directly: no partial, no reduce
      partial += r.row_tiles * s;
      reduce += r.row_tiles;
    }
    p.requests[b] = r;
  }
  h->total_work = work;
  h->total_reduce = reduce;
}

// Finds the request owning item `idx` given each request's first item (non-decreasing).
template <class Begin>
__device__ __forceinline__ int find_request(int B, int idx, Begin begin_of) {
  int lo = 0, hi = B - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (begin_of(mid) <= idx) lo = mid; else hi = mid - 1;
  }
  return lo;
}

}  // namespace vattn::VATTN_KERN_NS
