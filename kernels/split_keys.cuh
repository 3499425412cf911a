// SPDX-License-Identifier: Apache-2.0
// Where a work item's keys come from, shared by both partial kernels: the draft mask, the
// drafts a row tile covers, and each key's source row (pool slot, draft row, or none: zeros).
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

}  // namespace vattn::VATTN_KERN_NS
