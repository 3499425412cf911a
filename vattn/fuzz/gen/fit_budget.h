// SPDX-License-Identifier: Apache-2.0
// Trimming a recipe whose shape came from outside the generators (a serving step, a captured
// case) back into a budget, so a GPU worker's plan and its oracle can afford it.
#pragma once

#include <cstdint>

#include "vattn/fuzz/gen/gen_recipe.h"

namespace vattn::fuzz {

// Keeps the shape where it can: a window of max_batch requests (its start taken from `bits`),
// heads, each T_b and each P_b capped; then the largest T_b halved while sum T, or the work of
// the drafts alone, is over (requests dropped from the end only when one draft each still is);
// then every prefix scaled by one factor until the pool rows (sum P) and the work fit. Forced
// splits are capped at max_splits. Afterwards check_within_budget(r, b) holds.
void fit_to_budget(Recipe& r, const GenBudget& b, uint64_t bits);

}  // namespace vattn::fuzz
