// SPDX-License-Identifier: Apache-2.0
// The CPU oracles' work and the limit on it (cpu_oracle.h).
#include <atomic>

#include "vattn/oracle/cpu_oracle.h"

namespace vattn {

namespace {
std::atomic<int64_t> g_work_limit{0};  // 0: the default
}  // namespace

int64_t oracle_work(int heads, const std::vector<int>& prefix, const std::vector<int>& drafts) {
  // Saturating: a recipe or a file may ask for more than int64 holds.
  constexpr int64_t kMax = INT64_MAX;
  int64_t work = 0;
  for (size_t b = 0; b < prefix.size() && b < drafts.size(); ++b) {
    const long double w =
        static_cast<long double>(drafts[b]) * heads * (static_cast<long double>(prefix[b]) + drafts[b]);
    if (w >= static_cast<long double>(kMax - work)) return kMax;
    work += static_cast<int64_t>(w);
  }
  return work;
}

int64_t oracle_work(const Case& c) {
  std::vector<int> prefix, drafts;
  for (int b = 0; b < c.num_requests(); ++b) {
    prefix.push_back(c.prefix_len(b));
    drafts.push_back(c.drafts(b));
  }
  return oracle_work(c.num_heads, prefix, drafts);
}

void set_oracle_work_limit(int64_t work) { g_work_limit = work > 0 ? work : 0; }

int64_t oracle_work_limit() {
  const int64_t set = g_work_limit;
  return set > 0 ? set : kDefaultOracleWorkLimit;
}

std::string oracle_work_problem(int64_t work) {
  const int64_t limit = oracle_work_limit();
  if (work <= limit) return "";
  return "needs " + std::to_string(work) +
         " units of CPU-oracle work (query rows x keys x heads), more than the limit of " + std::to_string(limit) +
         " (--max-oracle-work)";
}

}  // namespace vattn
