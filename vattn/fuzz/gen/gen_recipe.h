// SPDX-License-Identifier: Apache-2.0
// Shrinkable RapidCheck generators over case recipes (vattn/recipe/recipe.h).
// A property draws a Recipe, builds the Case with generate_case, and on failure RapidCheck
// shrinks the Recipe toward the simplest one that still fails: one request, one head, short
// prefix, one draft, chain tree, contiguous pool, uniform values, no poison, auto splits.
// Sizes come from a GenBudget so the CPU suite (small) and the GPU suite (large) share the
// same generators; nothing here depends on the device or on a test framework.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include <rapidcheck.h>

#include "vattn/gen/generate.h"

namespace vattn {

// Upper limits for one generated case. "work" is sum_b T_b * H * (P_b + T_b): the number
// of (query row, head, key) triples, which is what an oracle pays for.
struct GenBudget {
  std::string name = "small";
  int max_batch = 4;
  int max_heads = 8;
  int max_prefix = 300;
  int max_drafts = 65;
  int64_t max_total_kv = 600;     // sum_b P_b (referenced prefix rows)
  int64_t max_total_drafts = 96;  // sum_b T_b (query rows)
  int64_t max_work = 40000;
  int max_splits = 24;  // forced split counts are drawn in [0, max_splits]

  static GenBudget small();   // CPU default: every property in well under a minute on 2 cores
  static GenBudget medium();  // longer CPU runs: reaches 4099 and DDTree-sized drafts
  static GenBudget large();   // GPU: prefixes up to 262144, drafts up to 1025, 128 heads
  // The long-context share of `vattn fuzz --budget large`: prefixes up to 262144 with work held
  // to what the naive GPU oracle checks in tens of milliseconds (vattn/fuzz/gen/case_stream.h).
  static GenBudget long_context();
  // The serving-shaped share of the same mix: K2.6 verify steps at TP8 (H = 8, B <= 64,
  // T_b <= 64, sum T <= 1024), the pool of one full-length request (sum P <= 262144) and the
  // long family's work limit.
  static GenBudget serving();

  // VATTN_FUZZ_BUDGET=small|medium|large, then per-field overrides VATTN_FUZZ_MAX_BATCH,
  // _MAX_HEADS, _MAX_PREFIX, _MAX_DRAFTS, _MAX_TOTAL_KV, _MAX_TOTAL_DRAFTS, _MAX_WORK,
  // _MAX_SPLITS. Throws InputError (field = the variable) on a bad value.
  static GenBudget from_env();
  // The same, reading variables through `lookup` (nullptr = unset), so tests need not
  // touch the process environment.
  static GenBudget from_lookup(const std::function<const char*(const char*)>& lookup);

  // Every variable from_env reads (a re-run command must carry the ones that are set).
  static const std::vector<std::string>& env_vars();

  std::string describe() const;  // "small: B<=4 H<=8 P<=300 T<=65 sumP<=600 ..."
};

// Names in shrink order: the first is where shrinking ends.
const std::vector<std::string>& tree_kinds();      // chain first
const std::vector<std::string>& pool_layouts();    // contiguous first
const std::vector<std::string>& value_profiles();  // uniform first
const std::vector<int>& head_choices();            // 1, 2, 3, 8, 16, 32, 64, 128

// Edge values the generators favour (tile edges at 32 and 64, primes, the spec's known sizes).
const std::vector<int>& prefix_edges();
const std::vector<int>& draft_edges();

// sum_b T_b * H * (P_b + T_b).
int64_t recipe_work(const Recipe& r);
// Throws std::logic_error naming the field when a recipe breaks the budget (used by tests
// and by GPU suites to assert that forced recipes still fit their plan-time limits).
void check_within_budget(const Recipe& r, const GenBudget& b);

// Single-field generators; each shrinks over plain integers toward its minimum, so a
// failure that needs "P >= 77" shrinks to exactly 77 whatever edge it started from.
rc::Gen<int> gen_heads(const GenBudget& b);               // shrinks toward 1 within head_choices()
rc::Gen<int> gen_prefix_len(int cap);                     // [0, cap], shrinks toward 0
rc::Gen<int> gen_draft_count(int cap);                    // [1, cap], shrinks toward 1
rc::Gen<int> gen_split_count(int tiles, int max_splits);  // [0, max_splits], shrinks toward 0 (auto)

// The whole recipe. Every shrink stays inside the budget.
rc::Gen<Recipe> gen_recipe(const GenBudget& b);
// The shrinks gen_recipe uses, simplest first (exposed for tests and custom generators).
rc::Seq<Recipe> shrink_recipe(const Recipe& r);

// How RapidCheck shows a Recipe in a counterexample: its one-line form.
void showValue(const Recipe& r, std::ostream& os);

}  // namespace vattn
