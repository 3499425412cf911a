// SPDX-License-Identifier: Apache-2.0
// Timing probe stamps (vattn_timeline.h): with -DVATTN_TIMELINE, thread 0 of a block writes
// %globaltimer and clock64 at the points vattn_timeline.h lists; otherwise every stamp is
// nothing, so shipped revisions compile exactly as without this header. The stamps sit
// outside the tile loop: split-v2's 255-register item spilled with an item counter, a
// per-item store of the tile count or the "tile 0 in" stamp inside the loop's first step,
// so the item slot is derived from the item index and the
// audit checks the probe build for spills too.
#pragma once

#include "split_params.h"  // VATTN_KERN_NS
#ifdef VATTN_TIMELINE
#include "vattn_timeline.h"
#endif

namespace vattn::VATTN_KERN_NS {

constexpr int kTlItemSlots = 5;  // VATTN_TL_ITEM_SLOTS
#ifdef VATTN_TIMELINE
static_assert(kTlItemSlots == VATTN_TL_ITEM_SLOTS && 2 + 2 * kTlItemSlots <= VATTN_TL_SLOTS, "vattn_timeline.h");
__device__ uint64_t g_tl_partial_ns[VATTN_TL_BLOCKS * VATTN_TL_SLOTS];
__device__ int64_t g_tl_partial_clock[VATTN_TL_BLOCKS * VATTN_TL_SLOTS];
__device__ uint64_t g_tl_reduce_ns[VATTN_TL_REDUCE_BLOCKS * VATTN_TL_REDUCE_SLOTS];
__device__ uint64_t g_tl_plan_ns[2];

__device__ __forceinline__ uint64_t tl_now() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
#endif

// Partial kernel: slot of vattn_timeline.h (0, 1, or 2 + 5 * item + point).
__device__ __forceinline__ void tl_partial(int slot) {
#ifdef VATTN_TIMELINE
  if (threadIdx.x == 0 && blockIdx.x < VATTN_TL_BLOCKS) {
    g_tl_partial_ns[blockIdx.x * VATTN_TL_SLOTS + slot] = tl_now();
    g_tl_partial_clock[blockIdx.x * VATTN_TL_SLOTS + slot] = clock64();
  }
#else
  (void)slot;
#endif
}

// Point p (0-4) of the item `item` of this block: slot set 0 for its first item, 1 for later ones.
__device__ __forceinline__ void tl_item(int item, int p) {
  tl_partial(2 + kTlItemSlots * (item != static_cast<int>(blockIdx.x)) + p);
}

__device__ __forceinline__ void tl_reduce(int slot) {
#ifdef VATTN_TIMELINE
  if (threadIdx.x == 0 && blockIdx.x < VATTN_TL_REDUCE_BLOCKS)
    g_tl_reduce_ns[blockIdx.x * VATTN_TL_REDUCE_SLOTS + slot] = tl_now();
#else
  (void)slot;
#endif
}

__device__ __forceinline__ void tl_plan() {
#ifdef VATTN_TIMELINE
  if (threadIdx.x == 0) g_tl_plan_ns[0] = tl_now();
#endif
}

// The plan kernel's last store (its header) issued; called by the thread that writes it.
__device__ __forceinline__ void tl_plan_written() {
#ifdef VATTN_TIMELINE
  g_tl_plan_ns[1] = tl_now();
#endif
}

}  // namespace vattn::VATTN_KERN_NS
