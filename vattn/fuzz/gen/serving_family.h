// SPDX-License-Identifier: Apache-2.0
// The serving-shaped family of the large mix: what a Kimi K2.6 server at TP8 asks of the kernel in
// one verify step, drawn so the shapes a server runs all night are not left to the generic
// generators' chance.
#pragma once

#include <cstdint>

#include "vattn/fuzz/gen/stream_pick.h"
#include "vattn/recipe/recipe.h"

namespace vattn::fuzz {

// One verify step, inside GenBudget::serving(): H = 8; B = 1 most often, then 2-8, up to 64; each
// T_b from {1, 16, 32, 64} (one T for the whole batch three times in four, else per request) as a
// chain, a DDTree-like tree or (rarely) a random tree; each P_b log-uniform in [512, 262144]. One
// case in five is the headline shape (is_headline_shape). A batch over the pool or work limit is
// trimmed, by one draw, either drafts first (T_b steps down the set) or prefixes only (all scaled
// by one factor): large batches get short prefixes or few drafts. Values, layouts and poison as
// a server's pool would hold them; the kernel chooses the splits in most cases.
Recipe serving_recipe(uint64_t seed);

// What a server's pool and call hold, for a shape drawn elsewhere (serving, captured): values
// (k26 most often), layout (scattered or sparse most often), poison, seed, and splits (the
// kernel's choice in most cases, else up to 4 more than the longest request's 32-key tiles).
void draw_server_run(Recipe& r, Pick& d, int max_splits);

// The README's headline shape: B = 1, H = 8, T = 64, P within 256 of 4096.
bool is_headline_shape(const Recipe& r);

}  // namespace vattn::fuzz
