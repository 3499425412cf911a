// SPDX-License-Identifier: Apache-2.0
// Where a work item's keys come from, shared by both partial kernels: the draft mask, the
// drafts a row tile covers, and each key's source row (pool slot, draft row, or none: zeros).
#pragma once

#include "split_plan.cuh"

namespace vattn::VATTN_KERN_NS {

constexpr bool kGuardNonfiniteV = true;

// Word w of draft row i's mask: bit b says whether draft i sees draft 32w + b.
__device__ __forceinline__ uint32_t mask_word(const vattn_args& a, int64_t mask_base, int words_per_row, int i, int w) {
  return a.mask_bits[mask_base + static_cast<int64_t>(i) * words_per_row + w];
}

__device__ __forceinline__ bool mask_bit(const vattn_args& a, int64_t mask_base, int words_per_row, int i, int j) {
  return (mask_word(a, mask_base, words_per_row, i, j >> 5) >> (j & 31)) & 1u;
}

// Which of the 32 keys k0.. of a tile draft row i sees, as bits (bit x: key k0 + x), given the
// keys [k0, k0 + kin) the split has (kin >= 1) and the request's prefix: every prefix key, and
// each draft its mask row allows, read as at most two words. Keys past the split: 0.
__device__ __forceinline__ uint32_t tile_visibility(const vattn_args& a, int64_t mask_base, int words_per_row, int i,
                                                    int k0, int kin, int prefix) {
  uint32_t vis = kin >= 32 ? ~0u : (1u << kin) - 1u;
  if (k0 + 32 > prefix) {
    const int x0 = prefix > k0 ? prefix - k0 : 0;  // the tile's first draft key (< 32)
    const int j0 = k0 + x0 - prefix;               // its draft index
    const int w = j0 >> 5, sh = j0 & 31;
    uint32_t bits = mask_word(a, mask_base, words_per_row, i, w) >> sh;
    // Bits past the row's last word stay 0: those drafts are past the request, so past the split.
    if (sh != 0 && w + 1 < words_per_row) bits |= mask_word(a, mask_base, words_per_row, i, w + 1) << (32 - sh);
    vis &= ((1u << x0) - 1u) | (bits << x0);
  }
  return vis;
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
// seen(j): whether some row of the tile sees draft j.
template <class Seen>
__device__ __forceinline__ const uint16_t* resolve_key_by(const vattn_args& a, const RequestPlan& r, int qo_base, int k,
                                                          int kend, int32_t slot, bool& bad_index, Seen seen) {
  if (k >= kend) return nullptr;
  if (k < r.prefix) {
    if (slot < 0 || slot >= a.n_slots) {
      bad_index = true;
      return nullptr;
    }
    return a.kv_pool + static_cast<int64_t>(slot) * kDqk;
  }
  if (!seen(k - r.prefix)) return nullptr;
  return a.kv_draft + (static_cast<int64_t>(qo_base) + (k - r.prefix)) * kDqk;
}

// The same, each draft's visibility read from the mask rows of the tile one row at a time.
__device__ __forceinline__ const uint16_t* resolve_key(const vattn_args& a, const RequestPlan& r, int qo_base, int k,
                                                       int kend, int32_t slot, const TileDrafts& td, bool& bad_index) {
  return resolve_key_by(a, r, qo_base, k, kend, slot, bad_index, [&](int j) { return tile_sees_draft(a, td, j); });
}

}  // namespace vattn::VATTN_KERN_NS
