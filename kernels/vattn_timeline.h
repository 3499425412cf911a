/* SPDX-License-Identifier: Apache-2.0 */
/* The timing probe's read-out, a second C symbol that only a revision built with -DVATTN_TIMELINE
 * exports (revisions/libvattn_rev_v2_timeline.so; never a shipped revision). Its kernels stamp
 * %globaltimer (ns, comparable across SMs) and clock64 (this SM's cycles) at fixed points from
 * thread 0 of each block; vattn_timeline_probe (vattn/gpu/probe/) runs a call and reads them.
 *
 * Partial kernel, block k < VATTN_TL_BLOCKS, slot s of VATTN_TL_SLOTS:
 *   0 entry, 1 past pdl_wait (the planner has completed);
 *   then per item i (0: the block's first item; 1: its last later one, if any) at 2 + 5 i:
 *   +0 the item begins, +1 Q is in the registers, +2 tile 0 is in shared memory,
 *   +3 the tile loop has ended, +4 the partial (or the output) is stored.
 * Reduce kernel, block k < VATTN_TL_REDUCE_BLOCKS, slot 0 entry, 1 past pdl_wait, 2 done.
 * Plan kernel: slot 0 entry, 1 its last store (the header) issued.
 * A block that did not reach a point leaves 0 there. */
#ifndef VATTN_TIMELINE_H
#define VATTN_TIMELINE_H

#include <stdint.h>  // NOLINT(modernize-deprecated-headers): a C header, it must stay valid C

#ifdef __cplusplus
extern "C" {
#endif

#define VATTN_TL_BLOCKS 1024
#define VATTN_TL_SLOTS 12
#define VATTN_TL_ITEM_SLOTS 5
#define VATTN_TL_REDUCE_BLOCKS 2048
#define VATTN_TL_REDUCE_SLOTS 4

typedef struct vattn_timeline {
  uint64_t partial_ns[VATTN_TL_BLOCKS * VATTN_TL_SLOTS];
  int64_t partial_clock[VATTN_TL_BLOCKS * VATTN_TL_SLOTS];
  uint64_t reduce_ns[VATTN_TL_REDUCE_BLOCKS * VATTN_TL_REDUCE_SLOTS];
  uint64_t plan_ns[2];
} vattn_timeline;

/* Copies the stamps of the calls since the last read into *out and clears them on the device
 * (synchronous). Returns 0, or the cudaError_t that stopped it. */
typedef int (*vattn_timeline_read_fn)(vattn_timeline* out);
#define VATTN_TIMELINE_SYMBOL "vattn_timeline_read_v1"

#ifdef __cplusplus
}
#endif

#endif /* VATTN_TIMELINE_H */
