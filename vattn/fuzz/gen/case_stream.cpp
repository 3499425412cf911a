// SPDX-License-Identifier: Apache-2.0
#include "vattn/fuzz/gen/case_stream.h"

#include <algorithm>
#include <vector>

#include "vattn/case/case.h"
#include "vattn/fuzz/gen/plan_draws.h"
#include "vattn/fuzz/gen/serving_family.h"
#include "vattn/gen/gen_rng.h"
#include "vattn/gen/gen_values.h"
#include "vattn/recipe/vocab.h"

namespace vattn::fuzz {

namespace {

// Independent draws of one case, each from its own stream so that changing one choice (say the
// share of long cases) leaves the others of every index as they were.
enum : uint64_t {
  kKindStream = 11,
  kRecipeStream = 12,
  kLongStream = 13,
  kVariantStream = 14,
  kServingStream = 15,
  kLimitsStream = 16,
  kPlanGpuStream = 17,
  kMixPickStream = 18,
  kMixStream = 19,
};

// The large mix by kind % 100: long below kLongShare, serving below kServingEnd, short above.
// Long is pinned to 0 and short to 100, and each family draws from sub-streams of its own, so
// resizing a share re-draws only the indices that change family.
constexpr uint64_t kLongShare = 20, kServingEnd = 60;

uint64_t draw(uint64_t seed, uint64_t stream, int64_t index) {
  return gen::sub_seed(seed, stream, static_cast<uint64_t>(index));
}

// Makes request 0 a long context and trims the rest of the recipe back into the budget:
// drafts first (halving the largest T_b), then heads, then the other prefixes.
void make_long(Recipe& r, const GenBudget& b, uint64_t bits) {
  static const std::vector<int> edges{65536, 65537, 70001, 131072, 199999, 262143, 262144};
  const int p =
      (bits & 1) ? edges[(bits >> 1) % edges.size()]
                 : kLongPrefix + static_cast<int>((bits >> 8) % static_cast<uint64_t>(b.max_prefix - kLongPrefix + 1));
  r.prefix[0] = std::max(r.prefix[0], std::min(p, b.max_prefix));
  auto sum_p = [&r] {
    int64_t s = 0;
    for (int x : r.prefix) s += x;
    return s;
  };
  for (size_t i = r.prefix.size(); i-- > 1 && sum_p() > b.max_total_kv;) {
    r.prefix[i] = static_cast<int>(std::max<int64_t>(0, r.prefix[i] - (sum_p() - b.max_total_kv)));
  }
  while (recipe_work(r) > b.max_work) {
    auto t = std::max_element(r.drafts.begin(), r.drafts.end());
    if (*t > 1) {
      *t = std::max(1, *t / 2);
      continue;
    }
    if (r.heads > 1) {
      int smaller = 1;
      for (int h : head_choices())
        if (h < r.heads) smaller = h;
      r.heads = smaller;
      continue;
    }
    auto other = std::max_element(r.prefix.begin() + 1, r.prefix.end());
    if (other != r.prefix.end() && *other > 0) {
      *other /= 2;
      continue;
    }
    r.prefix[0] /= 2;  // one request, one head, one draft: only its own length is left to give
  }
}

}  // namespace

CaseStream::CaseStream(StreamConfig config) : config_(std::move(config)) {
  if (config_.budget == "small") {
    short_ = GenBudget::small();
  } else if (config_.budget == "medium") {
    short_ = GenBudget::medium();
  } else if (config_.budget == "large") {
    short_ = GenBudget::medium();
    long_ = GenBudget::long_context();
    serving_ = GenBudget::serving();
  } else {
    throw InputError("", "", "--budget", "must be small, medium or large, got '" + config_.budget + "'");
  }
  envelope_ = short_;
  if (config_.budget == "large") {
    envelope_.name = "large (medium + long + serving)";
    for (const GenBudget* b : {&long_, &serving_}) {
      envelope_.max_batch = std::max(envelope_.max_batch, b->max_batch);
      envelope_.max_heads = std::max(envelope_.max_heads, b->max_heads);
      envelope_.max_prefix = std::max(envelope_.max_prefix, b->max_prefix);
      envelope_.max_drafts = std::max(envelope_.max_drafts, b->max_drafts);
      envelope_.max_total_kv = std::max(envelope_.max_total_kv, b->max_total_kv);
      envelope_.max_total_drafts = std::max(envelope_.max_total_drafts, b->max_total_drafts);
      envelope_.max_work = std::max(envelope_.max_work, b->max_work);
      envelope_.max_splits = std::max(envelope_.max_splits, b->max_splits);
    }
  }
  if (config_.mix) check_mix_table(*config_.mix, "mix table");
}

StreamCase CaseStream::at(int64_t index) const {
  StreamCase sc;
  sc.index = index;
  const uint64_t kind = draw(config_.seed, kKindStream, index);
  const bool large = config_.budget == "large";
  if (config_.mix &&
      draw(config_.seed, kMixPickStream, index) % 100 < static_cast<uint64_t>(config_.mix->share_percent)) {
    sc.family = "captured";
    sc.recipe = mix_recipe(*config_.mix, envelope_, draw(config_.seed, kMixStream, index));
  } else if (large && kind % 100 >= kLongShare && kind % 100 < kServingEnd) {
    sc.family = "serving";
    sc.recipe = serving_recipe(draw(config_.seed, kServingStream, index));
  } else {
    const bool want_long = large && kind % 100 < kLongShare;
    sc.family = want_long ? "long" : "short";
    // RapidCheck's size scales the caps (vattn/fuzz/gen/gen_recipe.cpp); a campaign spreads it over the whole range.
    const int size = want_long ? rc::kNominalSize : static_cast<int>((kind >> 8) % (rc::kNominalSize + 1));
    const rc::Random random(draw(config_.seed, kRecipeStream, index));
    sc.recipe = gen_recipe(want_long ? long_ : short_)(random, size).value();
    if (want_long) make_long(sc.recipe, long_, draw(config_.seed, kLongStream, index));
  }
  if (config_.device_variants) {
    const uint64_t v = draw(config_.seed, kVariantStream, index);
    const uint64_t pick = v % 100;
    if (pick < 4) {
      int64_t sum_p = 0;
      for (int p : sc.recipe.prefix) sum_p += p;
      static const char* kIndexFaults[] = {"index-nslots", "index-neg", "index-max"};
      sc.recipe.fault = (sum_p == 0 || pick == 3) ? "drafts-over" : kIndexFaults[(v >> 8) % 3];
    } else if (pick < 7) {
      // Past 2^22 slots, slot * 576 overflows int32; past 7456540 it overflows uint32 too.
      sc.recipe.slot_base = (int64_t{1} << 22) + static_cast<int64_t>((v >> 8) % (int64_t{1} << 23));
    }
    draw_plan_limits(sc.recipe, envelope_, draw(config_.seed, kLimitsStream, index));
  }
  if (config_.plan_variants) draw_plan_gpu(sc.recipe, draw(config_.seed, kPlanGpuStream, index));
  sc.work = recipe_work(sc.recipe);
  sc.long_context =
      std::any_of(sc.recipe.prefix.begin(), sc.recipe.prefix.end(), [](int p) { return p >= kLongPrefix; });
  return sc;
}

std::string size_class(const StreamCase& c) { return c.family; }

std::string prefix_bucket(const Recipe& r) {
  const int p = r.prefix.empty() ? 0 : *std::max_element(r.prefix.begin(), r.prefix.end());
  if (p == 0) return "0";
  if (p <= 64) return "1-64";
  if (p <= 4096) return "65-4096";
  if (p < kLongPrefix) return "4097-65535";
  return ">=65536";
}

std::string draft_bucket(const Recipe& r) {
  const int t = r.drafts.empty() ? 0 : *std::max_element(r.drafts.begin(), r.drafts.end());
  if (t <= 1) return "1";
  if (t <= 16) return "2-16";
  if (t <= 64) return "17-64";
  if (t <= 256) return "65-256";
  return ">=257";
}

std::string batch_bucket(const Recipe& r) {
  const size_t b = r.prefix.size();
  if (b <= 1) return "1";
  if (b <= 4) return "2-4";
  if (b <= 16) return "5-16";
  return ">16";
}

std::string split_class(const Recipe& r) {
  if (r.splits == 0) return "auto";
  if (r.splits == 1) return "1";
  if (r.splits >= 32) return ">=32";
  int64_t longest = 1;
  for (size_t b = 0; b < r.prefix.size() && b < r.drafts.size(); ++b)
    longest = std::max<int64_t>(longest, int64_t{r.prefix[b]} + r.drafts[b]);
  return r.splits <= (longest + 31) / 32 ? "<=tiles" : ">tiles (empty splits)";
}

std::string pool_class(const Recipe& r) {
  if (r.slot_base * vocab::kRowDims >= (int64_t{1} << 32)) return "slot*576 >= 2^32";
  if (r.slot_base * vocab::kRowDims >= (int64_t{1} << 31)) return "slot*576 >= 2^31";
  return "ordinary";
}

std::string limits_class(const Recipe& r) {
  if (!r.limits.set()) return "unset";
  int64_t sum_t = 0;
  int longest = 0;
  for (int t : r.drafts) {
    sum_t += t;
    longest = std::max(longest, t);
  }
  const bool exact = r.limits.max_requests == static_cast<int>(r.prefix.size()) && r.limits.max_total_drafts == sum_t &&
                     r.limits.max_drafts_per_request == longest;
  return exact ? "exact" : "headroom";
}

std::string max_splits_class(const Recipe& r) {
  if (!r.limits.set()) return "unset";
  if (r.limits.max_splits <= 1) return "1";
  return r.limits.max_splits <= 8 ? "2-8" : ">8";
}

std::string sm_class(const Recipe& r) {
  if (r.sms == 0) return "native";
  if (r.sms == 1 || r.sms == 132 || r.sms == 188) return std::to_string(r.sms);
  return "other";
}

}  // namespace vattn::fuzz
