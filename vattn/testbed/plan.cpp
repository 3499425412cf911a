// SPDX-License-Identifier: Apache-2.0
#include "vattn/testbed/plan.h"

#include "vattn/case/case.h"

namespace vattn::testbed {

std::string PlanOverride::describe() const {
  if (!set()) return "this GPU's plan";
  return "sms=" + std::to_string(sms) + (blocks_per_sm != 0 ? " sm_blocks=" + std::to_string(blocks_per_sm) : "");
}

CasePlan case_plan(const Recipe& r) {
  CasePlan p;
  p.limits = r.limits;
  p.gpu.sms = r.sms;
  p.gpu.blocks_per_sm = r.sm_blocks;
  return p;
}

CasePlan case_plan_of_line(const std::string& recipe_line) {
  if (recipe_line.empty()) return {};
  try {
    return case_plan(Recipe::parse(recipe_line));
  } catch (const InputError&) {
    return {};
  }
}

vattn_limits plan_limits(const Recipe::PlanLimits& limits, int heads) {
  vattn_limits l{};
  l.max_requests = limits.max_requests;
  l.max_total_drafts = limits.max_total_drafts;
  l.max_drafts_per_request = limits.max_drafts_per_request;
  l.num_heads = heads;
  l.max_splits = limits.max_splits;
  return l;
}

std::string limits_beyond(const vattn_caps& caps, const vattn_limits& limits) {
  auto over = [](const char* what, int64_t have, int64_t most) {
    return std::string(what) + " " + std::to_string(have) + " > " + std::to_string(most);
  };
  if (limits.max_requests > caps.max_requests) return over("max_requests", limits.max_requests, caps.max_requests);
  if (limits.max_drafts_per_request > caps.max_drafts_per_request)
    return over("max_drafts_per_request", limits.max_drafts_per_request, caps.max_drafts_per_request);
  if (limits.num_heads > caps.max_heads) return over("heads", limits.num_heads, caps.max_heads);
  if (limits.max_splits > caps.max_splits) return over("max_splits", limits.max_splits, caps.max_splits);
  return "";
}

std::string no_plan_hook_message(const PlanOverride& plan, const std::string& revision) {
  return "revision " + revision +
         " has no test plan hook (" VATTN_TEST_PLAN_FOR_SYMBOL
         ", kernels/vattn_abi.h), so it cannot plan as a GPU with " +
         plan.describe() +
         " would; the case is not run with this GPU's plan instead (leave sms= and sm_blocks= out of the recipe)";
}

ScopedPlan::ScopedPlan(vattn_test_plan_for_fn hook, const PlanOverride& plan, const std::string& revision) {
  if (!plan.set()) return;
  if (hook == nullptr) throw InputError("", "", "sms", no_plan_hook_message(plan, revision));
  const vattn_status st = hook(plan.sms, plan.blocks_per_sm);
  if (st != VATTN_OK) {
    throw InputError("", "", "sms",
                     "revision " + revision + " refuses the plan " + plan.describe() +
                         ": " VATTN_TEST_PLAN_FOR_SYMBOL "(" + std::to_string(plan.sms) + ", " +
                         std::to_string(plan.blocks_per_sm) + ") returned status " +
                         std::to_string(static_cast<int>(st)));
  }
  applied_ = hook;
}

ScopedPlan::~ScopedPlan() {
  if (applied_ != nullptr) (void)applied_(0, 0);  // (0, 0) is always accepted (vattn_abi.h)
}

}  // namespace vattn::testbed
