// SPDX-License-Identifier: Apache-2.0
// The partly-visible-poison property (docs/properties.md): NaN/Inf in the KV row of one draft
// that some rows of its request see and others do not. The rows that cannot see it share its
// K/V tile, where a masked probability of 0 times NaN/Inf in P.V must not reach them. Used by
// the RapidCheck property (tests/gpu) and by the fuzzer's GPU target on every case that has such
// a draft; the kernel runs happen there, the choice and the judgement here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vattn/case/case.h"
#include "vattn/oracle/cpu_oracle.h"

namespace vattn {

struct DraftPoison {
  int request = -1, draft = -1;  // -1: the case has no partly visible draft
  // With nan_in_k the row holds a NaN in K, so every row that sees the draft must come out
  // non-finite. Otherwise one of the first d_v columns (V, and the same columns of K) is +-Inf:
  // the scores of the rows that see it are then +-Inf or NaN, and only their consistency is
  // required (a NaN lse with a wholly finite output row is a plausible wrong value).
  bool nan_in_k = false;
  std::vector<uint16_t> row;  // the poisoned KV row (d_qk values) for kv_draft[qo_indptr[request] + draft]
  bool applies() const { return request >= 0; }
  int64_t kv_draft_row(const Case& c) const { return c.qo_indptr[static_cast<size_t>(request)] + draft; }
  std::string label() const;  // "request 1 draft 3 poisoned (a NaN in its row)"
};

// The draft (chosen by `seed` among the partly visible ones) and its poisoned row.
DraftPoison partly_visible_draft_poison(const Case& c, uint64_t seed);

// "" when the property holds: every row that cannot see the poisoned draft agrees with the clean
// run within twice the tolerance model's bound (non-finite positions identical; `scale` gives the
// bound's scales: the oracle of the clean case), every row that sees it obeys the rules above.
// Else the first violation, located.
std::string poisoned_draft_problem(const Case& c, const Reference& scale, const DraftPoison& p,
                                   const std::vector<float>& clean_out, const std::vector<float>& clean_lse,
                                   const std::vector<float>& out, const std::vector<float>& lse);

// "" when x and y agree within twice the tolerance model's bound around y, with `scale` giving
// the bound's scales (two kernel runs: no bf16-emulating yardstick, no ratio check).
std::string runs_disagreement(const Case& c, const Reference& scale, const std::vector<float>& x_out,
                              const std::vector<float>& x_lse, const std::vector<float>& y_out,
                              const std::vector<float>& y_lse);

}  // namespace vattn
