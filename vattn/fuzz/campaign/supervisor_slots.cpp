// SPDX-License-Identifier: Apache-2.0
// Slots and their workers: one stream slot per GPU (or host slot), a worker process spawned for it
// and replaced when it ends, and beside it the slot's investigator, a second worker on the same GPU
// that exists only while it confirms and shrinks a finding (supervisor_internal.h). Cases are
// dispatched (the stream's to the stream slot, an investigation's one at a time, within its share,
// to the investigator), messages read, health checked (startup, the case's deadline, heartbeats).
// A worker gone blames the case inside the code under test; the others go back to the stream.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <sys/wait.h>

#include "kernels/vattn_abi.h"
#include "vattn/case/resource_error.h"
#include "vattn/fuzz/campaign/supervisor_internal.h"

namespace vattn::fuzz::supervisor_detail {

int Supervisor::worker_threads() const {
  if (opt_.threads > 0) return opt_.threads;
  const int slots = static_cast<int>(std::max<size_t>(1, slots_.size()));
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / slots - 1);
}

std::vector<std::string> Supervisor::worker_argv(const Slot& s) const {
  // An investigator runs one case at a time: one pool thread generates and checks it.
  return {opt_.self_exe, "fuzz-worker",
          "--kernel",    opt_.kernel,
          "--budget",    stream_->config().budget,
          "--threads",   s.investigator ? std::string("1") : std::to_string(worker_threads())};
}

std::vector<Slot*> Supervisor::all_slots() {
  std::vector<Slot*> v;
  for (auto& s : slots_) v.push_back(s.get());
  for (auto& s : investigators_) v.push_back(s.get());
  return v;
}

void Supervisor::make_slots() {
  std::vector<std::string> gpus;
  if (is_host_target(opt_.kernel)) {
    for (int i = 0; i < std::max(1, opt_.workers); ++i) gpus.push_back("");
  } else {
    const auto visible = visible_gpus();
    if (opt_.gpus == "all") {
      gpus = visible;
    } else {
      std::stringstream in(opt_.gpus);
      std::string item;
      while (std::getline(in, item, ',')) {
        if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos)
          throw InputError("", "", "--gpus", "'" + opt_.gpus + "' is not all or a list like 0,1");
        if (std::stoll(item) >= static_cast<long long>(visible.size())) {
          throw InputError("", "", "--gpus",
                           "GPU " + item + " is not visible (" + std::to_string(visible.size()) + " visible)");
        }
        gpus.push_back(visible[static_cast<size_t>(std::stoll(item))]);
      }
    }
    if (gpus.empty())
      throw InputError("", "", "--kernel",
                       "no CUDA device is visible; GPU revisions cannot be fuzzed here (host:* targets can)");
  }
  for (size_t i = 0; i < gpus.size(); ++i) {
    auto s = std::make_unique<Slot>();
    s->id = static_cast<int>(i);
    s->gpu = gpus[i];
    s->label = (gpus[i].empty() ? "host" : "gpu") + std::to_string(i);
    auto iv = std::make_unique<Slot>();
    iv->id = s->id;
    iv->gpu = s->gpu;
    iv->label = s->label + "-inv";
    iv->investigator = true;
    slots_.push_back(std::move(s));
    investigators_.push_back(std::move(iv));
  }
}

namespace {

// The statistics of a worker that is gone are kept on the slot: the summary covers the whole run.
void retire_stats(Slot& s) {
  s.up_s_done += s.up_s;
  s.run_s_done += s.run_s;
  s.pool_s_done += s.pool_s;
  for (auto it = s.phases.begin(); it != s.phases.end(); ++it)
    if (it.value().is_number()) s.phases_done[it.key()] = s.phases_done.value(it.key(), 0.0) + it.value().get<double>();
  s.up_s = s.run_s = s.pool_s = 0;
  s.phases = json::object();
}

}  // namespace

void Supervisor::spawn(Slot& s) {
  std::map<std::string, std::string> env;
  if (!s.gpu.empty()) env["CUDA_VISIBLE_DEVICES"] = s.gpu;
  // A worker makes and frees a few hundred MB per long case. Transparent huge pages for
  // malloc's large blocks (glibc >= 2.35; older ones ignore the name) cut the page faults that
  // take about a tenth of generation; a user's own setting of the tunable wins.
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  const std::string have = tunables ? tunables : "";
  if (have.find("glibc.malloc.hugetlb") == std::string::npos)
    env["GLIBC_TUNABLES"] = have.empty() ? "glibc.malloc.hugetlb=1" : have + ":glibc.malloc.hugetlb=1";
  try {
    // The investigator yields the CPU to the stream's worker (a niceness of 10).
    s.proc.spawn(worker_argv(s), env, dir_ + "/workers/" + s.label + ".log", s.investigator ? 10 : 0);
  } catch (const ResourceError& e) {
    // No descriptors, memory or processes left for a worker now: try again after a pause; three
    // in a row end the campaign like any worker that cannot start.
    ++resource_errors_;
    ++resource_retried_;
    ++s.startup_failures;
    s.not_before = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                                      kResourceBackoffS * (1 << std::min(s.startup_failures, 4))));
    record({{"t", "resource"},
            {"g", s.label},
            {"attempt", s.startup_failures},
            {"what", e.resource()},
            {"detail", std::string("worker start: ") + e.what()},
            {"then", "retry"}});
    say("[" + s.label + "] cannot start a worker (" + printable(e.what()) + "); trying again");
    return;
  }
  s.reader = LineReader();
  s.ready = false;
  s.spawned_at = s.last_message = Clock::now();
  s.running.reset();
  s.crash_what.clear();
  retire_stats(s);
  s.respawn_before_next = false;  // this one is fresh
  ++s.respawns;
}

double Supervisor::deadline_for(int64_t work) const {
  // The floor covers fixed costs (process and CUDA start, plan, first-touch allocations); above it
  // 20x the slowest rate seen so far, so a long context is never taken for a hang.
  const double per = learned_from_ >= 8 ? per_work_ : (is_host_target(opt_.kernel) ? 2e-6 : 5e-8);
  return opt_.case_timeout + 20.0 * per * static_cast<double>(work);
}

void Supervisor::dispatch(Slot& s) {
  if (s.investigator) {
    dispatch_investigation(s);
    return;
  }
  if (!s.ready || s.proc.command_fd() < 0 || stopping_) return;
  // Enough cases ahead to keep the worker's pool generating while its main thread runs one.
  const size_t cap = static_cast<size_t>(opt_.window > 0 ? opt_.window : 2 * worker_threads() + 2);
  while (s.inflight.size() < cap) {
    std::optional<int64_t> idx;
    if (!s.retries.empty()) {  // a resource error's retry: first, on this fresh worker
      idx = s.retries.front();
      s.retries.pop_front();
    } else {
      idx = next_index();
    }
    if (!idx) return;
    const StreamCase sc = stream_->at(*idx);
    InFlight f;
    f.index = *idx;
    f.recipe = sc.recipe.to_line();
    f.work = sc.work;
    f.family = size_class(sc);
    f.long_context = sc.long_context;
    const std::string repro = dir_ + "/pending/case" + std::to_string(*idx) + ".h5";
    if (!send_message(s.proc.command_fd(),
                      {{"op", "case"}, {"index", f.index}, {"recipe", f.recipe}, {"repro", repro}})) {
      requeue_.insert(*idx);
      return;
    }
    s.inflight[f.index] = f;
  }
}

bool Supervisor::investigator_yields(const Slot& s) const {
  // Within its share of the time since the investigation began, while the stream has cases. It runs
  // flat out when the campaign only waits for it: no cases left, or --stop-after-findings reached
  // once the findings being investigated are confirmed.
  if (!stream_has_cases()) return false;
  if (opt_.stop_after_findings > 0) {
    int64_t found = 0;
    for (const Finding* f : new_this_run_) found += raised(*f) ? 1 : 0;
    if (found >= opt_.stop_after_findings) return false;
  }
  return s.busy_s > opt_.investigation_share * since(s.inv_started);
}

void Supervisor::dispatch_investigation(Slot& s) {
  if (!s.inv || !s.ready || s.proc.command_fd() < 0) return;
  if (!s.inflight.empty() || s.repro_waiting) return;  // one run at a time
  if (!s.inv->done() && s.busy_before_s + s.busy_s > opt_.max_shrink_seconds) s.inv->out_of_time();
  if (!s.inv->done() && s.inv->fresh_process() && s.respawn_before_next) {
    if (investigator_yields(s)) return;
    spawn(s);  // a fresh process for each run of a class that can take a worker down
    return;
  }
  if (auto r = s.inv->next()) {
    if (investigator_yields(s)) return;
    InFlight f;
    f.index = s.inv_next_index--;
    f.recipe = r->to_line();
    f.work = recipe_work(*r);
    // Named by run too: a resumed investigation may go on from a file an earlier run left here.
    const std::string repro =
        dir_ + "/pending/r" + std::to_string(run_number_) + "-shrink" + std::to_string(-f.index) + ".h5";
    send_message(s.proc.command_fd(),
                 {{"op", "case"}, {"index", f.index}, {"recipe", f.recipe}, {"repro", repro}, {"force_repro", true}});
    s.inflight[f.index] = f;
    s.respawn_before_next = s.inv->fresh_process();
    ++s.runs;
    return;
  }
  if (!s.repro_ops.empty()) {
    const auto [recipe, path] = s.repro_ops.front();
    s.repro_ops.pop_front();
    send_message(s.proc.command_fd(),
                 {{"op", "repro"}, {"index", s.inv_next_index--}, {"recipe", recipe}, {"repro", path}});
    s.repro_waiting = true;
    return;
  }
  finish_investigation(s);
}

void Supervisor::pump(Slot& s) {
  if (s.proc.report_fd() < 0) return;
  const bool open = s.reader.fill(s.proc.report_fd());
  json m;
  while (s.reader.next(m)) {
    s.last_message = Clock::now();
    try {
      handle(s, m);
    } catch (const json::exception& e) {
      say("[" + s.label + "] unreadable worker message: " + printable(e.what()));
    }
  }
  (void)open;  // end of file is seen through exited() below
}

void Supervisor::handle(Slot& s, const json& m) {
  const std::string ev = m.value("ev", "");
  if (ev == "ready") {
    if (stream_->config().plan_variants && !m.value("plan_hook", false)) {
      // Its cases would run with this GPU's plan, not the one they name: stop before any runs.
      fatal_reason_ = "the case stream draws other GPUs' plans (sms=, sm_blocks=), and " + opt_.kernel + " (" +
                      m.value("target", std::string("?")) +
                      ") has no test plan hook (" VATTN_TEST_PLAN_FOR_SYMBOL
                      ", kernels/vattn_abi.h) to run them; pass --plan-variants off to fuzz it with its own plan only";
      fatal_usage_ = true;
      stopping_ = true;
      stop_reason_ = "the target cannot run the stream's plans";
      return;
    }
    s.ready = true;
    s.startup_failures = 0;
    for (Finding* f : findings_->all()) send_message(s.proc.command_fd(), {{"op", "known"}, {"sig", f->signature}});
    for (const auto& extra : extra_) send_message(s.proc.command_fd(), {{"op", "known"}, {"sig", extra.first}});
    for (const LedgerEntry& e : ledger_.entries())  // a pattern: a glob, or a check with any bucket
      send_message(s.proc.command_fd(), {{"op", "known"}, {"sig", e.signature}, {"pattern", true}});
  } else if (ev == "fatal") {
    s.fatal = m.value("reason", "");
    s.fatal_usage = m.value("usage", false);
  } else if (ev == "hb") {
    s.run_s = m.value("run_s", 0.0);
    s.up_s = m.value("up_s", 0.0);
    s.pool_s = m.value("pool_s", 0.0);
    if (m.contains("phases") && m["phases"].is_object()) s.phases = m["phases"];
  } else if (ev == "start") {
    const int64_t i = m.at("index").get<int64_t>();
    auto it = s.inflight.find(i);
    if (it != s.inflight.end()) {
      it->second.started = true;
      it->second.started_at = Clock::now();
      s.running = i;
    }
  } else if (ev == "ran") {
    const int64_t i = m.at("index").get<int64_t>();
    auto it = s.inflight.find(i);
    if (it != s.inflight.end()) {
      it->second.ran = true;
      const double d = since(it->second.started_at);
      if (it->second.work >= 10000) {
        per_work_ = std::max(per_work_, d / static_cast<double>(it->second.work));
        ++learned_from_;
      }
    }
    if (s.running == i) s.running.reset();
  } else if (ev == "crash") {
    s.crash_what[m.at("index").get<int64_t>()] = m.value("what", "");
  } else if (ev == "result") {
    Verdict v = Verdict::from_json(m.at("result"));
    auto it = s.inflight.find(v.index);
    if (it == s.inflight.end()) return;
    const InFlight f = it->second;
    s.inflight.erase(it);
    if (s.running == v.index) s.running.reset();
    outcome(s, f, v);
  } else if (ev == "repro-done") {
    s.repro_waiting = false;
    if (m.contains("error"))  // a finding without its evidence: the campaign cannot go on as if it had it
      suite_failure("a repro file of finding " + (s.inv_finding ? s.inv_finding->id : std::string("?")) +
                    " could not be written: " + m.value("error", std::string("?")));
  }
}

void Supervisor::worker_gone(Slot& s, const std::string& how, const std::string& verdict) {
  // Blame the case inside the code under test; the others go back to the stream untouched.
  std::optional<InFlight> blamed;
  if (s.running) {
    auto it = s.inflight.find(*s.running);
    if (it != s.inflight.end()) blamed = it->second;
  }
  std::string crash_what;
  if (blamed) {
    auto c = s.crash_what.find(blamed->index);
    if (c != s.crash_what.end()) crash_what = c->second;
  }
  std::vector<InFlight> others;
  for (const auto& [i, f] : s.inflight)
    if (!blamed || i != blamed->index) others.push_back(f);
  s.inflight.clear();
  s.running.reset();
  retire_stats(s);
  s.repro_waiting = false;
  // The stream's rate counts the time a worker could run cases: not the time a case that ended it
  // held it (a hang's deadline), which the code under test costs with or without an investigation.
  if (blamed && !s.investigator) {
    Span& span = investigator_of(s).inv ? s.investigating : s.clean;
    span.seconds = std::max(0.0, span.seconds - since(blamed->started_at));
  }
  for (const auto& f : others) {
    if (f.index >= 0) {
      requeue_.insert(f.index);
    } else if (s.inv) {
      Verdict v;
      v.index = f.index;
      v.verdict = "died";
      v.check = "the worker ended before this run started";
      investigation_outcome(s, f, v);
    }
  }
  if (!s.ready) {
    ++s.startup_failures;
    return;
  }
  if (!blamed) {
    if (!others.empty()) {
      note_suite_error("worker ended outside the code under test",
                       how + "; " + std::to_string(others.size()) + " case(s) went back to the stream; log: " + dir_ +
                           "/workers/" + s.label + ".log",
                       -1);
      say("[" + s.label + "] worker ended outside the code under test (" + how + "); " + std::to_string(others.size()) +
          " case(s) go back to the stream; log: " + dir_ + "/workers/" + s.label + ".log");
    }
    return;
  }
  Verdict v;
  v.index = blamed->index;
  v.verdict = verdict;
  if (!crash_what.empty()) {
    // A CUDA error names itself (cudaErrorIllegalAddress ...): that, not the file and line, is the signature.
    v.verdict = "crash";
    v.check = cuda_error_check(crash_what);
    v.detail = crash_what;
  } else {
    // A hang's figures (which deadline, how long) vary from run to run: the check names the kind only.
    v.check = verdict == "hang" ? (how.rfind("no heartbeat", 0) == 0 ? "heartbeat lost" : "deadline passed") : how;
    v.detail = how + " while running the code under test";
  }
  v.total_s = since(blamed->started_at);
  outcome(s, *blamed, v);
}

void Supervisor::check_health(Slot& s) {
  int status = 0;
  if (s.proc.alive() && s.proc.exited(&status)) {
    const std::string how = describe_wait_status(status);
    const bool signaled = WIFSIGNALED(status);
    worker_gone(s, how, signaled ? "crash" : "died");
  }
  if (!s.proc.alive()) {
    if (!s.fatal.empty()) {
      fatal_reason_ = s.fatal;
      fatal_usage_ = fatal_usage_ || s.fatal_usage;
      stopping_ = true;
      stop_reason_ = "the target could not be loaded";
      return;
    }
    if (s.startup_failures >= 3) {
      fatal_reason_ = "3 workers in a row ended before they were ready; see " + dir_ + "/workers/" + s.label + ".log";
      stopping_ = true;
      stop_reason_ = "workers cannot start";
      return;
    }
    // An investigator's next fresh process waits for its share like its next run.
    const bool wanted = s.investigator ? s.inv != nullptr && !investigator_yields(s) : !stopping_;
    if (wanted && Clock::now() >= s.not_before) spawn(s);
    return;
  }
  const auto now = Clock::now();
  if (!s.ready) {
    if (since(s.spawned_at) > opt_.startup_timeout) {
      s.proc.kill_group();
      ++s.startup_failures;
    }
    return;
  }
  if (s.running) {
    auto it = s.inflight.find(*s.running);
    if (it != s.inflight.end()) {
      const double limit = deadline_for(it->second.work);
      if (std::chrono::duration<double>(now - it->second.started_at).count() > limit) {
        s.proc.kill_group();
        char buf[96];
        std::snprintf(buf, sizeof buf, "no verdict within %.0f s", limit);
        worker_gone(s, buf, "hang");  // signature "hang: deadline" (the figure goes in the detail)
        return;
      }
    }
  }
  if (std::chrono::duration<double>(now - s.last_message).count() > opt_.heartbeat_timeout) {
    s.proc.kill_group();
    char buf[96];
    std::snprintf(buf, sizeof buf, "no heartbeat for %.0f s", opt_.heartbeat_timeout);
    worker_gone(s, buf, "hang");
  }
}

void Supervisor::recycle(Slot& s, double backoff_s) {
  // Its other cases were not blamed for anything: they go back to the stream.
  for (const auto& [i, f] : s.inflight)
    if (i >= 0) requeue_.insert(i);
  s.inflight.clear();
  s.running.reset();
  s.crash_what.clear();
  s.repro_waiting = false;
  s.respawn_before_next = false;
  s.proc.kill_group();
  s.not_before = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(backoff_s));
}

}  // namespace vattn::fuzz::supervisor_detail
