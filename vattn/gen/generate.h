// SPDX-License-Identifier: Apache-2.0
// Case generators: a Recipe (case/recipe.h) -> a valid Case. The tensors follow from the recipe
// deterministically, so its line re-creates the case (`vattn replay --recipe "LINE"`).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vattn/case/case.h"
#include "vattn/recipe/recipe.h"

namespace vattn {

// Builds a valid case (validate() passes) with the given name; recipe line stored in Case::recipe.
// Before anything is allocated, a case whose recipe_memory_estimate is over case_memory_limit()
// (vattn/case/memory_limit.h, `--max-memory`) is refused: InputError naming the case, "needs N
// GiB to be generated and checked, more than the limit of M GiB (--max-memory)".
Case generate_case(const Recipe& r, const std::string& name = "case");

// What a generated case of `r` holds, in bytes: its tensors (the pool at the most rows its layout
// may give) and one output to compare (the oracle's that gen stores, the bf16 reference replay
// holds it to).
uint64_t recipe_case_bytes(const Recipe& r);
// What generating it and checking it takes: recipe_case_bytes and the oracles' working set.
uint64_t recipe_memory_estimate(const Recipe& r);

// Parent links of one request's draft tree of t nodes for a tree kind (parents precede children).
std::vector<int32_t> make_tree(const std::string& kind, int t, uint64_t seed);

}  // namespace vattn
