// SPDX-License-Identifier: Apache-2.0
#include "vattn/fuzz/gen/serving_family.h"

#include <algorithm>
#include <string>
#include <vector>

#include "vattn/fuzz/gen/fit_budget.h"
#include "vattn/fuzz/gen/gen_recipe.h"

namespace vattn::fuzz {

namespace {

// Draft counts of a DDTree verify step: a plain decode step (1) and the tree budgets 16, 32, 64.
const std::vector<int>& serving_drafts() {
  static const std::vector<int> v{1, 16, 32, 64};
  return v;
}

int step_down(int t) {
  const auto& v = serving_drafts();
  for (auto it = v.rbegin(); it != v.rend(); ++it)
    if (*it < t) return *it;
  return std::max(1, t / 2);
}

int64_t sum_drafts(const Recipe& r) {
  int64_t s = 0;
  for (int t : r.drafts) s += t;
  return s;
}

}  // namespace

void draw_server_run(Recipe& r, Pick& d, int max_splits) {
  static const char* kProfiles[] = {"k26", "uniform", "adversarial", "huge", "ties", "tiny"};
  r.profile = kProfiles[d.weighted({45, 20, 10, 5, 10, 10})];
  static const char* kLayouts[] = {"scattered", "sparse", "contiguous", "reversed"};
  r.layout = kLayouts[d.weighted({50, 20, 15, 15})];
  r.poison = d.percent(50);
  r.seed = static_cast<uint64_t>(d.in(1, 0xffffffffLL));
  int64_t longest = 1;
  for (size_t i = 0; i < r.prefix.size(); ++i) longest = std::max<int64_t>(longest, int64_t{r.prefix[i]} + r.drafts[i]);
  const int64_t tiles = (longest + 31) / 32;
  const bool kernel_chooses = d.percent(85);
  r.splits =
      (kernel_chooses || max_splits < 1) ? 0 : static_cast<int>(d.in(1, std::min<int64_t>(max_splits, tiles + 4)));
}

bool is_headline_shape(const Recipe& r) {
  return r.heads == 8 && r.prefix.size() == 1 && r.drafts.size() == 1 && r.drafts[0] == 64 && r.prefix[0] >= 3840 &&
         r.prefix[0] <= 4352;
}

Recipe serving_recipe(uint64_t seed) {
  const GenBudget b = GenBudget::serving();
  Pick d(seed);
  Recipe r;
  r.heads = b.max_heads;
  auto draft_count = [&d] { return serving_drafts()[d.weighted({15, 25, 25, 35})]; };
  if (d.percent(20)) {
    r.prefix = {d.percent(50) ? 4096 : static_cast<int>(4096 + d.in(-256, 256))};
    r.drafts = {64};
  } else {
    int64_t batch = 1;
    switch (d.weighted({35, 40, 12, 13})) {
      case 0: batch = 1; break;
      case 1: batch = d.in(2, 8); break;
      case 2: batch = d.in(9, 16); break;
      default: batch = d.in(17, b.max_batch); break;
    }
    const bool one_t = d.percent(75);
    const int t = draft_count();
    for (int64_t i = 0; i < batch; ++i) {
      r.prefix.push_back(static_cast<int>(d.octave(512, b.max_prefix)));
      r.drafts.push_back(one_t ? t : draft_count());
    }
  }
  static const char* kTrees[] = {"chain", "ddtree", "random"};
  r.tree = kTrees[d.weighted({45, 45, 10})];
  // A server's step has a token budget: too many drafts in all, or (half the time) too much work
  // for these prefixes, and the drafts step down first; otherwise fit_to_budget scales prefixes.
  const bool drafts_first = d.percent(50);
  while (sum_drafts(r) > b.max_total_drafts ||
         (drafts_first && (recipe_work(r) > b.max_work) && *std::max_element(r.drafts.begin(), r.drafts.end()) > 1)) {
    auto t = std::max_element(r.drafts.begin(), r.drafts.end());
    *t = step_down(*t);
  }
  fit_to_budget(r, b, d.next());
  draw_server_run(r, d, b.max_splits);
  return r;
}

}  // namespace vattn::fuzz
