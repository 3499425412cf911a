// SPDX-License-Identifier: Apache-2.0
// The test-only plan hook (kernels/vattn_abi.h, vattn_test_plan_for_v1): the revision under test
// planned as a GPU with other SM and block counts would, through the testbed (testbed/plan.h), as
// the GPU tests, `vattn replay --kernel` and the fuzz worker run it. A lone long request gets one
// split on one SM and many on the RTX PRO 6000's 188, as the planner's rule predicts; results match
// the oracle on grids from 1 to 512 x 32 blocks, bitwise across grids for a forced split count;
// the hook refuses what the ABI does not accept, is set around one case's runs (the properties'
// extra runs included) and reset after; a revision without it is refused such a case.
#include <algorithm>
#include <cstdio>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "kernels/split_pack.h"
#include "kernels/split_traits.h"
#include "tests/gpu/gpu_testbed.h"
#include "tests/gpu/property_support.h"
#include "vattn/fuzz/gen/case_stream.h"
#include "vattn/fuzz/worker/gpu_target.h"
#include "vattn/gpu/device_case.h"
#include "vattn/oracle/cpu_oracle.h"
#include "vattn/testbed/plan.h"
#include "vattn/testbed/testbed.h"

using namespace vattn;
using namespace vattn::test;

namespace {

// One long request: 257 key tiles for 16 drafts x 8 heads.
constexpr const char* kLoneLong = "B=1 H=8 P=[8191] T=[16] tree=chain profile=k26 layout=scattered poison=0 seed=11";

// The revision under test; api null (and a warning) when it has no hook: a library run by hand
// may lack it, the in-tree revisions must have it.
Revision revision_with_hook() {
  Revision rev = load_revision(revision_under_test());
  if (rev.origin == "built-in") REQUIRE(rev.plan_for != nullptr);
  if (rev.plan_for == nullptr) {
    WARN("revision " << rev.describe() << " has no test plan hook: nothing to check here");
    rev.api = nullptr;
  }
  return rev;
}

// What an in-tree revision's planner does with one request (split_plan.cuh): the grid's items
// shared by its row tiles, whole tiles a split (no fewer than the minimum), capped by max_splits,
// then split-v2's packing of a lone request (split_pack.h). -1 for another revision.
int lone_request_splits(const std::string& name, int items, int prefix, int drafts, int heads, int limit) {
  int rows = 0, min_tiles = 0;
  bool pack = false;
  if (name == kern::Traits::kName) {
    rows = kern::Traits::kRowsPerTile;
    min_tiles = kern::Traits::kMinTilesPerSplit;
    pack = kern::Traits::kPackLoneRequest;
  } else if (name == kern_v2::Traits::kName) {
    rows = kern_v2::Traits::kRowsPerTile;
    min_tiles = kern_v2::Traits::kMinTilesPerSplit;
    pack = kern_v2::Traits::kPackLoneRequest;
  } else {
    return -1;
  }
  const int tiles = (prefix + drafts + 31) / 32, row_tiles = (drafts * heads + rows - 1) / rows;
  const int share = std::min(std::max(items / row_tiles, 1), limit);
  int per_split = std::max((tiles + share - 1) / share, min_tiles);
  if (pack)
    per_split =
        split_pack::choose(tiles, row_tiles, items, (tiles + per_split - 1) / per_split, per_split, limit).per_split;
  return (tiles + per_split - 1) / per_split;
}

testbed::CasePlan plan_of(Recipe::PlanLimits limits, int sms, int blocks_per_sm) {
  testbed::CasePlan p;
  p.limits = limits;
  p.gpu = {sms, blocks_per_sm};
  return p;
}

}  // namespace

TEST_CASE("plan hook: accepts what vattn_abi.h allows, refuses the rest and keeps its setting", "[gpu][plan]") {
  const Revision rev = revision_with_hook();
  if (rev.api == nullptr) return;
  const vattn_test_plan_for_fn hook = rev.plan_for;
  for (const auto& [sms, blocks] :
       std::vector<std::pair<int, int>>{{-1, 0}, {0, 1}, {0, -1}, {513, 0}, {1, 33}, {1, -1}, {600, 5}, {512, 33}}) {
    INFO("sms " << sms << ", blocks per SM " << blocks);
    CHECK(hook(sms, blocks) == VATTN_ERR_INVALID_ARGUMENT);
  }
  for (const auto& [sms, blocks] :
       std::vector<std::pair<int, int>>{{1, 0}, {1, 1}, {512, 32}, {188, 1}, {132, 0}, {0, 0}}) {
    INFO("sms " << sms << ", blocks per SM " << blocks);
    CHECK(hook(sms, blocks) == VATTN_OK);
  }
  // A refused call changes nothing: the one-SM plan stays (one split), and (0, 0) restores this GPU's.
  const Case c = make_case(kLoneLong);
  DeviceCase dc(c);
  KernelRunner runner(rev, limits_for(c, 64));
  REQUIRE(hook(1, 1) == VATTN_OK);
  CHECK(hook(513, 1) == VATTN_ERR_INVALID_ARGUMENT);
  const RunResult one = runner.run(dc, 0);
  REQUIRE(hook(0, 0) == VATTN_OK);
  const RunResult native = runner.run(dc, 0);
  REQUIRE(one.ok());
  REQUIRE(native.ok());
  CHECK(one.splits_used == 1);
  CHECK(native.splits_used > 1);
}

TEST_CASE("plan hook: one SM gives a lone long request one split and the RTX PRO 6000 many, both matching the oracle",
          "[gpu][plan]") {
  const Revision rev = revision_with_hook();
  if (rev.api == nullptr) return;
  const Case c = make_case(kLoneLong);
  const Recipe::PlanLimits limits{1, 16, 16, 64};
  const auto one = check_vs_cpu(c, {0}, revision_under_test(), plan_of(limits, 1, 1));
  const auto pro = check_vs_cpu(c, {0}, revision_under_test(), plan_of(limits, 188, 1));
  require_all_pass(one, c);
  require_all_pass(pro, c);
  const int used_one = static_cast<int>(one[0].run.splits_used), used_pro = static_cast<int>(pro[0].run.splits_used);
  std::printf("  %s: splits used %d on 1 SM, %d on 188 SMs x 1 block\n", rev.name().c_str(), used_one, used_pro);
  CHECK(used_one == 1);
  CHECK(used_pro > 1);
  CHECK(used_one != used_pro);
  // The planner's own rule, for the in-tree revisions: the count follows SMs x blocks.
  for (const auto& [sms, blocks, used] : std::vector<std::tuple<int, int, int>>{{1, 1, used_one}, {188, 1, used_pro}}) {
    const int want = lone_request_splits(rev.name(), sms * blocks, 8191, 16, 8, limits.max_splits);
    INFO("sms " << sms << " x " << blocks << " blocks: predicted " << want << ", used " << used);
    if (want > 0) CHECK(used == want);
  }
}

TEST_CASE("plan hook: every grid from 1 to 512 x 32 blocks covers the work, bitwise for a forced split count",
          "[gpu][plan]") {
  const Revision rev = revision_with_hook();
  if (rev.api == nullptr) return;
  // Three requests, one of them a single draft, a random tree, poisoned pool rows.
  const Case c =
      make_case("B=3 H=8 P=[4099,17,300] T=[17,1,64] tree=random profile=k26 layout=scattered poison=1 seed=5");
  const Reference r64 = oracle_fp64(c), r16 = reference_bf16_emulated(c);
  const testbed::References refs{&r64, &r16, testbed::kOracleFp64};
  DeviceCase dc(c);
  testbed::Testbed tb(rev, limits_for(c, 8));
  testbed::Options forced;
  forced.splits = 5;
  forced.oracle = testbed::OracleChoice::kGiven;
  const testbed::Observation native = tb.run(dc, c, forced);
  REQUIRE(native.run.ok());
  REQUIRE(native.run.splits_used == 5);
  const std::vector<testbed::PlanOverride> plans{{1, 1},   {1, 0},   {2, 0},   {7, 32},  {131, 1},
                                                 {132, 0}, {133, 2}, {188, 1}, {512, 0}, {512, 32}};
  for (const testbed::PlanOverride& plan : plans) {
    for (int splits : {0, 5}) {
      testbed::Options o = forced;
      o.splits = splits;
      o.plan = plan;
      const testbed::Observation obs = tb.run(dc, c, o);
      const testbed::Outcome out = testbed::verify(c, obs, "kernel:" + rev.name() + " " + plan.describe(), &refs);
      INFO(plan.describe() << ", splits " << splits << ": " << obs.run.problem(obs.api) << out.verdict.detail);
      CHECK(obs.run.ok());
      CHECK_FALSE(out.verdict.failed());
      if (splits > 0) CHECK(bitwise_difference(c, native.run, obs.run).empty());
    }
  }
}

TEST_CASE("plan hook: the RTX PRO 6000's plan and 132 SMs on tile edges and primes", "[gpu][plan]") {
  const Revision rev = revision_with_hook();
  if (rev.api == nullptr) return;
  for (const char* line :
       {"B=1 H=8 P=[4099] T=[64] tree=ddtree profile=k26 layout=scattered poison=0 seed=7",
        "B=2 H=16 P=[65,0] T=[33,1] tree=random profile=uniform layout=reversed poison=1 seed=3",
        "B=5 H=3 P=[31,32,33,1023,4097] T=[1,2,17,31,64] tree=star profile=adversarial layout=sparse poison=0 seed=13",
        "B=1 H=128 P=[2053] T=[16] tree=chain profile=ties layout=contiguous poison=0 seed=2"}) {
    const Case c = make_case(line);
    for (const testbed::PlanOverride gpu : {testbed::PlanOverride{188, 1}, testbed::PlanOverride{132, 0}}) {
      std::printf("%s  %s\n", c.describe().c_str(), gpu.describe().c_str());
      require_all_pass(check_vs_cpu(c, {0, 3}, revision_under_test(), plan_of({}, gpu.sms, gpu.blocks_per_sm)), c);
    }
  }
}

TEST_CASE("plan hook: the testbed sets it for one case's runs, the extra ones too, and resets it after",
          "[gpu][plan]") {
  const Revision rev = revision_with_hook();
  if (rev.api == nullptr) return;
  const Case c = make_case(kLoneLong);
  DeviceCase dc(c);
  testbed::Testbed tb(rev, limits_for(c, 64));
  testbed::Options o;
  o.oracle = testbed::OracleChoice::kGiven;
  const uint32_t native = tb.run(dc, c, o).run.splits_used;
  REQUIRE(native > 1);
  o.plan = {1, 1};
  o.properties.add(testbed::Property::kPartlyVisiblePoison);  // a chain: draft 0 is seen by every row, draft 15 by one
  const testbed::Observation one = tb.run(dc, c, o);
  REQUIRE(one.run.ok());
  REQUIRE(one.poison.applies());
  CHECK(one.run.splits_used == 1);
  CHECK(one.poisoned.splits_used == 1);  // the property's extra run has the case's plan too
  o.plan = {};
  o.properties = {};
  CHECK(tb.run(dc, c, o).run.splits_used == native);  // and nothing is left set after the case

  // A revision without the hook: refused, never run with this GPU's plan.
  Revision bare = rev;
  bare.plan_for = nullptr;
  testbed::Testbed no_hook(bare, limits_for(c, 64));
  o.plan = {188, 1};
  CHECK_THROWS_WITH(no_hook.run(dc, c, o), Catch::Contains("has no test plan hook") && Catch::Contains("sms=188"));
  o.plan = {};
  CHECK(no_hook.run(dc, c, o).run.splits_used == native);
}

TEST_CASE("plan hook: replay runs a recipe's plan limits and plan", "[gpu][plan]") {
  const Revision rev = revision_with_hook();
  if (rev.api == nullptr) return;
  const std::string base = std::string(kLoneLong) + " limits=1/16/16/3";
  for (const auto& [extra, want] :
       std::vector<std::pair<std::string, uint32_t>>{{" sms=188 sm_blocks=1", 3}, {" sms=1", 1}}) {
    const Case c = generate_case(Recipe::parse(base + extra), "recipe");
    const Reference r64 = oracle_fp64(c), r16 = reference_bf16_emulated(c);
    const testbed::CaseResult r =
        testbed::replay_kernel(rev, c, 0, {&r64, &r16, testbed::kOracleFp64}, testbed::case_plan_of_line(c.recipe));
    INFO(c.recipe << ": " << r.obs.run.problem(rev.api) << r.outcome.report.detail());
    CHECK(r.obs.run.ok());
    CHECK(r.outcome.report.pass);
    CHECK(r.obs.run.splits_used == want);  // 188 SMs would cut it in dozens: the limits' 3 cap it
  }
  // Plan limits the revision cannot plan are not run.
  const Case c = generate_case(Recipe::parse(std::string(kLoneLong) + " limits=1/16/2000/3"), "recipe");
  const Reference r64 = oracle_fp64(c);
  CHECK_THROWS_AS(
      testbed::replay_kernel(rev, c, 0, {&r64, nullptr, testbed::kOracleFp64}, testbed::case_plan_of_line(c.recipe)),
      testbed::Unsupported);
}

TEST_CASE("plan hook: the fuzz GPU target plans per recipe limits and plan, and says it has the hook", "[gpu][plan]") {
  const Revision rev = load_revision(revision_under_test());
  fuzz::TargetOptions t;
  t.spec = revision_under_test();
  t.envelope = fuzz::CaseStream(fuzz::StreamConfig{}).envelope();
  const auto target = fuzz::make_gpu_target(t);
  CHECK(target->plan_hook() == (rev.plan_for != nullptr));
  if (!target->plan_hook()) return;
  for (const char* line : {"B=1 H=8 P=[8191] T=[16] tree=chain seed=11 limits=1/16/16/3 sms=188 sm_blocks=1",
                           "B=2 H=8 P=[300,4099] T=[5,17] tree=random seed=4 limits=2/40/32/8 sms=1",
                           "B=2 H=8 P=[300,4099] T=[5,17] tree=random seed=4 limits=3/22/17/2 sms=7 sm_blocks=32",
                           "B=1 H=16 P=[1000] T=[9] tree=star seed=6 sms=132",
                           "B=1 H=16 P=[1000] T=[9] tree=star seed=6 limits=1/9/9/1"}) {
    const Recipe r = Recipe::parse(line);
    const Case c = generate_case(r, "fuzz");
    const fuzz::Verdict v = target->run(c, r, nullptr)(fuzz::ReproRequest{});
    INFO(line << ": " << v.signature() << " " << v.detail);
    CHECK_FALSE(v.failed());
  }
  // Plan limits beyond the revision: not run (the worker reports an input error, not a finding).
  const Recipe beyond = Recipe::parse("B=1 H=8 P=[100] T=[16] limits=1/16/2000/3");
  const Case c = generate_case(beyond, "fuzz");
  CHECK_THROWS_AS(target->run(c, beyond, nullptr), InputError);
}
