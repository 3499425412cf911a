// SPDX-License-Identifier: Apache-2.0
// What a verdict does to the campaign: a stream case is journaled and counted (totals, coverage,
// time by size class); a failure is counted against the ledger, an existing finding, a further
// bucket of a check that has kMaxFindingsPerCheck findings already, or a new finding, whose
// investigation (confirm, shrink, write the repro files) the slot's investigator then runs beside
// the stream. An investigation's own cases (negative indices) feed it instead. A case that failed
// for want of a resource is retried on a fresh worker, then journaled as not run.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>

#include "vattn/fuzz/campaign/supervisor_internal.h"

namespace vattn::fuzz::supervisor_detail {

namespace fs = std::filesystem;

void Supervisor::outcome(Slot& s, const InFlight& f, Verdict v) {
  if (v.verdict == "resource") {
    resource_outcome(s, f, v);
    return;
  }
  if (f.index < 0) {
    s.inv_resource_tries = 0;
    investigation_outcome(s, f, v);
    return;
  }
  fuzz_outcome(s, f, v);
}

void Supervisor::resource_outcome(Slot& s, const InFlight& f, const Verdict& v) {
  // The suite's own allocation failed (the device full of another process's memory, ...): no
  // judgement of the code under test. Retried on a fresh worker after a pause, a bounded number
  // of times; an investigation's run is retried the same way before the investigation sees it.
  ++resource_errors_;
  const bool investigating = f.index < 0;
  const int tries = investigating ? ++s.inv_resource_tries : ++resource_tries_[f.index];
  const bool retry = tries <= kResourceRetries && (!investigating || s.inv);
  json line{{"t", "resource"}, {"g", s.label},       {"attempt", tries},
            {"what", v.check}, {"detail", v.detail}, {"then", retry ? "retry" : "gave up"}};
  if (investigating) {
    line["finding"] = s.inv_finding ? s.inv_finding->id : "";
    line["recipe"] = f.recipe;
  } else {
    line["i"] = f.index;
  }
  record(line);
  const std::string which =
      investigating ? "a run of finding " + line["finding"].get<std::string>() : "case " + std::to_string(f.index);
  if (retry) {
    ++resource_retried_;
    const double backoff = kResourceBackoffS * (1 << (tries - 1));
    char buf[64];
    std::snprintf(buf, sizeof buf, " in %.1f s", backoff);
    say("[" + s.label + "] " + which + ": out of " + printable(v.check) + " (" + printable(v.detail) + "); retry " +
        std::to_string(tries) + " of " + std::to_string(kResourceRetries) + " on a fresh worker" + buf);
    if (!investigating) s.retries.push_back(f.index);
    recycle(s, backoff);
    return;
  }
  say("[" + s.label + "] " + which + ": out of " + printable(v.check) + " " + std::to_string(tries) +
      " times; not run (" + printable(v.detail) + ")");
  if (investigating) {  // fed as it is: a run that could not run does not fail the finding's way
    s.inv_resource_tries = 0;
    investigation_outcome(s, f, v);
    return;
  }
  resource_tries_.erase(f.index);
  if (not_run_cases_.size() < 100)
    not_run_cases_.push_back({{"index", f.index}, {"recipe", f.recipe}, {"resource", v.check}, {"detail", v.detail}});
  Verdict given_up = v;
  fuzz_outcome(s, f, given_up);
}

void Supervisor::fuzz_outcome(Slot& s, const InFlight& f, Verdict& v) {
  // A case journaled already (its verdict came twice) is settled: counted once, never again.
  if (!done_.insert(f.index).second) {
    if (!v.repro.empty()) fs::remove(v.repro);
    return;
  }
  const std::string why = v.check + (v.detail.empty() ? "" : ": " + v.detail);
  if (v.verdict == "input-error") {
    // A recipe of the stream that does not generate, or asks the target for what it cannot do
    // (run parameters beyond it), is a bug of the suite, not of the kernel: named in the journal
    // (the case line's why) and the summary.
    note_suite_error("input-error", why, f.index);
    say("[" + s.label + "] case " + std::to_string(f.index) + " could not be " +
        (v.check == "run parameters" ? "run as described: " : "generated: ") + printable(v.detail));
  }
  // A case given up for want of a resource is journaled (its index is settled) but did not run:
  // no rate, time or coverage of it.
  const bool not_run = v.verdict == "resource";
  ++cases_total_;
  const std::string& cls = f.family;
  ++by_verdict_[v.verdict];
  ++by_class_[cls];
  if (not_run) {
    ++not_run_;
  } else {
    ++cases_this_run_;
    ++s.cases;
    if (f.long_context) {
      ++long_this_run_;
      ++s.long_cases;
    }
    if (!stopping_) ++(investigator_of(s).inv ? s.investigating : s.clean).cases;
    time_target_s_ += v.target_s;
    time_oracle_s_ += v.oracle_s;
    auto& cr = class_rate_[cls];
    ++cr.first;
    cr.second += v.target_s + v.oracle_s;
    coverage_.add(stream_->at(f.index), v.device_error);
  }
  json line{{"t", "case"}, {"i", f.index}, {"v", v.verdict}, {"c", cls}, {"s", std::round(v.total_s * 1e4) / 1e4},
            {"g", s.label}};
  if (v.device_error) line["e"] = v.device_error;
  if (v.verdict == "input-error" || not_run) line["why"] = why;
  Finding* finding = nullptr;
  if (v.failed() && v.verdict != "input-error" && !not_run) {
    const std::string sig = v.signature();
    if (ledger_.tolerate(sig, opt_.kernel) != nullptr) {  // counted, not raised again
      ++tolerated_total_;
      if (!v.repro.empty()) fs::remove(v.repro);
      line["sig"] = sig;
      line["k"] = "ledger";
      record(line);
      return;
    }
    ++failed_total_;
    finding = findings_->find(sig);
    const std::string check = signature_check(sig);
    if (!finding && findings_->count_check(check) >= kMaxFindingsPerCheck) {
      // One more bucket of a check that has its reproducers: counted, not filed or shrunk.
      if (extra_[sig]++ == 0) {
        tell_known(sig, false);
        say("more of " + printable(check) + ": " + printable(signature_bucket(sig)) + " on case " +
            std::to_string(f.index) + " (counted, not filed: " + std::to_string(kMaxFindingsPerCheck) +
            " findings of that check already)");
      }
      if (!v.repro.empty()) fs::remove(v.repro);
      line["sig"] = sig;
      line["k"] = "extra";
      record(line);
      return;
    }
    if (finding) {
      ++finding->count;
      if (!v.repro.empty()) fs::remove(v.repro);
    } else {
      std::string lost;
      finding = &findings_->add(v, f.recipe, lost);
      if (lost.empty()) lost = v.evidence_error;
      new_this_run_.insert(finding);
      tell_known(finding->signature, false);
      record({{"t", "finding"},
              {"id", finding->id},
              {"sig", finding->signature},
              {"dir", "findings/" + fs::path(finding->dir).filename().string()},
              {"recipe", f.recipe},
              {"first", finding->first.to_json()},
              {"run", run_number_},
              {"elapsed_s", std::round(since(t0_) * 10) / 10}});
      if (!lost.empty()) {
        // A new finding whose evidence could not be written (a full disk): the case stays a failure
        // and the finding stays filed (its lines say so), and the campaign stops, exit 2, naming why.
        // Evidence of a signature filed already is not needed: a case of one is only counted.
        finding->state = "interrupted";
        line["evidence_error"] = lost;
        line["sig"] = finding->signature;
        line["f"] = finding->id;
        record(line);
        suite_failure("the evidence of finding " + finding->id + " (case " + std::to_string(f.index) +
                      ") could not be written: " + lost);
        return;
      }
      say("FINDING " + finding->id + " " + printable(finding->signature) + " on case " + std::to_string(f.index) +
          " (" + s.label + "): " + printable(f.recipe) + (v.detail.empty() ? "" : "\n    " + printable(v.detail)) +
          "\n    -> " + finding->dir);
      start_investigation(investigator_of(s), *finding, v, f.recipe);
    }
    line["sig"] = finding->signature;
    line["f"] = finding->id;
  }
  record(line);
}

void Supervisor::tell_known(const std::string& signature, bool pattern) {
  json m{{"op", "known"}, {"sig", signature}};
  if (pattern) m["pattern"] = true;
  for (auto& s : slots_)
    if (s->ready && s->proc.command_fd() >= 0) send_message(s->proc.command_fd(), m);
}

void Supervisor::start_investigation(Slot& s, Finding& f, const Verdict& v, const std::string& recipe,
                                     const json& progress) {
  if (s.inv) {  // this investigator is busy with another one: this one waits for a free one
    waiting_.push_back({&f, v, recipe, progress});
    return;
  }
  InvestigationLimits lim;
  lim.max_runs = opt_.max_shrink_runs;
  lim.max_seconds = opt_.max_shrink_seconds;
  s.inv = std::make_unique<Investigation>(v, Recipe::parse(recipe), takes_worker_down(v.verdict), lim);
  s.inv_finding = &f;
  s.inv_started = Clock::now();
  s.busy_s = 0;
  s.busy_before_s = 0;
  s.inv_resource_tries = 0;
  s.respawn_before_next = false;
  if (progress.is_object()) {
    // Where an earlier run left it (its shrink line). A line this investigation could not have
    // written is said and the investigation starts from the first case.
    try {
      s.inv->resume(progress);
      const json busy = progress.value("busy_s", json(0.0));
      if (busy.is_number() && std::isfinite(busy.get<double>()) && busy.get<double>() >= 0)
        s.busy_before_s = busy.get<double>();
      const std::string repro =
          progress.contains("repro") && progress.at("repro").is_string() ? progress.at("repro").get<std::string>() : "";
      const std::string file = dir_ + "/" + repro;
      std::error_code ec;
      if (repro.rfind("pending/", 0) == 0 && repro.find('/', 8) == std::string::npos &&
          fs::symlink_status(file, ec).type() == fs::file_type::regular)
        s.inv->set_shrunk_repro(file);
      std::fprintf(stderr, "vattn fuzz: finding %s: its shrinking goes on from step %d (%d runs so far)\n",
                   f.id.c_str(), s.inv->steps(), s.inv->runs());
    } catch (const InputError& e) {
      std::fprintf(stderr,
                   "vattn fuzz: %s/journal.jsonl: finding %s's last shrink line: %s; its shrinking starts again\n",
                   printable(dir_).c_str(), f.id.c_str(), printable(e.what()).c_str());
      s.inv = std::make_unique<Investigation>(v, Recipe::parse(recipe), takes_worker_down(v.verdict), lim);
    }
  }
  // The confirmation of a crash class runs in a fresh process; check_health starts one when none runs.
  if (s.inv->fresh_process()) s.proc.kill_group();
}

void Supervisor::start_waiting_investigations() {
  if (stopping_) return;
  for (auto& iv : investigators_) {
    if (waiting_.empty()) return;
    if (iv->inv) continue;
    const Waiting w = waiting_.front();
    waiting_.pop_front();
    start_investigation(*iv, *w.finding, w.first, w.recipe, w.progress);
  }
}

void Supervisor::investigation_outcome(Slot& s, const InFlight& f, const Verdict& v) {
  if (!s.inv) return;
  if (!v.evidence_error.empty()) {
    suite_failure("a run of finding " + s.inv_finding->id + " could not write its evidence: " + v.evidence_error);
    return;
  }
  const std::string before = s.inv->shrunk_repro();
  s.inv->feed(v);
  // Keep only the repro of the latest shrink step that failed the same way.
  const std::string now = s.inv->shrunk_repro();
  std::error_code ec;
  if (!v.repro.empty() && v.repro != now) fs::remove(v.repro, ec);
  if (before != now && before.find("/pending/") != std::string::npos) fs::remove(before, ec);
  (void)f;
  record_shrink(s);
}

void Supervisor::record_shrink(const Slot& s) {
  // Where the investigation stands, after each of its runs: a resume goes on from here, so a
  // campaign stopped every few seconds still finishes its shrinking.
  const Investigation& inv = *s.inv;
  const std::string repro = inv.shrunk_repro();
  const std::string pending = dir_ + "/pending/";
  json line = inv.progress();
  line["t"] = "shrink";
  line["id"] = s.inv_finding->id;
  line["busy_s"] = std::round((s.busy_before_s + s.busy_s) * 100) / 100;
  line["repro"] = repro.rfind(pending, 0) == 0 ? "pending/" + repro.substr(pending.size()) : "";
  record(line);
}

void Supervisor::finish_investigation(Slot& s) {
  Finding& f = *s.inv_finding;
  Investigation& inv = *s.inv;
  const std::string shrunk = inv.shrunk().to_line();
  if (f.state == "investigating") {
    // A file that cannot be moved or copied is written again below, by a worker; that failing too
    // stops the campaign (repro-done with an error).
    std::error_code ec;
    if (inv.steps() > 0 && inv.shrunk_repro().find("/pending/") != std::string::npos) {
      fs::rename(inv.shrunk_repro(), f.dir + "/shrunk.h5", ec);
      if (!ec) f.shrunk_repro = "shrunk.h5";
    } else if (inv.steps() == 0 && !f.repro.empty()) {
      fs::copy_file(f.dir + "/" + f.repro, f.dir + "/shrunk.h5", fs::copy_options::overwrite_existing, ec);
      if (!ec) f.shrunk_repro = "shrunk.h5";
    }
  }
  // A crash or hang left no result: write the repro files now (inputs and oracle), in a worker.
  if (f.state == "investigating" && (f.repro.empty() || f.shrunk_repro.empty())) {
    if (f.repro.empty()) s.repro_ops.emplace_back(f.recipe, f.dir + "/repro.h5");
    if (f.shrunk_repro.empty()) s.repro_ops.emplace_back(shrunk, f.dir + "/shrunk.h5");
    if (f.repro.empty()) f.repro = "repro.h5";
    if (f.shrunk_repro.empty()) f.shrunk_repro = "shrunk.h5";
    f.state = "writing repros";
    return;  // dispatch() sends them, then comes back here
  }
  f.state = "done";
  f.investigation = {{"confirmed", inv.confirmed()},
                     {"confirmation", inv.confirmation()},
                     {"shrunk_recipe", shrunk},
                     {"shrink_steps", inv.steps()},
                     {"runs", inv.runs()},
                     {"seconds", std::round(since(s.inv_started) * 10) / 10},
                     {"busy_seconds", std::round((s.busy_before_s + s.busy_s) * 10) / 10},
                     {"stop_reason", inv.stop_reason()}};
  if (const std::string why = findings_->save(f); !why.empty()) suite_failure(why);
  record({{"t", "finding-done"}, {"id", f.id}, {"investigation", f.investigation}});
  const std::string line =
      "FINDING " + f.id + " shrunk in " + std::to_string(inv.steps()) + " steps (" + std::to_string(inv.runs()) +
      " runs" + (inv.confirmed() ? "" : ", NOT confirmed in a fresh worker: no finding") + "): " + printable(shrunk) +
      "\n    reproduce: " + FindingStore::rerun_command(opt_.kernel, shrunk);
  if (inv.confirmed()) ++raised_this_run_;
  s.inv.reset();
  s.inv_finding = nullptr;
  say(line);
  // Idle now: its memory (on the GPU too) goes back to the stream; the next investigation starts a fresh one.
  s.proc.kill_group();
}

}  // namespace vattn::fuzz::supervisor_detail
