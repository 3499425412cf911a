// SPDX-License-Identifier: Apache-2.0
// The cases a graph check loads into a slot: one short case to capture with, and a
// deterministic sequence of replay cases that roam the slot's whole shape (prefixes from 0 to
// the largest the slot holds, draft counts 1..limit, every tree kind and pool layout, new
// values, forced split counts 0 = auto and 1..max). Each is a Recipe, so a failing replay
// prints the line that re-creates it.
#pragma once

#include <cstdint>

#include "vattn/gen/generate.h"
#include "vattn/gpu/graph_slot.h"

namespace vattn {

// Short sequences (P <= 17, T <= 3): whatever a revision freezes at capture is small.
Recipe capture_recipe(const SlotShape& shape, uint64_t seed);

// Replay `index` of the sequence for `seed`; recipe.splits is the forced split count to write
// to the device before the replay. Index 0 has every prefix at the slot's largest and lets
// the kernel choose its splits; index 1 has every prefix empty.
Recipe replay_recipe(const SlotShape& shape, uint64_t seed, int index);

// A valid case with every prefix >= 3 and small draft counts, for the over-the-limit checks.
Recipe limits_base_recipe(const SlotShape& shape, uint64_t seed);

}  // namespace vattn
