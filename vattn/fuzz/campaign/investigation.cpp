// SPDX-License-Identifier: Apache-2.0
#include "vattn/fuzz/campaign/investigation.h"

#include "vattn/fuzz/gen/gen_recipe.h"

namespace vattn::fuzz {

namespace {
// The generators' shrinks, in their order, then the fuzzer's own run parameters dropped (a
// relocated pool back to slot 0, an injected fault removed): a finding that needs neither says so.
std::vector<Recipe> shrinks_of(const Recipe& r) {
  std::vector<Recipe> v;
  auto seq = shrink_recipe(r);
  while (auto c = seq.next()) v.push_back(std::move(*c));
  if (r.slot_base != 0) {
    Recipe c = r;
    c.slot_base = 0;
    v.push_back(std::move(c));
  }
  if (r.fault != "none") {
    Recipe c = r;
    c.fault = "none";
    v.push_back(std::move(c));
  }
  return v;
}
}  // namespace

bool takes_worker_down(const std::string& verdict) {
  return verdict == "crash" || verdict == "hang" || verdict == "died";
}

Investigation::Investigation(const Verdict& first, const Recipe& recipe, bool confirm_first, InvestigationLimits limits)
    : signature_(first.signature()), current_(recipe), confirming_(confirm_first), confirmed_(!confirm_first),
      fresh_(takes_worker_down(first.verdict)), limits_(limits) {
  shrunk_repro_ = first.repro;
  if (!confirming_) candidates_ = shrinks_of(current_);
  if (!confirming_ && candidates_.empty()) finish("nothing to shrink");
}

std::optional<Recipe> Investigation::next() const {
  if (done_) return std::nullopt;
  if (confirming_) return current_;
  return candidates_[next_candidate_];
}

void Investigation::finish(const std::string& why) {
  done_ = true;
  stop_reason_ = why;
}

void Investigation::feed(const Verdict& outcome) {
  if (done_) return;
  ++runs_;
  const bool same = same_failure(signature_, outcome.signature());
  if (confirming_) {
    confirming_ = false;
    confirmed_ = same;
    if (!same) {
      finish("not confirmed: a fresh worker running the same recipe gave " +
             (outcome.failed() ? outcome.signature() : std::string("a pass")));
      return;
    }
    candidates_ = shrinks_of(current_);
    next_candidate_ = 0;
  } else if (same) {
    current_ = candidates_[next_candidate_];
    if (!outcome.repro.empty()) shrunk_repro_ = outcome.repro;
    ++steps_;
    candidates_ = shrinks_of(current_);
    next_candidate_ = 0;
  } else {
    ++next_candidate_;
  }
  if (next_candidate_ >= candidates_.size()) {
    finish("no simpler recipe fails the same way");
  } else if (runs_ >= limits_.max_runs) {
    finish("run budget spent (" + std::to_string(limits_.max_runs) + " runs)");
  }
}

void Investigation::out_of_time() {
  if (!done_) finish("time budget spent (" + std::to_string(static_cast<int>(limits_.max_seconds)) + " s)");
}

}  // namespace vattn::fuzz
