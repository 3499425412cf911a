// SPDX-License-Identifier: Apache-2.0
// The host side of running a case with another GPU's plan (vattn/testbed/plan.h) and of the GPU
// fuzz target's plan cache (vattn/fuzz/worker/runner_cache.h): what a recipe asks for, the hook set
// around a case and reset after, the refusal of a revision without the hook, and the bounded
// cache of plans at recipes' own limits. The hook here is a stand-in that records its calls.
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "vattn/fuzz/worker/runner_cache.h"
#include "vattn/testbed/plan.h"

using namespace vattn;

namespace {

std::vector<std::pair<int, int>> g_hook_calls;
vattn_status g_hook_answer = VATTN_OK;

vattn_status recording_hook(int sms, int blocks_per_sm) {
  g_hook_calls.emplace_back(sms, blocks_per_sm);
  return g_hook_answer;
}

void reset_hook() {
  g_hook_calls.clear();
  g_hook_answer = VATTN_OK;
}

}  // namespace

TEST_CASE("plan: a recipe's plan limits and GPU, from the recipe and from its line", "[plan]") {
  const Recipe r = Recipe::parse("B=2 H=8 P=[100,7] T=[3,5] limits=4/16/9/6 sms=188 sm_blocks=1 splits=2");
  const testbed::CasePlan p = testbed::case_plan(r);
  CHECK(p.limits.set());
  CHECK(p.limits.max_requests == 4);
  CHECK(p.limits.max_total_drafts == 16);
  CHECK(p.limits.max_drafts_per_request == 9);
  CHECK(p.limits.max_splits == 6);
  CHECK(p.gpu.sms == 188);
  CHECK(p.gpu.blocks_per_sm == 1);
  CHECK(p.gpu.describe() == "sms=188 sm_blocks=1");

  const testbed::CasePlan q = testbed::case_plan_of_line(r.to_line());
  CHECK(q.limits.max_total_drafts == 16);
  CHECK(q.gpu.sms == 188);
  CHECK(q.gpu.blocks_per_sm == 1);

  const testbed::CasePlan native = testbed::case_plan_of_line("B=1 H=8 P=[4099] T=[64] seed=7");
  CHECK_FALSE(native.limits.set());
  CHECK_FALSE(native.gpu.set());
  CHECK(native.gpu.describe() == "this GPU's plan");
  CHECK(testbed::case_plan_of_line("sms=132 B=1 P=[1] T=[1]").gpu.describe() == "sms=132");
  // No line, or one this version cannot parse: the caller's plan, as for the split count.
  CHECK_FALSE(testbed::case_plan_of_line("").gpu.set());
  CHECK_FALSE(testbed::case_plan_of_line("B=1 P=[1] T=[1] sms=188 warp=9").gpu.set());

  const vattn_limits l = testbed::plan_limits(p.limits, 8);
  CHECK(l.max_requests == 4);
  CHECK(l.max_total_drafts == 16);
  CHECK(l.max_drafts_per_request == 9);
  CHECK(l.num_heads == 8);
  CHECK(l.max_splits == 6);
}

TEST_CASE("plan: limits beyond a revision's capabilities are named", "[plan]") {
  vattn_caps caps{};
  caps.max_requests = 1024;
  caps.max_drafts_per_request = 1025;
  caps.max_heads = 128;
  caps.max_splits = 256;
  vattn_limits l{1024, 5000, 1025, 128, 256};
  CHECK(testbed::limits_beyond(caps, l).empty());
  l.max_drafts_per_request = 4096;
  CHECK(testbed::limits_beyond(caps, l) == "max_drafts_per_request 4096 > 1025");
  l.max_drafts_per_request = 1;
  l.max_requests = 1025;
  CHECK(testbed::limits_beyond(caps, l) == "max_requests 1025 > 1024");
  l.max_requests = 1;
  l.max_splits = 257;
  CHECK(testbed::limits_beyond(caps, l) == "max_splits 257 > 256");
  l.max_splits = 1;
  l.num_heads = 129;
  CHECK(testbed::limits_beyond(caps, l) == "heads 129 > 128");
}

TEST_CASE("plan: ScopedPlan sets the hook for its lifetime and resets it after", "[plan]") {
  reset_hook();
  {
    const testbed::ScopedPlan plan(recording_hook, {188, 1}, "'split-v2' (built-in)");
    REQUIRE(g_hook_calls.size() == 1);
    CHECK(g_hook_calls[0] == std::make_pair(188, 1));
  }
  REQUIRE(g_hook_calls.size() == 2);
  CHECK(g_hook_calls[1] == std::make_pair(0, 0));

  // Reset when the runs inside it throw, too.
  reset_hook();
  try {
    const testbed::ScopedPlan plan(recording_hook, {132, 0}, "'split-v1' (built-in)");
    throw std::runtime_error("a run failed");
  } catch (const std::runtime_error&) {
  }
  REQUIRE(g_hook_calls.size() == 2);
  CHECK(g_hook_calls[0] == std::make_pair(132, 0));
  CHECK(g_hook_calls[1] == std::make_pair(0, 0));

  // No plan asked for: the hook is not touched, and a revision without one runs.
  reset_hook();
  { const testbed::ScopedPlan plan(recording_hook, {}, "'split-v2' (built-in)"); }
  { const testbed::ScopedPlan plan(nullptr, {}, "'mine' (./libmine.so)"); }
  CHECK(g_hook_calls.empty());
}

TEST_CASE("plan: a revision without the hook is refused another GPU's plan, saying so", "[plan]") {
  reset_hook();
  try {
    const testbed::ScopedPlan plan(nullptr, {188, 1}, "'mine' (./libmine.so)");
    FAIL("a plan was accepted by a revision without the hook");
  } catch (const InputError& e) {
    CHECK(e.field() == "sms");
    const std::string what = e.what();
    CHECK_THAT(what, Catch::Contains("'mine' (./libmine.so)"));
    CHECK_THAT(what, Catch::Contains("has no test plan hook (vattn_test_plan_for_v1"));
    CHECK_THAT(what, Catch::Contains("sms=188 sm_blocks=1"));
    CHECK_THAT(what, Catch::Contains("not run with this GPU's plan instead"));
  }
  // A hook that refuses the plan: refused too, and nothing to reset (it changed nothing).
  g_hook_answer = VATTN_ERR_INVALID_ARGUMENT;
  try {
    const testbed::ScopedPlan plan(recording_hook, {512, 32}, "'odd' (./libodd.so)");
    FAIL("a plan the hook refused was accepted");
  } catch (const InputError& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("refuses the plan sms=512 sm_blocks=32"));
    CHECK_THAT(std::string(e.what()), Catch::Contains("returned status 1"));
  }
  REQUIRE(g_hook_calls.size() == 1);
  CHECK(g_hook_calls[0] == std::make_pair(512, 32));
  reset_hook();
}

TEST_CASE("plan: the GPU target plans at the recipe's limits when it has them, else the envelope", "[plan]") {
  GenBudget env = GenBudget::large();
  const Recipe own = Recipe::parse("B=2 H=16 P=[100,7] T=[3,5] limits=2/8/5/3");
  const vattn_limits l = fuzz::target_limits(own, env, 16);
  CHECK(l.max_requests == 2);
  CHECK(l.max_total_drafts == 8);
  CHECK(l.max_drafts_per_request == 5);
  CHECK(l.num_heads == 16);
  CHECK(l.max_splits == 3);
  const Recipe plain = Recipe::parse("B=2 H=16 P=[100,7] T=[3,5]");
  const vattn_limits e = fuzz::target_limits(plain, env, 16);
  CHECK(e.max_requests == env.max_batch);
  CHECK(e.max_total_drafts == env.max_total_drafts);
  CHECK(e.max_drafts_per_request == env.max_drafts);
  CHECK(e.num_heads == 16);
  CHECK(e.max_splits == env.max_splits);
  env.max_splits = 0;  // forced counts of 0 only: the plan still has room for one split
  CHECK(fuzz::target_limits(plain, env, 1).max_splits == 1);
  // The cache key tells every field apart.
  vattn_limits other = l;
  other.num_heads = 8;
  CHECK(fuzz::limits_key(l) != fuzz::limits_key(other));
  CHECK(fuzz::limits_key(l) == fuzz::limits_key(fuzz::target_limits(own, GenBudget::small(), 16)));
}

TEST_CASE("plan: the plan cache keeps the 32 most recently used and makes each once", "[plan]") {
  struct Plan {
    int made_as;
  };
  fuzz::LruCache<int, Plan> cache(32);
  int made = 0;
  auto get = [&](int key) -> Plan& {
    return cache.get(key, [&] {
      ++made;
      return Plan{key};
    });
  };
  for (int k = 0; k < 32; ++k) CHECK(get(k).made_as == k);
  CHECK(made == 32);
  CHECK(cache.size() == 32);
  CHECK(get(0).made_as == 0);  // a hit: made once, and now the most recently used
  CHECK(made == 32);
  get(100);  // the 33rd: the least recently used (1) goes
  CHECK(made == 33);
  CHECK(cache.size() == 32);
  CHECK_FALSE(cache.contains(1));
  CHECK(cache.contains(0));
  CHECK(cache.contains(2));
  CHECK(cache.contains(100));
  get(1);  // made again; now 2 goes
  CHECK(made == 34);
  CHECK_FALSE(cache.contains(2));
  // A make() that throws leaves nothing behind.
  CHECK_THROWS_AS(cache.get(7777, []() -> Plan { throw std::runtime_error("no device memory"); }), std::runtime_error);
  CHECK_FALSE(cache.contains(7777));
  CHECK(cache.size() <= 32);
  cache.clear();
  CHECK(cache.size() == 0);
  CHECK(fuzz::LruCache<int, Plan>(0).capacity() == 1);
}
