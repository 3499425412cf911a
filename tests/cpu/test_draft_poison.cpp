// SPDX-License-Identifier: Apache-2.0
// The partly-visible-poison judgement (vattn/check/draft_poison.h) on host data: the float64
// oracle of the poisoned case passes it; a leak into a row that cannot see the draft, a finite
// row that sees a NaN key, and a NaN lse over a finite output row each fail it, named.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "tests/cpu/hand_case.h"
#include "vattn/case/case.h"
#include "vattn/check/draft_poison.h"
#include "vattn/oracle/cpu_oracle.h"

namespace {

using vattn::Case;
using vattn::DraftPoison;

struct Outputs {
  std::vector<float> out, lse;
};

Outputs oracle_outputs(const Case& c) {
  const vattn::Reference r = vattn::oracle_fp64(c);
  return {std::vector<float>(r.out.begin(), r.out.end()), std::vector<float>(r.lse.begin(), r.lse.end())};
}

Case poisoned_copy(const Case& c, const DraftPoison& p) {
  Case m = c;
  std::copy(p.row.begin(), p.row.end(), m.kv_draft.begin() + p.kv_draft_row(c) * c.d_qk);
  return m;
}

// A chain of 5 drafts after 97 prefix keys and a small tree after 40: every draft but the last
// of a chain is seen by some rows and not by others.
Case two_requests() {
  return vattn::test::hand_case("poison", 2, 576, 512, {{97, {-1, 0, 1, 2, 3}}, {40, {-1, 0, 0}}}, 5, 3, 1.0f);
}

bool sees(const Case& c, const DraftPoison& p, int64_t flat_row) {
  const int64_t q = flat_row / c.num_heads, q0 = c.qo_indptr[static_cast<size_t>(p.request)];
  return q >= q0 && q < q0 + c.drafts(p.request) && c.visible(p.request, static_cast<int>(q - q0), p.draft);
}

}  // namespace

TEST_CASE("partly visible poison: a NaN in K", "[draft_poison]") {
  const Case c = two_requests();
  const DraftPoison p = vattn::partly_visible_draft_poison(c, 0);  // seed % 3 == 0: the whole row NaN
  REQUIRE(p.applies());
  REQUIRE(p.nan_in_k);
  const Outputs clean = oracle_outputs(c), good = oracle_outputs(poisoned_copy(c, p));
  const vattn::Reference scale = vattn::oracle_fp64(c);
  CHECK(vattn::poisoned_draft_problem(c, scale, p, clean.out, clean.lse, good.out, good.lse).empty());

  // The rows that see it left finite (the clean run's values): caught.
  const std::string finite = vattn::poisoned_draft_problem(c, scale, p, clean.out, clean.lse, clean.out, clean.lse);
  CHECK(finite.find("yet its output is finite") != std::string::npos);
  CHECK(finite.find(p.label()) == 0);

  // A NaN leaks into one column of a row that cannot see the draft: caught and located.
  int64_t unseeing = -1;
  for (int64_t r = 0; r < static_cast<int64_t>(clean.lse.size()) && unseeing < 0; ++r)
    if (!sees(c, p, r) && std::isfinite(clean.lse[static_cast<size_t>(r)])) unseeing = r;
  REQUIRE(unseeing >= 0);
  Outputs leak = good;
  leak.out[static_cast<size_t>(unseeing * c.d_v + 7)] = NAN;
  const std::string moved = vattn::poisoned_draft_problem(c, scale, p, clean.out, clean.lse, leak.out, leak.lse);
  CHECK(moved.find("cannot see it moved") != std::string::npos);
  // A wrong but finite value there too.
  Outputs off = good;
  off.out[static_cast<size_t>(unseeing * c.d_v + 7)] += 0.25f;
  CHECK_FALSE(vattn::poisoned_draft_problem(c, scale, p, clean.out, clean.lse, off.out, off.lse).empty());
}

TEST_CASE("partly visible poison: +-Inf in a shared K/V column", "[draft_poison]") {
  const Case c = two_requests();
  for (uint64_t seed : {1u, 4u, 7u, 10u}) {  // seed % 3 == 1: one column of the first d_v +-Inf
    INFO("seed " << seed);
    const DraftPoison p = vattn::partly_visible_draft_poison(c, seed);
    REQUIRE(p.applies());
    REQUIRE_FALSE(p.nan_in_k);
    const Outputs clean = oracle_outputs(c), good = oracle_outputs(poisoned_copy(c, p));
    const vattn::Reference scale = vattn::oracle_fp64(c);
    CHECK(vattn::poisoned_draft_problem(c, scale, p, clean.out, clean.lse, good.out, good.lse).empty());
    // A row that sees it with a NaN lse over a wholly finite output row: a plausible wrong value.
    Outputs plausible = good;
    int64_t seeing = -1;
    for (int64_t r = 0; r < static_cast<int64_t>(clean.lse.size()) && seeing < 0; ++r)
      if (sees(c, p, r)) seeing = r;
    REQUIRE(seeing >= 0);
    plausible.lse[static_cast<size_t>(seeing)] = NAN;
    std::fill_n(plausible.out.begin() + seeing * c.d_v, c.d_v, 0.0f);
    const std::string bad =
        vattn::poisoned_draft_problem(c, scale, p, clean.out, clean.lse, plausible.out, plausible.lse);
    CHECK(bad.find("NaN lse but a wholly finite output row") != std::string::npos);
  }
}

TEST_CASE("partly visible poison: a case without such a draft does not apply", "[draft_poison]") {
  // Single drafts only: each draft is seen by its own row, and there is no other row.
  const Case c = vattn::test::hand_case("single", 2, 576, 512, {{64, {-1}}, {10, {-1}}}, 3, 3, 1.0f);
  for (uint64_t seed = 0; seed < 6; ++seed) CHECK_FALSE(vattn::partly_visible_draft_poison(c, seed).applies());
}
