// SPDX-License-Identifier: Apache-2.0
// What vattn_timeline_probe makes of the stamps of kernels/vattn_timeline.h: host code only
// (no CUDA), so CI tests it on made-up stamps. Phases of an item are timed with the block's
// own clock64, converted to us with that block's clock rate over the call (cycles between its
// entry and its last stamp over the %globaltimer ns between them): %globaltimer ticks are too
// coarse for a phase of a few us (0.26 us on the H200). Milestones across blocks (when the last
// partial block got past its wait, and so on) come from %globaltimer, relative to the plan
// kernel's entry.
#pragma once

#include <string>
#include <vector>

#include "kernels/vattn_timeline.h"

namespace vattn {

struct TimelineStats {
  int samples = 0;
  double median = 0, min = 0, max = 0;
};

// One item phase (vattn_timeline.h's points p -> p + 1, or "begins" from the plan's entry).
struct TimelinePhase {
  std::string name;
  TimelineStats first;  // each block's first item
  TimelineStats later;  // a block's last later item, where it had one
};

struct TimelineSummary {
  int blocks_with_items = 0, blocks_with_later_items = 0;
  double clock_ghz = 0;  // median over blocks of the SM clock during the call
  // us from the plan kernel's entry, the largest over blocks (one call), or the median over
  // calls.
  double partial_past_wait = 0, partial_done = 0, reduce_past_wait = 0, reduce_done = 0;
  // The plan kernel's last store issued (its header), median over the calls that stamp it
  // (plan_written_calls of them; none in a probe built before that stamp existed). Its distance
  // to partial_past_wait is what the dependent launch's release costs after the plan is written.
  double plan_written = 0;
  int plan_written_calls = 0;
  // Reduce blocks, pooled over blocks and calls (%globaltimer, so 0.26 us ticks on the H200):
  // when each began (us after the plan kernel's entry; a block begins once its SM is free of
  // partial blocks) and how long it ran past its wait.
  TimelineStats reduce_entry, reduce_after_wait;
  std::vector<TimelinePhase> phases;
};

// The summary of one or more calls of the same case (the phases pool their samples over
// blocks and calls; each milestone is its median over calls). `partial_blocks` is the partial
// kernel's grid: later blocks are not read. Throws std::runtime_error, naming the call, block
// and point, when stamps cannot be of one call: no plan stamp, a block past its wait without an
// entry stamp, a missing point inside an item, a point earlier than the one before it.
TimelineSummary summarize_timeline(const std::vector<vattn_timeline>& calls, int partial_blocks);

std::string timeline_table(const TimelineSummary& s);

}  // namespace vattn
