// SPDX-License-Identifier: Apache-2.0
// vattn timeline's summary (vattn/gpu/timeline_summary.h) on made-up stamps: which blocks and
// items count, each phase in us from the block's own clock rate, the milestones, and stamps
// that cannot be of one call refused with the call, block and point named.
#include <catch2/catch.hpp>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "vattn/gpu/timeline_summary.h"

namespace {

constexpr uint64_t kPlan = 1'000'000;  // the plan kernel's entry, ns

// Block k: entry at kPlan + 200 ns, past its wait at +1000 ns; items from `first_ns` on, each
// phase `step_ns` long; the SM clock runs at 2 cycles per ns.
void stamp_block(vattn_timeline& t, int k, int items, uint64_t first_ns, uint64_t step_ns) {
  uint64_t* ns = t.partial_ns + k * VATTN_TL_SLOTS;
  int64_t* ck = t.partial_clock + k * VATTN_TL_SLOTS;
  auto at = [&](int slot, uint64_t when) {
    ns[slot] = when;
    ck[slot] = static_cast<int64_t>(2 * when);
  };
  at(0, kPlan + 200);
  at(1, kPlan + 1000);
  uint64_t now = first_ns;
  for (int i = 0; i < items; ++i)
    for (int p = 0; p < VATTN_TL_ITEM_SLOTS; ++p, now += step_ns)
      at(2 + VATTN_TL_ITEM_SLOTS * (i > 0 ? 1 : 0) + p, now);
}

std::unique_ptr<vattn_timeline> empty_call() {
  auto t = std::make_unique<vattn_timeline>();
  *t = vattn_timeline{};
  t->plan_ns[0] = kPlan;
  return t;
}

}  // namespace

TEST_CASE("timeline summary: phases from each block's clock, milestones from the plan's entry", "[timeline]") {
  auto t = empty_call();
  stamp_block(*t, 0, 2, kPlan + 2000, 1000);  // two items: the first, then a later one
  stamp_block(*t, 1, 1, kPlan + 2000, 3000);  // one item, slower phases
  // Block 2 ran but had no item (past its wait, no item stamps); block 3 never ran.
  t->partial_ns[2 * VATTN_TL_SLOTS + 0] = kPlan + 100;
  t->partial_ns[2 * VATTN_TL_SLOTS + 1] = kPlan + 1500;
  t->reduce_ns[0 * VATTN_TL_REDUCE_SLOTS + 0] = kPlan + 3000;
  t->reduce_ns[5 * VATTN_TL_REDUCE_SLOTS + 0] = kPlan + 19000;
  t->reduce_ns[0 * VATTN_TL_REDUCE_SLOTS + 1] = kPlan + 20000;
  t->reduce_ns[0 * VATTN_TL_REDUCE_SLOTS + 2] = kPlan + 25000;
  t->reduce_ns[5 * VATTN_TL_REDUCE_SLOTS + 1] = kPlan + 21000;
  t->reduce_ns[5 * VATTN_TL_REDUCE_SLOTS + 2] = kPlan + 24000;
  std::vector<vattn_timeline> calls(1, *t);
  const vattn::TimelineSummary s = vattn::summarize_timeline(calls, 4);
  CHECK(s.blocks_with_items == 2);
  CHECK(s.blocks_with_later_items == 1);
  CHECK(s.clock_ghz == Approx(2.0));
  CHECK(s.partial_past_wait == Approx(1.5));  // block 2's wait, the last
  CHECK(s.partial_done == Approx(14.0));      // block 1: 2 us + 4 phases of 3 us
  CHECK(s.reduce_past_wait == Approx(21.0));
  CHECK(s.reduce_done == Approx(25.0));
  CHECK(s.reduce_entry.samples == 2);  // blocks 0 and 5
  CHECK(s.reduce_entry.min == Approx(3.0));
  CHECK(s.reduce_entry.max == Approx(19.0));
  CHECK(s.reduce_after_wait.samples == 2);
  CHECK(s.reduce_after_wait.min == Approx(3.0));  // block 5: 21 -> 24 us
  CHECK(s.reduce_after_wait.max == Approx(5.0));  // block 0: 20 -> 25 us
  REQUIRE(s.phases.size() == 5);
  CHECK(s.phases[0].first.samples == 2);
  CHECK(s.phases[0].first.median == Approx(2.0));  // both first items begin 2 us after the plan
  CHECK(s.phases[0].later.samples == 1);
  CHECK(s.phases[0].later.median == Approx(7.0));  // block 0's later item: after 5 points of 1 us
  for (int p = 1; p < 5; ++p) {
    INFO("phase " << s.phases[p].name);
    CHECK(s.phases[p].first.samples == 2);
    CHECK(s.phases[p].first.min == Approx(1.0));
    CHECK(s.phases[p].first.max == Approx(3.0));
    CHECK(s.phases[p].later.median == Approx(1.0));
  }
  const std::string table = vattn::timeline_table(s);
  CHECK(table.find("tile loop") != std::string::npos);
  CHECK(table.find("2.00 GHz") != std::string::npos);
  CHECK(table.find("with a later item: 1") != std::string::npos);
  CHECK(table.find("past its wait to done") != std::string::npos);
  CHECK(s.plan_written_calls == 0);  // no call stamped it: no line
  CHECK(table.find("the plan written") == std::string::npos);
}

TEST_CASE("timeline summary: the plan written, a median over the calls that stamp it", "[timeline]") {
  std::vector<vattn_timeline> calls;
  for (uint64_t w : {700u, 900u, 0u, 800u}) {  // the third call has no stamp: it does not count
    auto t = empty_call();
    stamp_block(*t, 0, 1, kPlan + 2000, 1000);
    t->plan_ns[1] = w == 0 ? 0 : kPlan + w;
    calls.push_back(*t);
  }
  const vattn::TimelineSummary s = vattn::summarize_timeline(calls, 1);
  CHECK(s.plan_written_calls == 3);
  CHECK(s.plan_written == Approx(0.8));
  CHECK(vattn::timeline_table(s).find("the plan written") != std::string::npos);
  calls[1].plan_ns[1] = kPlan - 1;  // before the entry: not one call's stamps
  CHECK_THROWS_WITH(vattn::summarize_timeline(calls, 1), Catch::Contains("call 1") && Catch::Contains("plan written"));
}

TEST_CASE("timeline summary: milestones are medians over calls, phases pool every call", "[timeline]") {
  std::vector<vattn_timeline> calls;
  for (uint64_t step : {1000u, 2000u, 4000u}) {
    auto t = empty_call();
    stamp_block(*t, 0, 1, kPlan + 2000, step);
    calls.push_back(*t);
  }
  const vattn::TimelineSummary s = vattn::summarize_timeline(calls, 1);
  CHECK(s.partial_done == Approx(2.0 + 4 * 2.0));  // the middle call
  CHECK(s.phases[3].first.samples == 3);
  CHECK(s.phases[3].first.median == Approx(2.0));
  CHECK(s.phases[3].first.max == Approx(4.0));
  CHECK(s.blocks_with_later_items == 0);
  CHECK(vattn::timeline_table(s).find("no block has a later item") != std::string::npos);
}

TEST_CASE("timeline summary: stamps that cannot be of one call are refused, with the place", "[timeline]") {
  auto refused = [](const vattn_timeline& t, int blocks) {
    try {
      (void)vattn::summarize_timeline(std::vector<vattn_timeline>(1, t), blocks);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  auto t = empty_call();
  stamp_block(*t, 0, 1, kPlan + 2000, 1000);
  CHECK(refused(*t, 1).empty());

  auto no_plan = std::make_unique<vattn_timeline>(*t);
  no_plan->plan_ns[0] = 0;
  CHECK(refused(*no_plan, 1).find("call 0 has no plan-kernel stamp") != std::string::npos);

  auto no_entry = std::make_unique<vattn_timeline>(*t);
  no_entry->partial_ns[0] = 0;
  CHECK(refused(*no_entry, 1).find("partial block 0 is past its wait without an entry stamp") != std::string::npos);

  auto missing = std::make_unique<vattn_timeline>(*t);
  missing->partial_ns[2 + 3] = 0;  // the first item's "loop ended" point
  CHECK(refused(*missing, 1).find("item 0: point 3 missing") != std::string::npos);

  auto backwards = std::make_unique<vattn_timeline>(*t);
  backwards->partial_clock[2 + 2] = backwards->partial_clock[2 + 1] - 1;
  CHECK(refused(*backwards, 1).find("item 0: point 2 before point 1") != std::string::npos);

  // Blocks past the partial grid are not read: a stale, broken block there changes nothing.
  auto stale = std::make_unique<vattn_timeline>(*t);
  stale->partial_ns[VATTN_TL_SLOTS + 1] = kPlan;  // block 1: past a wait, no entry
  CHECK(refused(*stale, 1).empty());
  CHECK(!refused(*stale, 2).empty());

  CHECK_THROWS_AS(vattn::summarize_timeline({}, 1), std::runtime_error);
}
