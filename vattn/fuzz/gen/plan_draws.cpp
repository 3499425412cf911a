// SPDX-License-Identifier: Apache-2.0
#include "vattn/fuzz/gen/plan_draws.h"

#include <algorithm>
#include <vector>

#include "vattn/fuzz/gen/stream_pick.h"
#include "vattn/recipe/vocab.h"

namespace vattn::fuzz {

int64_t partial_rows(int64_t total_drafts, int64_t heads, int64_t requests) {
  return total_drafts * heads + 64 * requests;
}

void draw_plan_limits(Recipe& r, const GenBudget& envelope, uint64_t seed) {
  Pick d(seed);
  r.limits = Recipe::PlanLimits{};
  const size_t kind = d.weighted({20, 55, 25});  // unset, exact, headroom
  if (kind == 0 || r.drafts.empty()) return;
  const int batch = static_cast<int>(r.prefix.size());
  int64_t sum_t = 0;
  for (int t : r.drafts) sum_t += t;
  const int longest = *std::max_element(r.drafts.begin(), r.drafts.end());
  Recipe::PlanLimits exact;
  exact.max_requests = batch;
  exact.max_total_drafts = sum_t;
  exact.max_drafts_per_request = longest;
  Recipe::PlanLimits l = exact;
  if (kind == 2) {
    if (d.percent(60)) l.max_requests = static_cast<int>(d.octave(batch, std::max(batch, envelope.max_batch)));
    if (d.percent(60))
      l.max_drafts_per_request = static_cast<int>(d.octave(longest, std::max(longest, envelope.max_drafts)));
    const int64_t q_cap = std::max(sum_t, envelope.max_total_drafts);
    switch (d.weighted({40, 30, 30})) {
      case 0: break;
      case 1: l.max_total_drafts = std::min(int64_t{l.max_requests} * l.max_drafts_per_request, q_cap); break;
      default: l.max_total_drafts = d.octave(sum_t, q_cap); break;
    }
  }
  switch (d.weighted({20, 30, 30, 20})) {
    case 0: l.max_splits = 1; break;
    case 1: l.max_splits = static_cast<int>(d.in(2, 8)); break;
    case 2: l.max_splits = static_cast<int>(d.octave(9, vocab::kMaxSplits)); break;
    default: l.max_splits = std::max(1, envelope.max_splits); break;
  }
  const int least = std::max(1, r.splits);  // forced splits must stay within the limits
  l.max_splits = std::max(l.max_splits, least);
  const int64_t budget =
      int64_t{std::max(1, envelope.max_splits)} * partial_rows(envelope.max_total_drafts, r.heads, envelope.max_batch);
  auto rows = [&r](const Recipe::PlanLimits& x) { return partial_rows(x.max_total_drafts, r.heads, x.max_requests); };
  if (l.max_splits * rows(l) > budget) {
    const int s = l.max_splits;
    l = exact;
    l.max_splits = s;
  }
  l.max_splits = static_cast<int>(std::max<int64_t>(least, std::min<int64_t>(l.max_splits, budget / rows(l))));
  r.limits = l;
}

void draw_plan_gpu(Recipe& r, uint64_t seed) {
  Pick d(seed);
  r.sms = 0;
  r.sm_blocks = 0;
  if (!d.percent(35)) return;
  static const std::vector<int> kEdges{1, 2, 3, vocab::kMaxSms - 1, vocab::kMaxSms};
  switch (d.weighted({30, 25, 10, 35})) {
    case 0:
      r.sms = 188;  // the RTX PRO 6000 holds one partial block per SM
      r.sm_blocks = 1;
      return;
    case 1: r.sms = 132; break;
    case 2: r.sms = d.of(kEdges); break;
    default: r.sms = static_cast<int>(d.octave(1, vocab::kMaxSms)); break;
  }
  if (d.percent(30)) r.sm_blocks = static_cast<int>(d.in(1, 4));
  if (r.sms == 188) r.sm_blocks = 1;  // however it was drawn: 188 SMs is that GPU
}

}  // namespace vattn::fuzz
