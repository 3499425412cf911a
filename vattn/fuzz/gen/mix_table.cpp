// SPDX-License-Identifier: Apache-2.0
#include "vattn/fuzz/gen/mix_table.h"

#include <algorithm>

#include "vattn/case/case.h"
#include "vattn/fuzz/gen/fit_budget.h"
#include "vattn/fuzz/gen/serving_family.h"
#include "vattn/fuzz/gen/stream_pick.h"
#include "vattn/recipe/vocab.h"

namespace vattn::fuzz {

void check_mix_table(const MixTable& t, const std::string& file) {
  auto bad = [&file](const std::string& field, const std::string& why) { throw InputError(file, "", field, why); };
  if (t.share_percent < 1 || t.share_percent > 100)
    bad("share_percent", std::to_string(t.share_percent) + " is outside [1, 100]");
  if (t.shapes.empty()) bad("shapes", "is empty (no captured case to draw from)");
  if (t.shapes.size() > kMaxMixShapes)
    bad("shapes", "has " + std::to_string(t.shapes.size()) + " entries, more than " + std::to_string(kMaxMixShapes));
  int64_t requests = 0, count = 0;
  for (size_t i = 0; i < t.shapes.size(); ++i) {
    const MixShape& s = t.shapes[i];
    const std::string at = "shapes[" + std::to_string(i) + "]";
    if (s.heads < 1 || s.heads > vocab::kMaxHeads)
      bad(at + ".H", std::to_string(s.heads) + " is outside [1, " + std::to_string(vocab::kMaxHeads) + "]");
    if (s.prefix.empty() || static_cast<int64_t>(s.prefix.size()) > vocab::kMaxBatch)
      bad(at + ".P", "must hold 1 to " + std::to_string(vocab::kMaxBatch) + " prefix lengths");
    if (s.drafts.size() != s.prefix.size())
      bad(at + ".T", "has " + std::to_string(s.drafts.size()) + " entries, P has " + std::to_string(s.prefix.size()));
    for (size_t b = 0; b < s.prefix.size(); ++b) {
      const std::string pb = at + ".P[" + std::to_string(b) + "]", tb = at + ".T[" + std::to_string(b) + "]";
      if (s.prefix[b] < 0 || s.prefix[b] > vocab::kMaxPrefix)
        bad(pb, std::to_string(s.prefix[b]) + " is outside [0, " + std::to_string(vocab::kMaxPrefix) + "]");
      if (s.drafts[b] < 1 || s.drafts[b] > vocab::kMaxDrafts)
        bad(tb, std::to_string(s.drafts[b]) + " is outside [1, " + std::to_string(vocab::kMaxDrafts) + "]");
    }
    if (s.count < 1 || s.count > kMaxMixCount) bad(at + ".count", "must be in [1, 2^40]");
    requests += static_cast<int64_t>(s.prefix.size());
    count += s.count;
    if (requests > kMaxMixRequests)
      bad(at, "takes the table past " + std::to_string(kMaxMixRequests) + " requests in all");
    if (count > kMaxMixCount) bad(at + ".count", "takes the table's count past 2^40");
  }
}

Recipe mix_recipe(const MixTable& t, const GenBudget& fit, uint64_t seed) {
  Pick d(seed);
  int64_t total = 0;
  for (const MixShape& s : t.shapes) total += s.count;
  int64_t x = d.in(0, total - 1);
  size_t pick = 0;
  while (pick + 1 < t.shapes.size() && x >= t.shapes[pick].count) x -= t.shapes[pick++].count;
  const MixShape& s = t.shapes[pick];
  Recipe r;
  r.heads = s.heads;
  r.prefix = s.prefix;
  r.drafts = s.drafts;
  if (d.percent(75)) {
    for (int& p : r.prefix) {
      const int64_t j = std::max(2, p / 32);
      p = static_cast<int>(std::clamp<int64_t>(p + d.in(-j, j), 0, vocab::kMaxPrefix));
    }
  }
  const bool random_tree = d.percent(20);
  r.tree = s.tree ? (random_tree ? "random" : "ddtree") : "chain";
  fit_to_budget(r, fit, d.next());
  draw_server_run(r, d, fit.max_splits);
  return r;
}

}  // namespace vattn::fuzz
