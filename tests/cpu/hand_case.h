// SPDX-License-Identifier: Apache-2.0
// Cases built by hand for the oracle and tolerance tests (which must not lean on the
// generators they help to check): prefix rows scattered over a pool that also holds rows
// nobody references; values uniform in [-range, range], rounded to bf16.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vattn/case/case.h"

namespace vattn::test {

struct HandRequest {
  int prefix;
  std::vector<int32_t> parent;  // per draft: -1 root, else parent index, or kPaddedNode
};

std::vector<int32_t> chain_parents(int t);

Case hand_case(const std::string& name, int H, int dqk, int dv, const std::vector<HandRequest>& reqs, uint64_t seed,
               int spare_rows, float range);

}  // namespace vattn::test
