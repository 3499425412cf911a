// SPDX-License-Identifier: Apache-2.0
// Metamorphic transforms and bitwise/tolerance comparisons used by the GPU properties.
// Each transform builds a new valid Case from a generated one; the property states how the
// kernel's output must relate.
#pragma once

#include <string>

#include <rapidcheck.h>

#include "tests/gpu/gpu_testbed.h"
#include "vattn/case/case.h"
#include "vattn/fuzz/gen/gen_recipe.h"
#include "vattn/oracle/cpu_oracle.h"

namespace vattn::test {

// VATTN_FUZZ_BUDGET when set, else the named preset; sizes clamped so one case's inputs and
// split workspace stay a few GB on the device and generate in about a second on the host.
GenBudget gpu_budget(const std::string& default_name);

// Whether the revision under test has the test-only plan hook (kernels/vattn_abi.h): the in-tree
// revisions do; a library run by hand may not, and its properties then keep this GPU's plan.
bool plan_hook_under_test();

// Another GPU's plan for a property case (testbed/plan.h), for a revision with the hook: the RTX
// PRO 6000's (sms=188, one partial block an SM) a third of the time, the test GPU's SM count (132,
// the revision's occupancy) a sixth, else 1..512 SMs with 0..32 blocks each. Shrinks toward the
// RTX PRO 6000's. Without the hook: this GPU's plan. `heavy` (a case of kHeavyWork or more, a long
// context): at least 64 SMs, since a plan for a few SMs runs such a case on a few blocks for
// seconds per run and a property runs it many times.
rc::Gen<testbed::PlanOverride> gen_gpu_plan(bool hook, bool heavy = false);
// Tight plan limits for `r`: B, sum T_b and the largest T_b (at most `drafts_cap`) plus a little,
// shrinking to exactly the case's, and a small max_splits (1..8 above the recipe's forced count;
// 16..23 for a heavy case, whose few long splits would otherwise take seconds per run).
rc::Gen<Recipe::PlanLimits> gen_tight_limits(const Recipe& r, int drafts_cap);
// Work (gen_recipe.h's recipe_work) from which a property case counts as heavy.
constexpr int64_t kHeavyWork = 4000000;
// The most splits a property case's workspace may hold: its partial outputs take rows x splits x
// d_v floats, and several GPU tests share one GPU at a time, so a case of many heads and drafts
// (H=128 x 1100 drafts x 64 splits is 18 GB) is run with fewer splits, never fewer than one.
constexpr int64_t kMaxPartialBytes = int64_t{1} << 30;
int partial_splits_cap(int64_t rows);
// gen_recipe(b) with the plan it runs on in the recipe itself, so the counterexample's line re-runs
// it: another GPU's (sms=, sm_blocks=) when `hook`, and with `tight_limits` tight plan limits
// (limits=, within the revision under test's capabilities). A forced split count is at most
// partial_splits_cap of the case's rows.
rc::Gen<Recipe> gen_planned_recipe(const GenBudget& b, bool hook, bool tight_limits);

// Poisoned, forced-split run of a revision (default: the one under test) on its own
// exactly-fitting limits, planned for the GPU `gpu` names (default: this one).
RunResult run_once(const Case& c, int splits, const std::string& revision = revision_under_test(),
                   const testbed::PlanOverride& gpu = {});

// Prints the case line and the repro path of a failing verdict (the testbed wrote it).
void note_failure(const KernelVerdict& v, const Case& c, const std::string& tag);

// "" when out and lse agree bit for bit, else the first difference, located.
std::string bitwise_difference(const Case& c, const RunResult& a, const RunResult& b);
std::string request_difference(const Case& c, const RunResult& all, int request, const RunResult& alone);
std::string head_difference(const Case& c, const RunResult& all, int head, const RunResult& alone);

// x and y (two correct runs) within twice the tolerance model's bound around the naive oracle.
std::string split_disagreement(const Case& c, const Reference& naive, const RunResult& x, const RunResult& y);

// Every pool row moved to a new slot (pool grown by a few rows), indices updated.
Case permute_slots(const Case& c, uint64_t seed);
// NaN/Inf in every pool row no request references (plus extra such rows) and in the KV of
// draft nodes no row may see.
Case poison_outside_key_sets(const Case& c, uint64_t seed);
// The whole partly-visible-poison check of one case on `revision`: the testbed's
// (Property::kPartlyVisiblePoison, vattn/testbed/testbed.h) with the naive GPU oracle's scales:
// poison a draft (chosen by `seed`), run the clean and then the poisoned case with `splits`, compare.
// `applicable` is false when the case has no partly visible draft (nothing was run); `label`
// names the draft.
struct PoisonCheck {
  bool applicable = false;
  RunResult clean, poisoned;
  std::string label, diff;  // diff: "" when the property holds (or a run failed: see clean/poisoned.ok();
                            // the poisoned case runs only after a clean run that is ok())
};
PoisonCheck check_partly_visible_poison(const Case& c, int splits, uint64_t seed,
                                        const std::string& revision = revision_under_test(),
                                        const testbed::PlanOverride& gpu = {});
Case extract_request(const Case& c, int request);
Case extract_head(const Case& c, int head);
// A chain request of T drafts as T single-draft requests: draft i's earlier drafts become
// prefix rows (appended to the pool), so causal attention is asked for directly.
Case chain_as_causal_requests(const Case& c);

// "" when sum_k exp(s_k - lse) is 1 within the LSE tolerance on every non-empty row.
std::string lse_inconsistency(const Case& c, const RunResult& x);

}  // namespace vattn::test
