// SPDX-License-Identifier: Apache-2.0
// The plan a caller would make for a stream case (Recipe::limits, sms, sm_blocks), drawn per case,
// so the planner's choices under a serving engine's limits and on other GPUs are fuzzed, not only
// the plan a worker makes once per head count at the stream's envelope.
#pragma once

#include <cstdint>

#include "vattn/fuzz/gen/gen_recipe.h"

namespace vattn::fuzz {

// Recipe::limits for `r` (after its splits are drawn): a fifth unset (the worker's own limits);
// over half exact-tight (B, sum T, largest T_b); the rest with headroom, as an engine sizes for its
// largest batch and draft budget (each of R, T, Q at the case's value or above, up to
// `envelope`; Q sometimes R x T). max_splits: 1, 2-8, 9-256 (log-uniform) or the envelope's
// own, never below forced splits, and lowered (headroom dropped first) so the plan's partials
// workspace stays within what the envelope's plan for the same head count needs.
void draw_plan_limits(Recipe& r, const GenBudget& envelope, uint64_t seed);

// Recipe::sms and sm_blocks: about a third of the cases plan as another GPU would. 188 SMs with
// one block per SM (the RTX PRO 6000) and 132 (H100, H200) most often; then 1-3, 511, 512 and
// log-uniform 1-512; sm_blocks 1-4 on some of those, never on 188 (always 1 there).
void draw_plan_gpu(Recipe& r, uint64_t seed);

// Rows of fp32 partials a split revision keeps per split (every query row, and each request's
// last 64-row tile partly empty): a plan's workspace grows as this times max_splits.
int64_t partial_rows(int64_t total_drafts, int64_t heads, int64_t requests);

}  // namespace vattn::fuzz
