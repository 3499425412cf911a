// SPDX-License-Identifier: Apache-2.0
// Generators: recipe lines, tree shapes, layouts, value profiles, poison, determinism.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include <rapidcheck.h>
#include <rapidcheck/catch.h>
#include <catch2/catch.hpp>

#include "vattn/case/bf16.h"
#include "vattn/case/case.h"
#include "vattn/casefile/case_file.h"
#include "vattn/gen/gen_rng.h"
#include "vattn/gen/gen_rows.h"
#include "vattn/gen/generate.h"

using vattn::Case;
using vattn::InputError;
using vattn::Recipe;

namespace {

const std::vector<std::string> kTrees = {"chain", "random", "star", "ddtree", "deep", "wide", "padded"};
const std::vector<std::string> kProfiles = {"uniform", "k26", "adversarial", "huge", "ties", "tiny"};
const std::vector<std::string> kLayouts = {"contiguous", "scattered", "reversed", "sparse"};

Recipe small_recipe(const std::string& tree, const std::string& profile, const std::string& layout, bool poison,
                    uint64_t seed = 7) {
  Recipe r;
  r.heads = 3;
  r.prefix = {0, 77, 129};
  r.drafts = {6, 17, 5};  // request 0: no prefix, so its padded rows see nothing
  r.tree = tree;
  r.profile = profile;
  r.layout = layout;
  r.poison = poison;
  r.seed = seed;
  return r;
}

// The field an InputError names, or "(no error)".
template <class F>
std::string error_field(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.field();
  }
  return "(no error)";
}

bool all_finite(const uint16_t* row, size_t n) {
  for (size_t d = 0; d < n; ++d) {
    if (!std::isfinite(vattn::bf16_to_float(row[d]))) return false;
  }
  return true;
}
bool none_finite(const uint16_t* row, size_t n) {
  for (size_t d = 0; d < n; ++d) {
    if (std::isfinite(vattn::bf16_to_float(row[d]))) return false;
  }
  return true;
}

// sm_scale * <q[row, h], key> in float64 over the bf16 values.
double logit(const Case& c, int64_t q_row, int h, const uint16_t* key) {
  const uint16_t* q = &c.q[(static_cast<size_t>(q_row) * c.num_heads + h) * c.d_qk];
  double s = 0;
  for (int d = 0; d < c.d_qk; ++d) s += double(vattn::bf16_to_float(q[d])) * vattn::bf16_to_float(key[d]);
  return c.sm_scale * s;
}
const uint16_t* prefix_key(const Case& c, int b, int p) {
  const size_t slot = static_cast<size_t>(c.kv_indptr[b]) + static_cast<size_t>(p);
  return &c.kv_pool[static_cast<size_t>(c.kv_indices[slot]) * c.d_qk];
}

}  // namespace

TEST_CASE("recipe lines print and parse back exactly", "[generate]") {
  const std::string line =
      "B=2 H=8 P=[4099,0] T=[17,1] tree=random profile=k26 layout=scattered poison=0 seed=7 scale=0.1446796 splits=3";
  const Recipe r = Recipe::parse(line);
  CHECK(r.prefix == std::vector<int>{4099, 0});
  CHECK(r.drafts == std::vector<int>{17, 1});
  CHECK(r.heads == 8);
  CHECK(r.tree == "random");
  CHECK(r.profile == "k26");
  CHECK(r.seed == 7);
  CHECK(r.sm_scale == 0.1446796);
  CHECK(r.splits == 3);
  CHECK(r.to_line() == line);

  // Keys in any order, B implied, single values broadcast; printing is canonical.
  const Recipe s = Recipe::parse("seed=18446744073709551615 T=[16] P=[100,200,300] tree=ddtree poison=1");
  CHECK(s.drafts == std::vector<int>{16, 16, 16});
  CHECK(s.seed == 18446744073709551615ull);
  CHECK(s.poison);
  CHECK(s.to_line() ==
        "B=3 H=8 P=[100,200,300] T=[16] tree=ddtree profile=uniform layout=scattered poison=1 "
        "seed=18446744073709551615 scale=0.1446796 splits=0");
  CHECK(Recipe::parse(s.to_line()).to_line() == s.to_line());
  CHECK(Recipe::parse("B=4 P=[5] T=[2]").prefix == std::vector<int>{5, 5, 5, 5});
}

TEST_CASE("recipe round trip holds for arbitrary recipes", "[generate]") {
  rc::prop("parse(to_line(r)) == r", [] {
    Recipe r;
    const int B = *rc::gen::inRange(1, 40);
    r.prefix = *rc::gen::container<std::vector<int>>(static_cast<size_t>(B), rc::gen::inRange(0, 300000));
    r.drafts = *rc::gen::container<std::vector<int>>(static_cast<size_t>(B), rc::gen::inRange(1, 1026));
    r.heads = *rc::gen::inRange(1, 129);
    r.tree = *rc::gen::elementOf(kTrees);
    r.profile = *rc::gen::elementOf(kProfiles);
    r.layout = *rc::gen::elementOf(kLayouts);
    r.poison = *rc::gen::arbitrary<bool>();
    r.seed = *rc::gen::arbitrary<uint64_t>();
    r.sm_scale = *rc::gen::map(rc::gen::inRange(1, 1 << 30), [](int v) { return v * 1e-7 / 3.0; });
    r.splits = *rc::gen::inRange(0, 257);  // 0..256, the recipe limit
    const std::string line = r.to_line();
    const Recipe back = Recipe::parse(line);
    RC_ASSERT(back.prefix == r.prefix);
    RC_ASSERT(back.drafts == r.drafts);
    RC_ASSERT(back.heads == r.heads);
    RC_ASSERT(back.tree == r.tree);
    RC_ASSERT(back.profile == r.profile);
    RC_ASSERT(back.layout == r.layout);
    RC_ASSERT(back.poison == r.poison);
    RC_ASSERT(back.seed == r.seed);
    RC_ASSERT(back.sm_scale == r.sm_scale);
    RC_ASSERT(back.splits == r.splits);
    RC_ASSERT(back.to_line() == line);
  });
}

TEST_CASE("recipe parse errors name the key", "[generate]") {
  CHECK(error_field([] { Recipe::parse(""); }) == "recipe");
  CHECK(error_field([] { Recipe::parse("T=[1]"); }) == "P");
  CHECK(error_field([] { Recipe::parse("P=[1]"); }) == "T");
  CHECK(error_field([] { Recipe::parse("P=[1,2,3] T=[1,2]"); }) == "T");
  CHECK(error_field([] { Recipe::parse("B=2 P=[1,2,3] T=[1]"); }) == "P");
  CHECK(error_field([] { Recipe::parse("P=[1,x] T=[1]"); }) == "P");
  CHECK(error_field([] { Recipe::parse("P=1,2 T=[1]"); }) == "P");
  CHECK(error_field([] { Recipe::parse("P=[-1] T=[1]"); }) == "P");
  CHECK(error_field([] { Recipe::parse("P=[1] T=[0]"); }) == "T");
  CHECK(error_field([] { Recipe::parse("P=[1] T=[1] H=0"); }) == "H");
  CHECK(error_field([] { Recipe::parse("P=[1] T=[1] tree=bush"); }) == "tree");
  CHECK(error_field([] { Recipe::parse("P=[1] T=[1] profile=nice"); }) == "profile");
  CHECK(error_field([] { Recipe::parse("P=[1] T=[1] layout=paged"); }) == "layout");
  CHECK(error_field([] { Recipe::parse("P=[1] T=[1] poison=2"); }) == "poison");
  CHECK(error_field([] { Recipe::parse("P=[1] T=[1] seed=-1"); }) == "seed");
  CHECK(error_field([] { Recipe::parse("P=[1] T=[1] scale=nan"); }) == "scale");
  CHECK(error_field([] { Recipe::parse("P=[1] T=[1] scale=0"); }) == "scale");
  CHECK(error_field([] { Recipe::parse("P=[1] T=[1] splits=1.5"); }) == "splits");
  CHECK(error_field([] { Recipe::parse("P=[1] T=[1] colour=red"); }) == "colour");
  CHECK(error_field([] { Recipe::parse("P=[1] T=[1] P=[2]"); }) == "P");
  CHECK(error_field([] { Recipe::parse("P=[1] T=[1] lonely"); }) == "lonely");
  CHECK(error_field([] { Recipe::parse("P=[2147483647,1] T=[1]"); }) == "P");
  // The limits vattn gen and replay --splits use; decimal numbers only (strtod takes hex and inf).
  CHECK(error_field([] { Recipe::parse("P=[1073741825] T=[1]"); }) == "P");
  CHECK(error_field([] { Recipe::parse("P=[1] T=[1] splits=257"); }) == "splits");
  CHECK(error_field([] { Recipe::parse("P=[1] T=[1] scale=0x10"); }) == "scale");
  CHECK(error_field([] { Recipe::parse("P=[1] T=[1] scale=inf"); }) == "scale");
  CHECK(error_field([] { Recipe::parse("P=[1] T=[1] scale=1e"); }) == "scale");
  CHECK(error_field([] { Recipe::parse("P=[1] T=[1] scale=.5."); }) == "scale");
  CHECK(Recipe::parse("P=[1073741824] T=[1] splits=256 scale=1.5e-1").sm_scale == 0.15);
  CHECK(Recipe::parse("P=[1] T=[1] scale=.25").sm_scale == 0.25);
}

TEST_CASE("recipe lines carry the caller's plan: limits, SM count, blocks per SM", "[generate]") {
  const std::string line =
      "B=2 H=8 P=[4099,0] T=[17,1] tree=random profile=k26 layout=scattered poison=0 seed=7 scale=0.1446796 splits=3 "
      "limits=2/18/17/3 sms=188 sm_blocks=1";
  const Recipe r = Recipe::parse(line);
  CHECK(r.limits.max_requests == 2);
  CHECK(r.limits.max_total_drafts == 18);
  CHECK(r.limits.max_drafts_per_request == 17);
  CHECK(r.limits.max_splits == 3);
  CHECK(r.sms == 188);
  CHECK(r.sm_blocks == 1);
  CHECK(r.to_line() == line);
  // Unset: nothing printed, so older lines read and print as before.
  const Recipe plain = Recipe::parse("P=[5] T=[2]");
  CHECK_FALSE(plain.limits.set());
  CHECK(plain.to_line().find("limits") == std::string::npos);
  CHECK(plain.to_line().find("sms") == std::string::npos);
  // The limits must admit the case (exact limits are the tightest a caller may pass).
  CHECK(Recipe::parse("P=[5,6] T=[2,3] limits=2/5/3/1").limits.max_total_drafts == 5);
  CHECK(error_field([] { Recipe::parse("P=[5,6] T=[2,3] limits=1/5/3/1"); }) == "limits");
  CHECK(error_field([] { Recipe::parse("P=[5,6] T=[2,3] limits=2/4/3/1"); }) == "limits");
  CHECK(error_field([] { Recipe::parse("P=[5,6] T=[2,3] limits=2/5/2/1"); }) == "limits");
  CHECK(error_field([] { Recipe::parse("P=[5,6] T=[2,3] splits=2 limits=2/5/3/1"); }) == "limits");
  CHECK(error_field([] { Recipe::parse("P=[5] T=[2] limits=1/2/2"); }) == "limits");
  CHECK(error_field([] { Recipe::parse("P=[5] T=[2] limits=1/2/2/0"); }) == "limits");
  CHECK(error_field([] { Recipe::parse("P=[5] T=[2] limits=1/2/2/257"); }) == "limits");
  CHECK(error_field([] { Recipe::parse("P=[5] T=[2] limits=1/x/2/1"); }) == "limits");
  CHECK(error_field([] { Recipe::parse("P=[5] T=[2] sms=0"); }) == "sms");
  CHECK(error_field([] { Recipe::parse("P=[5] T=[2] sms=513"); }) == "sms");
  CHECK(error_field([] { Recipe::parse("P=[5] T=[2] sm_blocks=1"); }) == "sm_blocks");
  CHECK(error_field([] { Recipe::parse("P=[5] T=[2] sms=1 sm_blocks=33"); }) == "sm_blocks");
  CHECK(Recipe::parse("P=[5] T=[2] sms=512 sm_blocks=32").sm_blocks == 32);
}

TEST_CASE("every tree kind gives parents before children and an ancestor-closed mask", "[generate]") {
  for (const auto& kind : kTrees) {
    for (int t : {1, 2, 3, 15, 16, 17, 64, 65, 1025}) {
      for (uint64_t seed : {1ull, 2ull, 99ull}) {
        INFO(kind << " t=" << t << " seed=" << seed);
        const auto par = vattn::make_tree(kind, t, seed);
        REQUIRE(par.size() == static_cast<size_t>(t));
        CHECK(par == vattn::make_tree(kind, t, seed));
        REQUIRE(par[0] == -1);
        for (int i = 1; i < t; ++i) {
          const int32_t p = par[static_cast<size_t>(i)];
          REQUIRE((p == vattn::kPaddedNode || (p >= 0 && p < i)));
          if (p >= 0) REQUIRE(par[static_cast<size_t>(p)] != vattn::kPaddedNode);
        }
        // Ancestor-closed: a node sees itself and exactly what its parent sees; padded nodes nothing.
        const auto m = vattn::mask_from_parents(par);
        bool closed = true;
        for (int i = 0; i < t; ++i) {
          const int32_t p = par[static_cast<size_t>(i)];
          for (int j = 0; j < t; ++j) {
            bool want = false;
            if (p != vattn::kPaddedNode) want = j == i || (p >= 0 && m[static_cast<size_t>(p) * t + j] != 0);
            closed = closed && (m[static_cast<size_t>(i) * t + j] != 0) == want;
          }
        }
        REQUIRE(closed);
      }
    }
  }
}

TEST_CASE("tree kinds have their shapes", "[generate]") {
  const auto depth_of = [](const std::vector<int32_t>& par) {
    std::vector<int> d(par.size(), 0);
    int deepest = 0;
    for (size_t i = 0; i < par.size(); ++i) {
      d[i] = par[i] >= 0 ? d[static_cast<size_t>(par[i])] + 1 : 0;
      deepest = std::max(deepest, d[i]);
    }
    return deepest;
  };
  const auto max_children = [](const std::vector<int32_t>& par) {
    std::vector<int> n(par.size(), 0);
    for (int32_t p : par) {
      if (p >= 0) ++n[static_cast<size_t>(p)];
    }
    return *std::max_element(n.begin(), n.end());
  };
  const auto chain = vattn::make_tree("chain", 65, 3);
  for (int i = 1; i < 65; ++i) CHECK(chain[static_cast<size_t>(i)] == i - 1);
  const auto star = vattn::make_tree("star", 65, 3);
  CHECK(depth_of(star) == 1);
  CHECK(max_children(star) == 64);
  CHECK(depth_of(vattn::make_tree("wide", 1025, 3)) <= 2);
  CHECK(max_children(vattn::make_tree("wide", 1025, 3)) >= 16);
  CHECK(depth_of(vattn::make_tree("deep", 1025, 3)) >= 500);
  CHECK(max_children(vattn::make_tree("deep", 1025, 3)) >= 2);
  const auto dd = vattn::make_tree("ddtree", 1025, 3);
  CHECK(max_children(dd) >= 2);
  CHECK(depth_of(dd) >= 4);
  CHECK(depth_of(dd) < 1024);
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const auto pad = vattn::make_tree("padded", 17, seed);
    const auto first_pad = std::find(pad.begin(), pad.end(), vattn::kPaddedNode);
    REQUIRE(first_pad != pad.end());
    CHECK(first_pad != pad.begin());
    CHECK(std::all_of(first_pad, pad.end(), [](int32_t p) { return p == vattn::kPaddedNode; }));
  }
  CHECK(error_field([] { vattn::make_tree("bush", 4, 1); }) == "tree");
  CHECK(error_field([] { vattn::make_tree("chain", 0, 1); }) == "T");
}

TEST_CASE("every profile and layout generates a valid case", "[generate]") {
  for (const auto& profile : kProfiles) {
    for (const auto& layout : kLayouts) {
      for (bool poison : {false, true}) {
        INFO(profile << " " << layout << " poison=" << poison);
        const Case c = vattn::generate_case(small_recipe("padded", profile, layout, poison), "c");
        REQUIRE_NOTHROW(vattn::validate(c));
        CHECK(c.num_requests() == 3);
        CHECK(c.n_q() == 28);
        CHECK(c.kv_indptr.back() == 206);
        CHECK(c.d_qk == 576);
        CHECK(c.d_v == 512);
        CHECK(c.draft_parent.empty());  // padded trees cannot be written as parents
        CHECK(Recipe::parse(c.recipe).to_line() == c.recipe);
        std::set<int32_t> rows(c.kv_indices.begin(), c.kv_indices.end());
        CHECK(rows.size() == c.kv_indices.size());  // each token has its own row
        if (layout == "sparse") {
          CHECK(c.n_rows() == 4 * 206 + 16);
          CHECK(c.kv_slot_ids.size() == static_cast<size_t>(c.n_rows()));
        } else if (layout == "scattered") {
          REQUIRE(c.kv_slot_ids.size() == static_cast<size_t>(c.n_rows()));
          CHECK(std::is_sorted(c.kv_slot_ids.begin(), c.kv_slot_ids.end()));
          CHECK(std::adjacent_find(c.kv_slot_ids.begin(), c.kv_slot_ids.end()) == c.kv_slot_ids.end());
          CHECK(!std::is_sorted(c.kv_indices.begin(), c.kv_indices.end()));
        } else {
          CHECK(c.kv_slot_ids.empty());
          if (layout == "contiguous") CHECK(std::is_sorted(c.kv_indices.begin(), c.kv_indices.end()));
          if (layout == "reversed") CHECK(std::is_sorted(c.kv_indices.rbegin(), c.kv_indices.rend()));
        }
        if (!(poison || profile == "adversarial") && layout != "sparse") CHECK(c.n_rows() == 206);
      }
    }
  }
  for (const auto& tree : kTrees) {
    const Case c = vattn::generate_case(small_recipe(tree, "uniform", "scattered", false), "c");
    CHECK(c.draft_parent.empty() == (tree == "padded"));
  }
}

TEST_CASE("layouts move rows, never values (slot permutation)", "[generate]") {
  for (const auto& profile : kProfiles) {
    const Case a = vattn::generate_case(small_recipe("ddtree", profile, "contiguous", false), "a");
    for (const auto& layout : {"scattered", "reversed", "sparse"}) {
      INFO(profile << " " << layout);
      const Case b = vattn::generate_case(small_recipe("ddtree", profile, layout, true), "b");
      CHECK(a.q == b.q);
      CHECK(a.kv_draft == b.kv_draft);
      for (int r = 0; r < 3; ++r) {
        for (int p = 0; p < a.prefix_len(r); ++p) {
          REQUIRE(std::equal(prefix_key(a, r, p), prefix_key(a, r, p) + a.d_qk, prefix_key(b, r, p)));
        }
      }
    }
  }
}

TEST_CASE("the same recipe gives bit-identical tensors", "[generate]") {
  for (const auto& profile : kProfiles) {
    INFO(profile);
    const Recipe r = small_recipe("ddtree", profile, "sparse", true, 12345);
    const Case a = vattn::generate_case(r, "a"), b = vattn::generate_case(Recipe::parse(r.to_line()), "b");
    CHECK(a.q == b.q);
    CHECK(a.kv_pool == b.kv_pool);
    CHECK(a.kv_draft == b.kv_draft);
    CHECK(a.kv_indices == b.kv_indices);
    CHECK(a.kv_slot_ids == b.kv_slot_ids);
    CHECK(a.draft_mask == b.draft_mask);
    CHECK(a.recipe == b.recipe);
    const Case other = vattn::generate_case(small_recipe("ddtree", profile, "sparse", true, 12346), "c");
    CHECK(a.kv_pool != other.kv_pool);
  }
}

TEST_CASE("poison fills exactly what no K(b,i) contains", "[generate]") {
  for (const auto& profile : kProfiles) {
    for (const auto& layout : kLayouts) {
      for (bool poison : {false, true}) {
        INFO(profile << " " << layout << " poison=" << poison);
        const Case c = vattn::generate_case(small_recipe("padded", profile, layout, poison), "c");
        const bool poisoned = poison || profile == "adversarial";
        const size_t dqk = static_cast<size_t>(c.d_qk), H = static_cast<size_t>(c.num_heads);
        std::vector<char> referenced(static_cast<size_t>(c.n_rows()), 0);
        for (int32_t r : c.kv_indices) referenced[static_cast<size_t>(r)] = 1;
        int64_t unreferenced = 0;
        for (int64_t r = 0; r < c.n_rows(); ++r) {
          const uint16_t* row = &c.kv_pool[static_cast<size_t>(r) * dqk];
          if (referenced[static_cast<size_t>(r)]) {
            REQUIRE(all_finite(row, dqk));
          } else {
            ++unreferenced;
            REQUIRE((poisoned ? none_finite(row, dqk) : all_finite(row, dqk)));
          }
        }
        if (poisoned) CHECK(unreferenced > 0);
        const auto par = [&](int b, int i) {
          // padded rows are exactly the rows with a zero diagonal
          return !c.visible(b, i, i);
        };
        int padded_rows = 0;
        for (int b = 0; b < c.num_requests(); ++b) {
          for (int i = 0; i < c.drafts(b); ++i) {
            const size_t row = static_cast<size_t>(c.qo_indptr[b]) + static_cast<size_t>(i);
            const bool padded = par(b, i);
            padded_rows += padded;
            const bool bad_expected = padded && poisoned;
            REQUIRE(
                (bad_expected ? none_finite(&c.kv_draft[row * dqk], dqk) : all_finite(&c.kv_draft[row * dqk], dqk)));
            // A padded row's query still attends the prefix, so it is poisoned only without one.
            const bool q_bad_expected = bad_expected && c.prefix_len(b) == 0;
            REQUIRE((q_bad_expected ? none_finite(&c.q[row * H * dqk], H * dqk)
                                    : all_finite(&c.q[row * H * dqk], H * dqk)));
          }
        }
        CHECK(padded_rows > 0);
      }
    }
  }
}

TEST_CASE("value profiles have the features they promise", "[generate]") {
  SECTION("k26: the sink takes a large share, rope pairs lie on circles") {
    Recipe r = small_recipe("chain", "k26", "scattered", false);
    r.prefix = {1000, 30000};
    r.drafts = {4, 4};
    const Case c = vattn::generate_case(r, "k26");
    for (int b = 0; b < 2; ++b) {
      const int64_t row = c.qo_indptr[b];
      std::vector<double> s;
      s.reserve(static_cast<size_t>(c.prefix_len(b)));
      for (int p = 0; p < c.prefix_len(b); ++p) s.push_back(logit(c, row, 0, prefix_key(c, b, p)));
      const double mx = *std::max_element(s.begin(), s.end());
      double sum = 0;
      for (double x : s) sum += std::exp(x - mx);
      const double share = std::exp(s[0] - mx) / sum;
      INFO("request " << b << " sink share " << share);
      CHECK(share > 0.3);
      CHECK(share < 0.99);
    }
    // Pair i of the rope part: same amplitude at every position (up to bf16 rounding).
    const auto radius = [&](int p, int i) {
      const uint16_t* k = prefix_key(c, 1, p);
      const double x = vattn::bf16_to_float(k[512 + 2 * i]), y = vattn::bf16_to_float(k[513 + 2 * i]);
      return std::sqrt(x * x + y * y);
    };
    for (int i = 0; i < 32; i += 5) CHECK(radius(17, i) == Approx(radius(29999, i)).epsilon(0.01));
  }
  SECTION("adversarial: a few logits near the float32 exp overflow edge") {
    const Case c = vattn::generate_case(small_recipe("chain", "adversarial", "contiguous", true), "adv");
    double top = -1e300;
    int near_edge = 0;
    for (int b = 1; b < 3; ++b) {
      for (int p = 0; p < c.prefix_len(b); ++p) {
        const double s = logit(c, c.qo_indptr[b], 0, prefix_key(c, b, p));
        top = std::max(top, s);
        near_edge += s > 75;
      }
    }
    CHECK(top > 78);
    CHECK(top < 88.7);
    CHECK(near_edge >= 2);
    CHECK(near_edge <= 6);
  }
  SECTION("huge: every logit far from zero, both signs across heads") {
    const Case c = vattn::generate_case(small_recipe("chain", "huge", "contiguous", false), "huge");
    for (int p = 0; p < c.prefix_len(2); ++p) {
      REQUIRE(logit(c, c.qo_indptr[2], 0, prefix_key(c, 2, p)) > 50);
      REQUIRE(logit(c, c.qo_indptr[2], 1, prefix_key(c, 2, p)) < -50);
    }
  }
  SECTION("ties: three distinct KV rows in all") {
    const Case c = vattn::generate_case(small_recipe("chain", "ties", "sparse", false), "ties");
    std::set<std::vector<uint16_t>> distinct;
    for (int b = 0; b < 3; ++b) {
      for (int p = 0; p < c.prefix_len(b); ++p)
        distinct.insert(std::vector<uint16_t>(prefix_key(c, b, p), prefix_key(c, b, p) + 576));
    }
    CHECK(distinct.size() == 3);
  }
  SECTION("tiny: magnitudes ~1e-30 with bf16 subnormals") {
    const Case c = vattn::generate_case(small_recipe("chain", "tiny", "contiguous", false), "tiny");
    int subnormal = 0;
    float largest = 0;
    for (uint16_t v : c.kv_pool) {
      const float x = std::fabs(vattn::bf16_to_float(v));
      largest = std::max(largest, x);
      subnormal += x > 0 && x < 0x1.0p-126f;
    }
    CHECK(largest < 1.1e-30f);
    CHECK(largest > 1e-31f);
    CHECK(subnormal > 100);
  }
}

TEST_CASE("generate_case rejects impossible recipes by field", "[generate]") {
  Recipe r = small_recipe("chain", "uniform", "contiguous", false);
  r.drafts = {1, 2};
  CHECK(error_field([&] { vattn::generate_case(r); }) == "T");
  r = small_recipe("chain", "uniform", "contiguous", false);
  r.prefix = {1 << 30, 1 << 30};
  r.drafts = {1, 1};
  CHECK(error_field([&] { vattn::generate_case(r); }) == "P");  // kv_indptr would overflow int32
  r.prefix = {1 << 28, 0};
  CHECK(error_field([&] { vattn::generate_case(r); }) == "P");  // 300 GB of pool
  r = small_recipe("chain", "uniform", "contiguous", false);
  r.layout = "paged";
  CHECK(error_field([&] { vattn::generate_case(r); }) == "layout");
}

TEST_CASE("every fixture is what its recipe generates today", "[generate][fixtures]") {
  const char* env = std::getenv("VATTN_SOURCE_DIR");
  const std::filesystem::path dir = std::filesystem::path(env ? env : VATTN_SOURCE_DIR) / "fixtures";
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".h5") files.push_back(e.path());
  }
  REQUIRE(files.size() >= 4);
  for (const auto& path : files) {
    const auto file = vattn::read_case_file(path.string());
    CHECK(file.header.source.rfind("synthetic:", 0) == 0);
    for (const Case& stored : file.cases) {
      INFO(path.string() << " " << stored.name << " recipe: " << stored.recipe);
      REQUIRE(!stored.recipe.empty());
      const Case now = vattn::generate_case(Recipe::parse(stored.recipe), stored.name);
      CHECK(now.num_heads == stored.num_heads);
      CHECK(now.sm_scale == stored.sm_scale);
      CHECK(now.q == stored.q);
      CHECK(now.kv_pool == stored.kv_pool);
      CHECK(now.kv_draft == stored.kv_draft);
      CHECK(now.kv_indices == stored.kv_indices);
      CHECK(now.kv_indptr == stored.kv_indptr);
      CHECK(now.kv_slot_ids == stored.kv_slot_ids);
      CHECK(now.qo_indptr == stored.qo_indptr);
      CHECK(now.draft_mask == stored.draft_mask);
      CHECK(now.draft_mask_indptr == stored.draft_mask_indptr);
      CHECK(now.draft_parent == stored.draft_parent);
      CHECK(stored.find_output("oracle_fp64") != nullptr);
    }
  }
}

// gen_rows.cpp is compiled twice on x86-64 (AVX-512 and the baseline) and one is picked at load
// time; whichever runs here must give the bits of the plain loops below, or a recipe would make
// different cases on different CPUs.
TEST_CASE("the row fillers give the bits of their scalar definitions", "[generate]") {
  using vattn::gen::Rng;
  constexpr int n = 576, pairs = 32;
  std::vector<double> scale(n), centre(n), theta(pairs), amp(pairs), phase(pairs);
  Rng setup(99, 1);
  for (double& x : scale) x = 0.5 + 20 * setup.uniform01();
  for (double& x : centre) x = setup.chance(0.5) ? 1.0 : -1.0;
  for (int i = 0; i < pairs; ++i) {
    theta[static_cast<size_t>(i)] = std::ldexp(1.0, -i / 2);
    amp[static_cast<size_t>(i)] = 0.5 + setup.uniform01();
    phase[static_cast<size_t>(i)] = 6.283185307179586 * setup.uniform01();
  }
  for (uint64_t seed = 0; seed < 20; ++seed) {
    INFO("seed " << seed);
    const int len = seed % 2 ? n : n - 1 - static_cast<int>(seed);  // odd lengths and tails too
    std::vector<uint16_t> got(n, 0), want(n, 0);
    Rng a(seed, 5), b(seed, 5);
    const float fscale = seed % 3 ? 1.0f : 1e-30f;
    vattn::gen::fill_uniform(a, got.data(), len, fscale);
    for (int d = 0; d < len; d += 2) {
      float x, y;
      b.uniform_pm1_pair(x, y);
      want[static_cast<size_t>(d)] = vattn::float_to_bf16(x * fscale);
      if (d + 1 < len) want[static_cast<size_t>(d) + 1] = vattn::float_to_bf16(y * fscale);
    }
    CHECK(got == want);
    vattn::gen::fill_scaled_normalish(a, scale.data(), got.data(), len);
    for (int d = 0; d < len; ++d)
      want[static_cast<size_t>(d)] = vattn::double_to_bf16(scale[static_cast<size_t>(d)] * b.normalish());
    CHECK(got == want);
    vattn::gen::fill_near(a, 70.0 / (seed + 1), centre.data(), -0.5, 0.5, got.data(), len);
    for (int d = 0; d < len; ++d)
      want[static_cast<size_t>(d)] =
          vattn::double_to_bf16(70.0 / (seed + 1) * (centre[static_cast<size_t>(d)] + b.uniform(-0.5, 0.5)));
    CHECK(got == want);
    CHECK(a.next() == b.next());  // both streams consumed the same number of draws
    const double pos = static_cast<double>(seed * 40503 % 262144);
    for (const double* ph : {static_cast<const double*>(nullptr), static_cast<const double*>(phase.data())}) {
      vattn::gen::fill_rope(pos, theta.data(), amp.data(), ph, got.data(), pairs);
      for (size_t i = 0; i < pairs; ++i) {
        double s, c;
        vattn::gen::sincos_det(ph ? pos * theta[i] + ph[i] : pos * theta[i], s, c);
        want[2 * i] = vattn::double_to_bf16(amp[i] * c);
        want[2 * i + 1] = vattn::double_to_bf16(amp[i] * s);
      }
      CHECK(got == want);
    }
  }
}
