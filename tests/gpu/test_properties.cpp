// SPDX-License-Identifier: Apache-2.0
// Property-based tests of the kernel: RapidCheck draws shrinkable recipes (vattn/fuzz/gen/gen_recipe.h)
// and each property states what the contract promises. For a revision with the test plan hook
// (the in-tree ones) each case also draws the GPU the plan is made for (sms=, sm_blocks=:
// property_support.h, gen_planned_recipe) and, where the case is run as drawn, tight plan limits
// (limits=), all in its recipe line. A failure prints the shrunk case as
// one recipe line, the RC_PARAMS that re-run it, and writes an HDF5 repro under
// $VATTN_FINDINGS_DIR. Budgets: VATTN_FUZZ_BUDGET (default here: medium for oracle
// comparisons) and VATTN_FUZZ_CASES / RC_PARAMS (see vattn/fuzz/README.md).
#include <cmath>
#include <cstring>
#include <random>

#include <rapidcheck.h>
#include <catch2/catch.hpp>

#include "tests/gpu/gpu_testbed.h"
#include "tests/gpu/property_support.h"
#include "tests/support/rc_support.h"
#include "vattn/fuzz/gen/gen_recipe.h"
#include "vattn/gpu/naive_runner.h"
#include "vattn/oracle/cpu_oracle.h"
#include "vattn/testbed/plan.h"

using namespace vattn;
using namespace vattn::test;

TEST_CASE("kernel property: agrees with the CPU float64 oracle", "[gpu][property]") {
  const GenBudget b = gpu_budget("medium");
  const bool hook = plan_hook_under_test();
  rc_prop("kernel vs cpu oracle", [b, hook] {
    const Recipe r = *gen_planned_recipe(b, hook, true);
    const Case c = generate_case(r, "property");
    const auto v = check_vs_cpu(c, {r.splits}, revision_under_test(), testbed::case_plan(r));
    note_failure(v[0], c, "vs-cpu");
    RC_ASSERT(v[0].run.ok());
    RC_ASSERT(v[0].report.pass);
  });
}

TEST_CASE("kernel property: long contexts agree with the naive GPU oracle", "[gpu][property][long]") {
  GenBudget b = gpu_budget("large");
  const bool hook = plan_hook_under_test();
  rc_prop("kernel vs naive gpu oracle", [b, hook] {
    const Recipe r = *gen_planned_recipe(b, hook, true);
    const Case c = generate_case(r, "property");
    const auto v = check_vs_naive_gpu(c, {r.splits}, revision_under_test(), testbed::case_plan(r));
    note_failure(v[0], c, "vs-naive");
    RC_ASSERT(v[0].run.ok());
    RC_ASSERT(v[0].report.pass);
  });
}

TEST_CASE("kernel property: split counts agree within tolerance and each count is honoured", "[gpu][property]") {
  const GenBudget b = gpu_budget("medium");
  const bool hook = plan_hook_under_test();
  rc_prop("split invariance", [b, hook] {
    const Recipe r = *gen_planned_recipe(b, hook, false);
    const int other = *rc::gen::inRange(1, b.max_splits + 1);
    const Case c = generate_case(r, "property");
    DeviceCase dc(c);
    const Reference naive = naive_gpu_reference(dc);
    KernelRunner runner(load_revision(revision_under_test()), limits_for(c, b.max_splits));
    const testbed::ScopedPlan plan(runner.revision().plan_for, testbed::case_plan(r).gpu, runner.revision().describe());
    const RunResult x = runner.run(dc, r.splits), y = runner.run(dc, other);
    RC_ASSERT(x.ok());
    RC_ASSERT(y.ok());
    RC_ASSERT(other == static_cast<int>(y.splits_used));
    if (r.splits > 0) RC_ASSERT(r.splits == static_cast<int>(x.splits_used));
    const std::string diff = split_disagreement(c, naive, x, y);
    if (!diff.empty()) RC_FAIL("splits " + std::to_string(r.splits) + " vs " + std::to_string(other) + ": " + diff);
  });
}

TEST_CASE("kernel property: same inputs and split count give bitwise the same output", "[gpu][property]") {
  const GenBudget b = gpu_budget("large");
  const bool hook = plan_hook_under_test();
  rc_prop("determinism", [b, hook] {
    const Recipe r = *gen_planned_recipe(b, hook, true);
    const Case c = generate_case(r, "property");
    DeviceCase dc(c);
    KernelRunner runner(load_revision(revision_under_test()), testbed::plan_limits(r.limits, c.num_heads));
    const testbed::ScopedPlan plan(runner.revision().plan_for, testbed::case_plan(r).gpu, runner.revision().describe());
    const RunResult first = runner.run(dc, r.splits);
    RC_ASSERT(first.ok());
    for (int rep = 0; rep < 2; ++rep) {
      const RunResult again = runner.run(dc, r.splits);
      RC_ASSERT(again.ok());
      RC_ASSERT(bitwise_difference(c, first, again).empty());
    }
  });
}

TEST_CASE("kernel property: moving KV rows to other pool slots changes nothing, bitwise", "[gpu][property]") {
  const GenBudget b = gpu_budget("large");
  const bool hook = plan_hook_under_test();
  rc_prop("slot permutation", [b, hook] {
    const Recipe r = *gen_planned_recipe(b, hook, false);
    const uint64_t perm_seed = *rc::gen::inRange<uint64_t>(0, uint64_t{1} << 32);
    const testbed::PlanOverride gpu = testbed::case_plan(r).gpu;
    const Case c = generate_case(r, "property");
    const Case moved = permute_slots(c, perm_seed);
    const RunResult x = run_once(c, r.splits, revision_under_test(), gpu),
                    y = run_once(moved, r.splits, revision_under_test(), gpu);
    RC_ASSERT(x.ok());
    RC_ASSERT(y.ok());
    const std::string diff = bitwise_difference(c, x, y);
    if (!diff.empty()) RC_FAIL("after moving slots: " + diff);
  });
}

TEST_CASE("kernel property: NaN/Inf outside every key set changes nothing, bitwise", "[gpu][property]") {
  const GenBudget b = gpu_budget("large");
  const bool hook = plan_hook_under_test();
  rc_prop("poison independence", [b, hook] {
    Recipe r = *gen_planned_recipe(b, hook, false);
    r.poison = false;
    const testbed::PlanOverride gpu = testbed::case_plan(r).gpu;
    const Case c = generate_case(r, "property");
    const Case poisoned = poison_outside_key_sets(c, *rc::gen::inRange(0, 1000));
    const RunResult x = run_once(c, r.splits, revision_under_test(), gpu),
                    y = run_once(poisoned, r.splits, revision_under_test(), gpu);
    RC_ASSERT(x.ok());
    RC_ASSERT(y.ok());
    const std::string diff = bitwise_difference(c, x, y);
    if (!diff.empty()) RC_FAIL("after poisoning: " + diff);
  });
}

TEST_CASE("kernel property: NaN/Inf in a draft changes only the rows that see it", "[gpu][property]") {
  // The draft shares its K/V tile with rows that must not see it: a masked probability of 0
  // times a NaN/Inf value in P.V would leak into them.
  const GenBudget b = gpu_budget("large");
  const bool hook = plan_hook_under_test();
  rc_prop("partly visible poison", [b, hook] {
    Recipe r = *gen_planned_recipe(b, hook, false);
    r.poison = false;
    const testbed::PlanOverride gpu = testbed::case_plan(r).gpu;
    const PoisonCheck k = check_partly_visible_poison(generate_case(r, "property"), r.splits,
                                                      *rc::gen::inRange(0, 1000), revision_under_test(), gpu);
    RC_PRE(k.applicable);  // every draft is seen by all rows of its request, or by none
    RC_ASSERT(k.clean.ok());
    RC_ASSERT(k.poisoned.ok());
    if (!k.diff.empty()) RC_FAIL(k.label + ": " + k.diff);
  });
}

TEST_CASE("kernel property: a request alone equals it inside the batch, bitwise for a forced split count",
          "[gpu][property]") {
  // Claim: bitwise under a forced split count. With the kernel choosing, the split count
  // depends on the whole batch (that is the point), so only tolerance-level agreement holds.
  const GenBudget b = gpu_budget("large");
  const bool hook = plan_hook_under_test();
  rc_prop("batch invariance", [b, hook] {
    Recipe r = *gen_planned_recipe(b, hook, false);
    if (r.splits == 0) r.splits = 1 + static_cast<int>(r.seed % static_cast<uint64_t>(b.max_splits));
    const int which = *rc::gen::inRange(0, static_cast<int>(r.prefix.size()));
    const testbed::PlanOverride gpu = testbed::case_plan(r).gpu;
    const Case c = generate_case(r, "property");
    const Case alone = extract_request(c, which);
    const RunResult all = run_once(c, r.splits, revision_under_test(), gpu),
                    one = run_once(alone, r.splits, revision_under_test(), gpu);
    RC_ASSERT(all.ok());
    RC_ASSERT(one.ok());
    const std::string diff = request_difference(c, all, which, one);
    if (!diff.empty()) RC_FAIL("request " + std::to_string(which) + " alone vs in batch: " + diff);
  });
}

TEST_CASE("kernel property: a head computed alone equals that head in the full case, bitwise", "[gpu][property]") {
  const GenBudget b = gpu_budget("large");
  const bool hook = plan_hook_under_test();
  rc_prop("head independence", [b, hook] {
    Recipe r = *gen_planned_recipe(b, hook, false);
    if (r.splits == 0) r.splits = 1 + static_cast<int>(r.seed % static_cast<uint64_t>(b.max_splits));
    const testbed::PlanOverride gpu = testbed::case_plan(r).gpu;
    const Case c = generate_case(r, "property");
    const int h = *rc::gen::inRange(0, c.num_heads);
    const Case single = extract_head(c, h);
    const RunResult all = run_once(c, r.splits, revision_under_test(), gpu),
                    one = run_once(single, r.splits, revision_under_test(), gpu);
    RC_ASSERT(all.ok());
    RC_ASSERT(one.ok());
    const std::string diff = head_difference(c, all, h, one);
    if (!diff.empty()) RC_FAIL("head " + std::to_string(h) + " alone vs in the case: " + diff);
  });
}

TEST_CASE("kernel property: a chain equals causal attention (each draft as its own request)", "[gpu][property]") {
  const GenBudget b = gpu_budget("medium");
  const bool hook = plan_hook_under_test();
  rc_prop("chain == causal", [b, hook] {
    Recipe r = *gen_planned_recipe(b, hook, false);
    r.tree = "chain";
    const testbed::PlanOverride gpu = testbed::case_plan(r).gpu;
    const Case c = generate_case(r, "property");
    const Case causal = chain_as_causal_requests(c);
    const RunResult x = run_once(c, r.splits, revision_under_test(), gpu),
                    y = run_once(causal, r.splits, revision_under_test(), gpu);
    RC_ASSERT(x.ok());
    RC_ASSERT(y.ok());
    DeviceCase dc(c);
    const Reference naive = naive_gpu_reference(dc);
    const std::string diff = split_disagreement(c, naive, x, y);
    if (!diff.empty()) RC_FAIL("chain vs causal: " + diff);
  });
}

TEST_CASE("kernel property: exp(s_k - lse) sums to 1 on every non-empty row", "[gpu][property]") {
  const GenBudget b = gpu_budget("small");
  const bool hook = plan_hook_under_test();
  rc_prop("lse consistency", [b, hook] {
    const Recipe r = *gen_planned_recipe(b, hook, false);
    const testbed::PlanOverride gpu = testbed::case_plan(r).gpu;
    const Case c = generate_case(r, "property");
    const RunResult x = run_once(c, r.splits, revision_under_test(), gpu);
    RC_ASSERT(x.ok());
    const std::string bad = lse_inconsistency(c, x);
    if (!bad.empty()) RC_FAIL(bad);
  });
}
