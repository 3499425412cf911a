// SPDX-License-Identifier: Apache-2.0
// The plan a case is run with, as its recipe asks: the plan limits a server would pass
// (`limits=R/Q/T/S`) and the GPU the plan is made for (`sms=N sm_blocks=K`: another GPU's SM and
// block counts, through a revision's test-only plan hook, kernels/vattn_abi.h). The testbed sets
// the hook around one case's runs (ScopedPlan); a revision without the hook is refused such a
// case, never run with its native plan instead. Host code: the CPU build tests it.
#pragma once

#include <string>

#include "kernels/vattn_abi.h"
#include "vattn/recipe/recipe.h"

namespace vattn::testbed {

// Plan as a GPU with `sms` SMs and `blocks_per_sm` resident partial blocks per SM would (0: the
// revision's occupancy on this GPU). sms == 0: the plan of the GPU the case runs on.
struct PlanOverride {
  int sms = 0;
  int blocks_per_sm = 0;
  bool set() const { return sms != 0; }
  std::string describe() const;  // "sms=188 sm_blocks=1", "sms=132", or "this GPU's plan"
};

struct CasePlan {
  Recipe::PlanLimits limits;  // unset: the caller's limits (fitted to the case, or a worker's envelope)
  PlanOverride gpu;
};

CasePlan case_plan(const Recipe& r);
// The plan of a case's recipe line; none for a case without one (or with a line this version
// cannot parse: it replays with the caller's plan, as its split count does).
CasePlan case_plan_of_line(const std::string& recipe_line);

// The vattn_limits of a recipe's plan limits for `heads` heads (limits.set() expected).
vattn_limits plan_limits(const Recipe::PlanLimits& limits, int heads);

// "" when `caps` admit the limits, else the first one beyond them ("max_drafts_per_request
// 4096 > 1025"); what workspace_size() refuses as limits it cannot plan.
std::string limits_beyond(const vattn_caps& caps, const vattn_limits& limits);

// Sets a revision's plan hook to `plan` for its lifetime and back to the native plan at its end;
// does nothing when `plan` is not set. The hook is process-wide: one ScopedPlan at a time, around
// the runs of one case. `revision` names the revision in messages ("split-v2 (built-in)").
// Throws InputError (field "sms") when `plan` is set and `hook` is null (the revision has no
// hook) or refuses it.
class ScopedPlan {
 public:
  ScopedPlan(vattn_test_plan_for_fn hook, const PlanOverride& plan, const std::string& revision);
  ~ScopedPlan();
  ScopedPlan(const ScopedPlan&) = delete;
  ScopedPlan& operator=(const ScopedPlan&) = delete;

 private:
  vattn_test_plan_for_fn applied_ = nullptr;  // the hook to reset, when a plan was set
};

// The message ScopedPlan throws for a revision without the hook.
std::string no_plan_hook_message(const PlanOverride& plan, const std::string& revision);

}  // namespace vattn::testbed
