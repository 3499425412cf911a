// SPDX-License-Identifier: Apache-2.0
// What both partial kernels share about a work item: which request, split and row tile it is,
// where its keys come from (the draft mask, the drafts a row tile covers, each key's source row:
// pool slot, draft row, or none: zeros), and the check of a tile's V for NaN/Inf.
#pragma once

#include "split_plan.cuh"

namespace vattn::VATTN_KERN_NS {

#ifdef VATTN_PLANT_NO_NONFINITE_GUARD
constexpr bool kGuardNonfiniteV = false;  // Planted bug: a masked row meets 0 * NaN/Inf of V in the mma.
#else
constexpr bool kGuardNonfiniteV = true;
#endif

__device__ __forceinline__ bool mask_bit(const vattn_args& a, int64_t mask_base, int words_per_row, int i, int j) {
#ifdef VATTN_PLANT_MASK_OVERREAD
  // Planted bug: reads the mask of the next draft row (one row past the right one).
  i += 1;
#endif
  const uint32_t w = a.mask_bits[mask_base + static_cast<int64_t>(i) * words_per_row + (j >> 5)];
  return (w >> (j & 31)) & 1u;
}

// Rows of a work item's tile, as draft indices: [first, last]. A draft key no row of the tile
// may see is never loaded (zeros), so whatever its KV holds (a padded node's NaN, say) can
// neither reach P.V nor change which path the tile takes.
struct TileDrafts {
  int first, last;
  int64_t mask_base;
  int words_per_row;
};

__device__ __forceinline__ bool tile_sees_draft(const vattn_args& a, const TileDrafts& td, int j) {
  for (int i = td.first; i <= td.last; ++i)
    if (mask_bit(a, td.mask_base, td.words_per_row, i, j)) return true;
  return false;
}

// The pool slot of request-relative key k, loaded without acting on it: the load stays in
// flight while the block computes, and resolve_key() consumes it a tile later.
__device__ __forceinline__ int32_t prefetch_slot(const vattn_args& a, const RequestPlan& r, int kv_base, int k,
                                                 int kend) {
  return (k < kend && k < r.prefix) ? __ldg(a.kv_indices + kv_base + k) : -1;
}

// Source row of request-relative key k of a split ending at kend; null = not read (zeros).
__device__ __forceinline__ const uint16_t* resolve_key(const vattn_args& a, const RequestPlan& r, int qo_base, int k,
                                                       int kend, int32_t slot, const TileDrafts& td, bool& bad_index) {
#ifdef VATTN_PLANT_DROP_LAST_KEY
  // Planted bug: the last key of every split is never loaded.
  if (k == kend - 1) return nullptr;
#endif
  if (k >= kend) return nullptr;
  if (k < r.prefix) {
    if (slot < 0 || slot >= a.n_slots) {
      bad_index = true;
      return nullptr;
    }
    return a.kv_pool + static_cast<int64_t>(slot) * kDqk;
  }
  if (!tile_sees_draft(a, td, k - r.prefix)) return nullptr;
  return a.kv_draft + (static_cast<int64_t>(qo_base) + (k - r.prefix)) * kDqk;
}

// One work item of the plan, decoded: its request b (plan entry r), KV split and row tile, the
// keys [kbeg, kend) it covers in ntiles tiles, and where the request's rows, keys and mask start.
struct WorkItem {
  RequestPlan r;
  int b, split, rt, kbeg, kend, ntiles, qo_base, kv_base, rows_b, words_per_row;
  int64_t row0, mask_base;
};

__device__ __forceinline__ WorkItem work_item(const SplitParams& p, int item) {
  const vattn_args& a = p.a;
  WorkItem w;
  w.b = find_request(a.num_requests, item, [&](int i) { return p.requests[i].work_begin; });
  w.r = p.requests[w.b];
  const RequestPlan& r = w.r;
#ifdef VATTN_PLANT_CRASH
  // Planted fault: every block handling a request of exactly 17 drafts stores through a wild
  // pointer (device address 0x10, never mapped): cudaErrorIllegalAddress, the context is lost.
  if (r.drafts == 17) *reinterpret_cast<volatile float*>(static_cast<uintptr_t>(0x10)) = 0.f;
#endif
#ifdef VATTN_PLANT_HANG
  // Planted fault: every block handling a request with a prefix of exactly 77 keys waits for
  // its plan entry to change, which nothing does while this kernel runs (volatile: the word is
  // re-read each time, so the loop stays): the kernel never ends.
  if (r.prefix == 77) {
    const volatile int32_t* prefix_word = &p.requests[w.b].prefix;
    while (*prefix_word == 77) __nanosleep(1000);
  }
#endif
  const int local = item - r.work_begin;
  w.split = local / r.row_tiles;
  w.rt = local % r.row_tiles;
  const int keys = r.prefix + r.drafts;
  w.kbeg = w.split * r.chunk;
  w.kend = min(keys, w.kbeg + r.chunk);
  w.ntiles = w.kend > w.kbeg ? (w.kend - w.kbeg + kKeysPerTile - 1) / kKeysPerTile : 0;
  w.qo_base = a.qo_indptr[w.b];
  w.kv_base = a.kv_indptr[w.b];
  w.rows_b = r.drafts * a.num_heads;
  w.row0 = static_cast<int64_t>(w.qo_base) * a.num_heads + static_cast<int64_t>(w.rt) * kRowsPerTile;
  w.mask_base = a.mask_word_indptr[w.b];
  w.words_per_row = (r.drafts + 31) >> 5;
  return w;
}

// The drafts the rows of work item w cover.
__device__ __forceinline__ TileDrafts tile_drafts(const WorkItem& w, int heads) {
  return TileDrafts{w.rt * kRowsPerTile / heads, (min(w.rows_b, (w.rt + 1) * kRowsPerTile) - 1) / heads, w.mask_base,
                    w.words_per_row};
}

// V may hold NaN/Inf only in draft rows some row of the tile sees (prefix rows are visible to
// every row; keys past the split and drafts no row sees are zero-filled). A draft seen by row i
// but masked for row i' must not reach i' as 0 * NaN in P.V, so the partial kernels check the V
// columns of a tile with drafts and take an explicit path when any is not finite. This thread's
// share: 16-byte chunks first, first + stride, ... of the tile's V columns.
__device__ __forceinline__ bool v_chunks_nonfinite(const uint16_t* kv, int first, int stride) {
  bool bad = false;
  for (int c = first; c < kKeysPerTile * (kDv / 8); c += stride) {
    const int row = c / (kDv / 8), ch = c % (kDv / 8);
    const uint4 v = *reinterpret_cast<const uint4*>(kv + row * kSmemStride + ch * 8);
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int x = 0; x < 4; ++x) bad |= ((w[x] & 0x7f80u) == 0x7f80u) || ((w[x] & 0x7f800000u) == 0x7f800000u);
  }
  return bad;
}

}  // namespace vattn::VATTN_KERN_NS
