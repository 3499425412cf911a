// SPDX-License-Identifier: Apache-2.0
// What the campaign's case stream draws (vattn/fuzz/gen/case_stream.h) over many indices: the
// large mix's families in their shares, the serving family inside its bounds, the caller's plan
// limits and other GPUs' SM counts in their shares and always admitting the case, every line
// parsing back to itself, shrinking that keeps the limits valid, and captured shapes (a mix
// table) in their share and proportions. Shares are counted over 5000 indices, so a bound a
// few points off the drawn share is many standard deviations away.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "vattn/case/case.h"
#include "vattn/fuzz/gen/case_stream.h"
#include "vattn/fuzz/gen/fit_budget.h"
#include "vattn/fuzz/gen/gen_recipe.h"
#include "vattn/fuzz/gen/mix_table.h"
#include "vattn/fuzz/gen/plan_draws.h"
#include "vattn/fuzz/gen/serving_family.h"

using vattn::GenBudget;
using vattn::Recipe;
using vattn::fuzz::CaseStream;
using vattn::fuzz::StreamCase;
using vattn::fuzz::StreamConfig;

namespace {

constexpr int64_t kIndices = 5000;

StreamConfig gpu_config(uint64_t seed, const std::string& budget = "large") {
  StreamConfig sc;
  sc.seed = seed;
  sc.budget = budget;
  sc.device_variants = true;
  sc.plan_variants = true;
  return sc;
}

int64_t sum_drafts(const Recipe& r) {
  int64_t s = 0;
  for (int t : r.drafts) s += t;
  return s;
}

int64_t sum_prefix(const Recipe& r) {
  int64_t s = 0;
  for (int p : r.prefix) s += p;
  return s;
}

int longest_draft(const Recipe& r) { return *std::max_element(r.drafts.begin(), r.drafts.end()); }

// Share of `n` in percent of `total`.
double pct(int64_t n, int64_t total) { return 100.0 * static_cast<double>(n) / static_cast<double>(total); }

// What Recipe::parse demands of limits, restated here so a parser that stopped checking would
// not make this test pass on its own.
bool limits_admit(const Recipe& r) {
  if (!r.limits.set()) return r.limits.max_total_drafts == 0 && r.limits.max_drafts_per_request == 0;
  return r.limits.max_requests >= static_cast<int>(r.prefix.size()) && r.limits.max_total_drafts >= sum_drafts(r) &&
         r.limits.max_drafts_per_request >= longest_draft(r) && r.limits.max_splits >= 1 &&
         r.limits.max_splits >= r.splits && r.limits.max_splits <= 256;
}

}  // namespace

TEST_CASE("case stream: the large mix is about 40% serving, 40% short and 20% long", "[case-stream]") {
  const CaseStream s(gpu_config(21));
  std::map<std::string, int64_t> family;
  int64_t long_context = 0;
  for (int64_t i = 0; i < kIndices; ++i) {
    const StreamCase c = s.at(i);
    ++family[c.family];
    long_context += c.long_context;
    CHECK(vattn::fuzz::size_class(c) == c.family);
    if (c.family == "long") CHECK(c.long_context);
    if (c.family == "short") CHECK_FALSE(c.long_context);
    CHECK_NOTHROW(vattn::check_within_budget(c.recipe, s.envelope()));
  }
  CAPTURE(family["serving"], family["short"], family["long"], long_context);
  CHECK(family.size() == 3);
  CHECK(pct(family["serving"], kIndices) > 37);
  CHECK(pct(family["serving"], kIndices) < 43);
  CHECK(pct(family["short"], kIndices) > 37);
  CHECK(pct(family["short"], kIndices) < 43);
  CHECK(pct(family["long"], kIndices) > 17);
  CHECK(pct(family["long"], kIndices) < 23);
  // Serving cases with a prefix past 65536 are long contexts too.
  CHECK(long_context > family["long"]);
  // small and medium are the property budgets: short cases only.
  for (const char* budget : {"small", "medium"}) {
    const CaseStream p(gpu_config(21, budget));
    for (int64_t i = 0; i < 500; ++i) CHECK(p.at(i).family == "short");
  }
}

TEST_CASE("case stream: serving cases are K2.6 verify steps within their bounds", "[case-stream]") {
  const CaseStream s(gpu_config(22));
  const GenBudget b = GenBudget::serving();
  int64_t n = 0, headline = 0, one = 0, small = 0, big = 0, shared_t = 0, auto_splits = 0, long_p = 0, min_p = 0;
  std::map<std::string, int64_t> trees;
  std::map<int, int64_t> drafts;
  for (int64_t i = 0; i < kIndices; ++i) {
    const StreamCase c = s.at(i);
    if (c.family != "serving") continue;
    const Recipe& r = c.recipe;
    ++n;
    CAPTURE(r.to_line());
    REQUIRE_NOTHROW(vattn::check_within_budget(r, b));
    CHECK(r.heads == 8);
    CHECK(c.work <= 48000000);
    CHECK(sum_prefix(r) <= 262144);
    CHECK(sum_drafts(r) <= 1024);
    for (int t : r.drafts) {
      CHECK((t == 1 || t == 16 || t == 32 || t == 64));
      ++drafts[t];
    }
    for (int p : r.prefix) {
      CHECK(p <= 262144);
      long_p += p >= 65536;
      min_p += p >= 512;
    }
    ++trees[r.tree];
    const size_t B = r.prefix.size();
    headline += vattn::fuzz::is_headline_shape(r);
    one += B == 1;
    small += B >= 2 && B <= 8;
    big += B > 16;
    shared_t += std::all_of(r.drafts.begin(), r.drafts.end(), [&r](int t) { return t == r.drafts[0]; });
    auto_splits += r.splits == 0;
  }
  CAPTURE(n, headline, one, small, big, shared_t, auto_splits, long_p, min_p);
  REQUIRE(n > 1500);
  CHECK(pct(headline, n) > 17);  // a fifth drawn as the headline shape, a few more by chance
  CHECK(pct(headline, n) < 26);
  CHECK(pct(one, n) > 42);  // B = 1: the headline fifth and 35% of the rest
  CHECK(pct(one, n) < 52);
  CHECK(pct(small, n) > 27);
  CHECK(pct(big, n) > 6);
  CHECK(pct(shared_t, n) > 75);  // one T for the batch (single requests count too)
  CHECK(pct(auto_splits, n) > 80);
  CHECK(long_p > 0);
  for (int t : {1, 16, 32, 64}) CHECK(drafts[t] > 0);
  CHECK(trees.size() == 3);
  CHECK(pct(trees["chain"], n) > 40);
  CHECK(pct(trees["ddtree"], n) > 40);
  CHECK(pct(trees["random"], n) > 7);
  CHECK(pct(trees["random"], n) < 13);
}

TEST_CASE("case stream: every line parses back to itself, and the limits admit the case", "[case-stream]") {
  for (const char* budget : {"small", "medium", "large"}) {
    INFO("budget " << budget);
    const CaseStream s(gpu_config(23, budget));
    for (int64_t i = 0; i < (std::string(budget) == "large" ? kIndices : 1000); ++i) {
      const Recipe r = s.at(i).recipe;
      const std::string line = r.to_line();
      CAPTURE(line);
      REQUIRE_NOTHROW(Recipe::parse(line));
      CHECK(Recipe::parse(line).to_line() == line);
      CHECK(limits_admit(r));
      CHECK((r.sm_blocks == 0 || r.sms != 0));
    }
  }
}

TEST_CASE("case stream: plan limits are drawn per case, unset, exact or with headroom", "[case-stream]") {
  const CaseStream s(gpu_config(24));
  const GenBudget& env = s.envelope();
  std::map<std::string, int64_t> kind, splits, chosen;  // chosen: max_splits class where the kernel chooses
  int64_t forced = 0, forced_tight = 0, kernel_chooses = 0;
  for (int64_t i = 0; i < kIndices; ++i) {
    const Recipe r = s.at(i).recipe;
    CAPTURE(r.to_line());
    ++kind[vattn::fuzz::limits_class(r)];
    ++splits[vattn::fuzz::max_splits_class(r)];
    if (!r.limits.set()) continue;
    // Within what the worker could plan for: its envelope, and the partials workspace of the
    // envelope's plan for this head count.
    CHECK(r.limits.max_requests <= env.max_batch);
    CHECK(r.limits.max_total_drafts <= env.max_total_drafts);
    CHECK(r.limits.max_drafts_per_request <= env.max_drafts);
    CHECK(r.limits.max_splits * vattn::fuzz::partial_rows(r.limits.max_total_drafts, r.heads, r.limits.max_requests) <=
          env.max_splits * vattn::fuzz::partial_rows(env.max_total_drafts, r.heads, env.max_batch));
    if (r.splits > 0) {
      ++forced;
      forced_tight += r.limits.max_splits == r.splits;
    } else {
      ++kernel_chooses;
      ++chosen[vattn::fuzz::max_splits_class(r)];
    }
  }
  CAPTURE(kind["unset"], kind["exact"], kind["headroom"], splits["1"], splits["2-8"], splits[">8"], forced,
          forced_tight, kernel_chooses, chosen["1"], chosen["2-8"], chosen[">8"]);
  CHECK(pct(kind["unset"], kIndices) > 17);
  CHECK(pct(kind["unset"], kIndices) < 23);
  CHECK(pct(kind["exact"], kIndices) > 52);  // 55% drawn exact, and headroom that drew no room
  CHECK(pct(kind["headroom"], kIndices) > 15);
  CHECK(splits["unset"] == kind["unset"]);
  // Forced splits raise max_splits to at least their count; where the kernel chooses (the case
  // the limit is for), a fifth of the limits hold it to one split and 30% to 2-8.
  CHECK(pct(splits["1"], kIndices) > 8);
  CHECK(pct(splits["2-8"], kIndices) > 15);
  CHECK(pct(splits[">8"], kIndices) > 30);
  REQUIRE(kernel_chooses > 1000);
  CHECK(pct(chosen["1"], kernel_chooses) > 16);
  CHECK(pct(chosen["1"], kernel_chooses) < 24);
  CHECK(pct(chosen["2-8"], kernel_chooses) > 25);
  CHECK(pct(chosen["2-8"], kernel_chooses) < 35);
  CHECK(forced_tight > 0);  // max_splits raised to the forced count: the tightest legal plan
}

TEST_CASE("case stream: about a third of GPU cases plan as another GPU", "[case-stream]") {
  const CaseStream s(gpu_config(25));
  std::map<std::string, int64_t> sm;
  int64_t blocks = 0, drawn = 0;
  for (int64_t i = 0; i < kIndices; ++i) {
    const Recipe r = s.at(i).recipe;
    CAPTURE(r.to_line());
    ++sm[vattn::fuzz::sm_class(r)];
    if (r.sms == 0) {
      CHECK(r.sm_blocks == 0);
      continue;
    }
    ++drawn;
    CHECK(r.sms >= 1);
    CHECK(r.sms <= 512);
    if (r.sms == 188) CHECK(r.sm_blocks == 1);
    if (r.sm_blocks != 0) {
      CHECK(r.sm_blocks >= 1);
      CHECK(r.sm_blocks <= 4);
      blocks += r.sms != 188;
    }
  }
  CAPTURE(sm["native"], sm["1"], sm["132"], sm["188"], sm["other"], blocks);
  CHECK(pct(drawn, kIndices) > 32);
  CHECK(pct(drawn, kIndices) < 38);
  CHECK(pct(sm["188"], kIndices) > 9);  // 30% of 35%
  CHECK(pct(sm["132"], kIndices) > 7);  // 25% of 35%
  CHECK(sm["1"] > 0);
  CHECK(pct(sm["other"], kIndices) > 10);
  CHECK(blocks > 0);
  // Host targets plan nothing: no run parameter they would ignore reaches their lines.
  StreamConfig host;
  host.seed = 25;
  const CaseStream h(host);
  for (int64_t i = 0; i < 1000; ++i) {
    const Recipe r = h.at(i).recipe;
    CHECK_FALSE(r.limits.set());
    CHECK(r.sms == 0);
    CHECK(r.slot_base == 0);
    CHECK(r.fault == "none");
  }
}

TEST_CASE("case stream: run parameters do not move the case they are drawn for", "[case-stream]") {
  StreamConfig host;
  host.seed = 26;
  const CaseStream h(host), g(gpu_config(26));
  for (int64_t i = 0; i < 2000; ++i) {
    Recipe a = h.at(i).recipe, b = g.at(i).recipe;
    b.limits = Recipe::PlanLimits{};
    b.sms = b.sm_blocks = 0;
    b.slot_base = 0;
    b.fault = "none";
    CHECK(a.to_line() == b.to_line());
  }
}

TEST_CASE("case stream: the same seed and index give the same line", "[case-stream]") {
  const CaseStream a(gpu_config(27)), b(gpu_config(27));
  for (int64_t i = kIndices - 1; i >= 0; i -= 7) CHECK(a.at(i).recipe.to_line() == b.at(i).recipe.to_line());
  const CaseStream other(gpu_config(28));
  int same = 0;
  for (int64_t i = 0; i < 500; ++i) same += a.at(i).recipe.to_line() == other.at(i).recipe.to_line();
  CHECK(same < 5);
}

TEST_CASE("case stream: shrinking keeps the limits valid and can drop the plan", "[case-stream]") {
  const CaseStream s(gpu_config(29));
  int64_t checked = 0;
  for (int64_t i = 0; i < 600; ++i) {
    const Recipe r = s.at(i).recipe;
    if (!r.limits.set() && r.sms == 0) continue;
    ++checked;
    bool drops_limits = false, drops_sms = false;
    auto seq = vattn::shrink_recipe(r);
    while (auto c = seq.next()) {
      CAPTURE(r.to_line(), c->to_line());
      REQUIRE_NOTHROW(Recipe::parse(c->to_line()));
      CHECK(limits_admit(*c));
      drops_limits |= r.limits.set() && !c->limits.set() && c->prefix == r.prefix && c->drafts == r.drafts;
      drops_sms |= r.sms != 0 && c->sms == 0 && c->sm_blocks == 0;
    }
    CHECK(drops_limits == r.limits.set());
    CHECK(drops_sms == (r.sms != 0));
  }
  CHECK(checked > 300);
  // Down to one request of one draft, the limits still admit every step.
  Recipe r = Recipe::parse(
      "B=3 H=8 P=[4096,700,9000] T=[64,32,64] tree=ddtree splits=3 limits=3/160/64/3 sms=188 sm_blocks=1");
  for (int step = 0; step < 10000; ++step) {
    auto seq = vattn::shrink_recipe(r);
    auto next = seq.next();
    // Keep the plan: take the first candidate that still has the limits and the SM count.
    while (next && (!next->limits.set() || next->sms == 0)) next = seq.next();
    if (!next) break;
    r = *next;
    REQUIRE_NOTHROW(Recipe::parse(r.to_line()));
  }
  CHECK(r.to_line() ==
        "B=1 H=1 P=[0] T=[1] tree=chain profile=uniform layout=contiguous poison=0 seed=1 scale=0.1446796 splits=0 "
        "limits=3/160/64/3 sms=188");
}

TEST_CASE("case stream: fit_to_budget trims any shape into a budget", "[case-stream]") {
  for (const GenBudget& b :
       {GenBudget::small(), GenBudget::medium(), GenBudget::serving(), GenBudget::long_context()}) {
    INFO(b.describe());
    for (uint64_t bits = 0; bits < 40; ++bits) {
      Recipe r;
      r.heads = static_cast<int>(1 + bits * 37 % 200);
      const size_t B = 1 + bits * 13 % 150;
      for (size_t i = 0; i < B; ++i) {
        r.prefix.push_back(static_cast<int>((i * 7919 + bits * 104729) % 300000));
        r.drafts.push_back(static_cast<int>(1 + (i * 31 + bits) % 1025));
      }
      r.splits = static_cast<int>(bits * 11 % 257);
      vattn::fuzz::fit_to_budget(r, b, bits);
      CAPTURE(r.to_line());
      CHECK_NOTHROW(vattn::check_within_budget(r, b));
    }
  }
  // A shape that fits is left as it is.
  Recipe fits = Recipe::parse("B=2 H=8 P=[4096,512] T=[64,16] tree=ddtree");
  const std::string before = fits.to_line();
  vattn::fuzz::fit_to_budget(fits, GenBudget::serving(), 5);
  CHECK(fits.to_line() == before);
}

namespace {

vattn::fuzz::MixShape shape(int heads, std::vector<int> prefix, std::vector<int> drafts, bool tree, int64_t count) {
  vattn::fuzz::MixShape s;
  s.heads = heads;
  s.prefix = std::move(prefix);
  s.drafts = std::move(drafts);
  s.tree = tree;
  s.count = count;
  return s;
}

}  // namespace

TEST_CASE("case stream: a mix table replaces its share of cases with captured shapes", "[case-stream]") {
  auto table = std::make_shared<vattn::fuzz::MixTable>();
  table->shapes = {shape(8, {4000}, {64}, true, 3), shape(8, {1000, 20000}, {16, 16}, false, 1)};
  table->share_percent = 50;
  StreamConfig sc = gpu_config(30);
  sc.mix = table;
  const CaseStream s(sc), plain(gpu_config(30));
  int64_t captured = 0, first = 0, second = 0, jittered = 0, same_as_plain = 0;
  for (int64_t i = 0; i < kIndices; ++i) {
    const StreamCase c = s.at(i);
    const Recipe& r = c.recipe;
    CAPTURE(r.to_line());
    CHECK_NOTHROW(vattn::check_within_budget(r, s.envelope()));
    CHECK(Recipe::parse(r.to_line()).to_line() == r.to_line());
    if (c.family != "captured") {
      same_as_plain += r.to_line() == plain.at(i).recipe.to_line();
      continue;
    }
    ++captured;
    REQUIRE(r.heads == 8);
    if (r.prefix.size() == 1) {
      ++first;
      CHECK(r.drafts == std::vector<int>{64});
      CHECK(std::abs(r.prefix[0] - 4000) <= 4000 / 32);
      CHECK((r.tree == "ddtree" || r.tree == "random"));
      jittered += r.prefix[0] != 4000;
    } else {
      ++second;
      REQUIRE(r.prefix.size() == 2);
      CHECK(r.drafts == std::vector<int>{16, 16});
      CHECK(std::abs(r.prefix[0] - 1000) <= 1000 / 32);
      CHECK(std::abs(r.prefix[1] - 20000) <= 20000 / 32);
      CHECK(r.tree == "chain");
    }
  }
  CAPTURE(captured, first, second, jittered, same_as_plain);
  CHECK(pct(captured, kIndices) > 47);
  CHECK(pct(captured, kIndices) < 53);
  CHECK(pct(first, captured) > 72);  // counts 3 : 1
  CHECK(pct(first, captured) < 78);
  CHECK(pct(jittered, first) > 65);  // three in four jittered, a few by 0
  CHECK(pct(jittered, first) < 80);
  CHECK(same_as_plain == kIndices - captured);  // the other cases are the default mix's, as they were
  // A budget too small for a shape gets the shape trimmed into it.
  StreamConfig small = gpu_config(31, "small");
  small.mix = table;
  const CaseStream t(small);
  for (int64_t i = 0; i < 500; ++i) CHECK_NOTHROW(vattn::check_within_budget(t.at(i).recipe, t.envelope()));
}

TEST_CASE("case stream: a mix table outside the recipe vocabulary is refused, naming the field", "[case-stream]") {
  auto refused = [](const vattn::fuzz::MixTable& t, const std::string& field) {
    try {
      vattn::fuzz::check_mix_table(t, "somewhere/mix.json");
      FAIL("accepted; expected a refusal naming " << field);
    } catch (const vattn::InputError& e) {
      CHECK(e.file() == "somewhere/mix.json");
      CHECK(e.field() == field);
    }
  };
  vattn::fuzz::MixTable good;
  good.shapes = {shape(8, {4096}, {64}, true, 1), shape(8, {1, 2}, {1, 1}, false, 7)};
  CHECK_NOTHROW(vattn::fuzz::check_mix_table(good, "x"));
  vattn::fuzz::MixTable t = good;
  t.shapes.clear();
  refused(t, "shapes");
  t = good;
  t.share_percent = 0;
  refused(t, "share_percent");
  t = good;
  t.shapes[1].heads = 1025;
  refused(t, "shapes[1].H");
  t = good;
  t.shapes[1].prefix[1] = -1;
  refused(t, "shapes[1].P[1]");
  t = good;
  t.shapes[0].drafts[0] = 4097;
  refused(t, "shapes[0].T[0]");
  t = good;
  t.shapes[0].drafts.push_back(1);
  refused(t, "shapes[0].T");
  t = good;
  t.shapes[1].count = 0;
  refused(t, "shapes[1].count");
  t = good;
  t.shapes.assign(vattn::fuzz::kMaxMixShapes + 1, good.shapes[0]);
  refused(t, "shapes");
  StreamConfig sc;
  sc.mix = std::make_shared<vattn::fuzz::MixTable>();
  CHECK_THROWS_AS(CaseStream(sc), vattn::InputError);
}
