// SPDX-License-Identifier: Apache-2.0
// The shapes of captured traffic (`vattn fuzz --mix-from DIR`), as the case stream draws from them:
// a table of (H, P_b, T_b, chain or tree) with how often each was seen. The table is part of the
// stream's configuration (stored in the campaign, vattn/fuzz/campaign/mix_file.h), so (config,
// index) still names a case.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vattn/fuzz/gen/gen_recipe.h"

namespace vattn::fuzz {

struct MixShape {
  int heads = 8;
  std::vector<int> prefix;  // P_b
  std::vector<int> drafts;  // T_b
  bool tree = false;        // some request's mask is not a chain
  int64_t count = 1;        // captured cases of this shape
};

struct MixTable {
  std::vector<MixShape> shapes;
  int share_percent = 50;  // of the stream's cases drawn from the table
};

// What a table may hold (it is read back from a campaign folder: untrusted).
constexpr size_t kMaxMixShapes = 16384;
constexpr int64_t kMaxMixRequests = int64_t{1} << 22;  // sum of B over the shapes
constexpr int64_t kMaxMixCount = int64_t{1} << 40;     // sum of the counts

// Throws InputError(file, "", field, reason) naming the first field outside the recipe
// vocabulary's limits or the bounds above (e.g. "shapes[3].P[0]").
void check_mix_table(const MixTable& t, const std::string& file);

// One case shaped like a table entry (drawn in proportion to its count): its prefixes jittered
// (three cases in four, each P_b by up to 1/32 of itself, at least 2), a chain kept a chain and a
// tree made a DDTree-like (or random) tree, fresh values, layout and seed; then fitted into `fit`
// (fit_budget.h). Expects a table that check_mix_table accepts, with at least one shape.
Recipe mix_recipe(const MixTable& t, const GenBudget& fit, uint64_t seed);

}  // namespace vattn::fuzz
