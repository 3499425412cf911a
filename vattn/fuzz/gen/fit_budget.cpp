// SPDX-License-Identifier: Apache-2.0
#include "vattn/fuzz/gen/fit_budget.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace vattn::fuzz {

namespace {

int64_t sum_of(const std::vector<int>& v) {
  int64_t s = 0;
  for (int x : v) s += x;
  return s;
}

int64_t sum_of_squares(const std::vector<int>& v) {
  int64_t s = 0;
  for (int x : v) s += int64_t{x} * x;
  return s;
}

int64_t sum_of_products(const std::vector<int>& a, const std::vector<int>& b) {
  int64_t s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += int64_t{a[i]} * b[i];
  return s;
}

}  // namespace

void fit_to_budget(Recipe& r, const GenBudget& b, uint64_t bits) {
  const size_t max_b = static_cast<size_t>(std::max(1, b.max_batch));
  if (r.prefix.size() > max_b) {
    const auto start = static_cast<std::ptrdiff_t>(bits % (r.prefix.size() - max_b + 1));
    const auto n = static_cast<std::ptrdiff_t>(max_b);
    r.prefix = std::vector<int>(r.prefix.begin() + start, r.prefix.begin() + start + n);
    r.drafts = std::vector<int>(r.drafts.begin() + start, r.drafts.begin() + start + n);
  }
  r.heads = std::clamp(r.heads, 1, std::max(1, b.max_heads));
  for (size_t i = 0; i < r.prefix.size(); ++i) {
    r.drafts[i] = std::clamp(r.drafts[i], 1, std::max(1, b.max_drafts));
    r.prefix[i] = std::clamp(r.prefix[i], 0, std::max(0, b.max_prefix));
  }
  // The drafts' own work (every row sees at most its request's drafts) does not shrink with
  // the prefixes: fit it first.
  while (sum_of(r.drafts) > b.max_total_drafts || r.heads * sum_of_squares(r.drafts) > b.max_work) {
    auto t = std::max_element(r.drafts.begin(), r.drafts.end());
    if (*t > 1) {
      *t = std::max(1, *t / 2);
    } else if (r.prefix.size() > 1) {
      r.prefix.pop_back();
      r.drafts.pop_back();
    } else {
      break;
    }
  }
  if (r.heads * sum_of_squares(r.drafts) > b.max_work)
    r.heads = static_cast<int>(std::max<int64_t>(1, b.max_work / sum_of_squares(r.drafts)));
  const int64_t H = r.heads;
  const int64_t room = b.max_work - H * sum_of_squares(r.drafts);  // what the prefixes may cost
  auto over = [&] { return sum_of(r.prefix) > b.max_total_kv || H * sum_of_products(r.drafts, r.prefix) > room; };
  if (over()) {
    double f = 1.0;
    if (sum_of(r.prefix) > b.max_total_kv)
      f = std::min(f, static_cast<double>(b.max_total_kv) / static_cast<double>(sum_of(r.prefix)));
    const int64_t tp = H * sum_of_products(r.drafts, r.prefix);
    if (tp > room) f = std::min(f, static_cast<double>(room) / static_cast<double>(tp));
    for (int& p : r.prefix) p = static_cast<int>(std::floor(p * f));
    // Rounding leaves at most a few rows over: take them from the longest prefix.
    while (over()) {
      auto p = std::max_element(r.prefix.begin(), r.prefix.end());
      *p -= std::max(1, *p / 64);
    }
  }
  r.splits = std::clamp(r.splits, 0, b.max_splits);
}

}  // namespace vattn::fuzz
