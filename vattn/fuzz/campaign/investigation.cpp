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

// A failure of the code under test, as opposed to a pass or the suite's own trouble (a resource it
// could not get, an input it could not use).
bool fails_the_code(const Verdict& v) { return v.failed() && v.verdict != "resource" && v.verdict != "input-error"; }

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

json Investigation::progress() const {
  return {{"confirmed", confirmed_},
          {"recipe", current_.to_line()},
          {"steps", steps_},
          {"runs", runs_},
          {"next", static_cast<int64_t>(next_candidate_)}};
}

void Investigation::resume(const json& p) {
  auto whole = [&](const char* key, int64_t max) {
    if (!p.contains(key) || !p.at(key).is_number_integer() || p.at(key).get<int64_t>() < 0 ||
        p.at(key).get<int64_t>() > max)
      throw InputError("", "", std::string("shrink.") + key, "not a whole number in [0, " + std::to_string(max) + "]");
    return p.at(key).get<int64_t>();
  };
  if (!p.contains("confirmed") || !p.at("confirmed").is_boolean())
    throw InputError("", "", "shrink.confirmed", "not true or false");
  if (!p.contains("recipe") || !p.at("recipe").is_string())
    throw InputError("", "", "shrink.recipe", "not a recipe line");
  const bool confirmed = p.at("confirmed").get<bool>();
  const Recipe recipe = Recipe::parse(p.at("recipe").get<std::string>());  // InputError naming the key
  const int64_t steps = whole("steps", 1000000), runs = whole("runs", 1000000), next = whole("next", 1000000);
  if (!confirmed) {  // it was still confirming: it starts again, no shrink step was taken
    if (steps != 0) throw InputError("", "", "shrink.steps", "steps taken before a confirmation");
    runs_ = static_cast<int>(runs);
    return;
  }
  confirming_ = false;
  confirmed_ = true;
  current_ = recipe;
  steps_ = static_cast<int>(steps);
  runs_ = static_cast<int>(runs);
  candidates_ = shrinks_of(current_);
  if (next > static_cast<int64_t>(candidates_.size()))
    throw InputError("", "", "shrink.next",
                     "past the " + std::to_string(candidates_.size()) + " candidates of its recipe");
  next_candidate_ = static_cast<size_t>(next);
  shrunk_repro_.clear();  // the caller sets the file the shrunk recipe's last failing run wrote, if it is still there
  done_ = false;
  if (next_candidate_ >= candidates_.size()) {
    finish("no simpler recipe fails the same way");
  } else if (runs_ >= limits_.max_runs) {
    finish("run budget spent (" + std::to_string(limits_.max_runs) + " runs)");
  }
}

void Investigation::set_shrunk_repro(const std::string& path) { shrunk_repro_ = path; }

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
    // A fault that depends on timing (a race, a barrier some threads skip) may not come back on
    // the next run, or come back as another class: a hang once, a crash or a wrong answer the
    // next time. So the same recipe gets several fresh runs, and any failure of the code under
    // test repeats the finding; only runs that all pass leave it unconfirmed.
    ++confirm_runs_;
    const std::string of =
        " in fresh run " + std::to_string(confirm_runs_) + " of " + std::to_string(limits_.confirm_runs);
    if (fails_the_code(outcome)) {
      confirming_ = false;
      confirmed_ = true;
      confirmation_ = (same ? "repeated" : "repeated as " + outcome.signature()) + of;
      candidates_ = shrinks_of(current_);
      next_candidate_ = 0;
    } else if (confirm_runs_ < limits_.confirm_runs && runs_ < limits_.max_runs) {
      return;  // the same recipe again, in a fresh worker
    } else {
      confirming_ = false;
      confirmed_ = false;
      confirmation_ = "not repeated: " + std::to_string(confirm_runs_) + " fresh run(s) of the same recipe, the last " +
                      (outcome.failed() ? outcome.signature() : std::string("a pass"));
      finish("not confirmed: " + confirmation_);
      return;
    }
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
