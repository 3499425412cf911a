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
Case generate_case(const Recipe& r, const std::string& name = "case");

// Parent links of one request's draft tree of t nodes for a tree kind (parents precede children).
std::vector<int32_t> make_tree(const std::string& kind, int t, uint64_t seed);

}  // namespace vattn
