// SPDX-License-Identifier: Apache-2.0
#include "vattn/fuzz/worker/runner_cache.h"

#include <algorithm>

#include "vattn/testbed/plan.h"

namespace vattn::fuzz {

vattn_limits target_limits(const Recipe& r, const GenBudget& envelope, int heads) {
  if (r.limits.set()) return testbed::plan_limits(r.limits, heads);
  vattn_limits l{};
  l.max_requests = envelope.max_batch;
  l.max_total_drafts = envelope.max_total_drafts;
  l.max_drafts_per_request = envelope.max_drafts;
  l.num_heads = heads;
  l.max_splits = std::max(1, envelope.max_splits);
  return l;
}

LimitsKey limits_key(const vattn_limits& l) {
  return {l.max_requests, l.max_total_drafts, l.max_drafts_per_request, l.num_heads, l.max_splits};
}

}  // namespace vattn::fuzz
