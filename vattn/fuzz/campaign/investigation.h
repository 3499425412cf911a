// SPDX-License-Identifier: Apache-2.0
// What happens to a new finding: confirm it (a crash or hang is re-run in a fresh worker first, up
// to confirm_runs times; any failure of the code under test repeats it),
// then shrink it with the recipe shrinks of vattn/fuzz/gen/gen_recipe.cpp, in their order: take the first
// candidate that fails with the same signature (bucket included: a candidate that fails elsewhere
// is another bug; same_failure() in protocol.h), start again from it, stop when none does or a
// budget runs out. Pure logic: the supervisor runs each recipe and feeds back its verdict.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "vattn/fuzz/protocol/protocol.h"
#include "vattn/gen/generate.h"

namespace vattn::fuzz {

struct InvestigationLimits {
  int max_runs = 400;        // candidate runs, the confirmation included
  double max_seconds = 900;  // wall time (checked by the supervisor through out_of_time)
  int confirm_runs = 3;      // fresh runs of the first recipe before a crash or hang counts as not repeated
};

class Investigation {
 public:
  Investigation(const Verdict& first, const Recipe& recipe, bool confirm_first, InvestigationLimits limits);

  // Where it stands, as a journal's shrink line holds it: confirmed, recipe (the shrunk one so far),
  // steps, runs, next (the candidate of that recipe to run next).
  json progress() const;
  // Goes on from a progress() of an earlier run (--resume): the candidates of a recipe are the
  // same in every run, so it picks up at the candidate it had reached. InputError (field named)
  // when the progress is not one this investigation could have made.
  void resume(const json& progress);

  // The recipe to run next; nullopt when the investigation is over.
  std::optional<Recipe> next() const;
  // The verdict of the recipe next() gave.
  void feed(const Verdict& outcome);
  void out_of_time();

  bool done() const { return done_; }
  const std::string& signature() const { return signature_; }
  const Recipe& shrunk() const { return current_; }
  bool confirmed() const { return confirmed_; }
  // How the confirmation went, e.g. "repeated as crash: ... in fresh run 2 of 3" ("" before it ends
  // or when there was none).
  const std::string& confirmation() const { return confirmation_; }
  int steps() const { return steps_; }
  int runs() const { return runs_; }
  const std::string& stop_reason() const { return stop_reason_; }
  // The repro written by the last run that failed the same way (the shrunk case's), or "".
  const std::string& shrunk_repro() const { return shrunk_repro_; }
  void set_shrunk_repro(const std::string& path);  // after resume(): the file of the shrunk recipe, when kept
  // Whether each run needs a fresh process (the class can take a worker down with it).
  bool fresh_process() const { return fresh_; }

 private:
  void finish(const std::string& why);
  std::string signature_;
  Recipe current_;
  std::vector<Recipe> candidates_;
  size_t next_candidate_ = 0;
  bool confirming_, confirmed_, fresh_, done_ = false;
  int steps_ = 0, runs_ = 0, confirm_runs_ = 0;
  InvestigationLimits limits_;
  std::string stop_reason_, shrunk_repro_, confirmation_;
};

// Classes whose runs end the worker (or may): each of their runs gets a fresh process.
bool takes_worker_down(const std::string& verdict);

}  // namespace vattn::fuzz
