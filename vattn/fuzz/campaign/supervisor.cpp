// SPDX-License-Identifier: Apache-2.0
#include "vattn/fuzz/campaign/supervisor.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <ctime>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <poll.h>
#include <unistd.h>

#include "vattn/case/case.h"
#include "vattn/fuzz/gen/case_stream.h"
#include "vattn/fuzz/campaign/coverage.h"
#include "vattn/fuzz/campaign/findings.h"
#include "vattn/fuzz/campaign/investigation.h"
#include "vattn/fuzz/campaign/journal.h"
#include "vattn/fuzz/campaign/ledger.h"
#include "vattn/fuzz/campaign/report_runner.h"
#include "vattn/fuzz/protocol/protocol.h"
#include "vattn/fuzz/worker/target.h"
#include "vattn/fuzz/campaign/supervisor_util.h"
#include "vattn/fuzz/campaign/worker_process.h"

namespace vattn::fuzz {

namespace fs = std::filesystem;
using supervisor_detail::Clock;
using supervisor_detail::cuda_error_check;
using supervisor_detail::hms;
using supervisor_detail::is_host_target;
using supervisor_detail::since;
using supervisor_detail::utc_now;
using supervisor_detail::visible_gpus;

namespace {

volatile std::sig_atomic_t g_stop_requests = 0;
void on_stop_signal(int) { g_stop_requests = g_stop_requests + 1; }

struct InFlight {
  int64_t index = 0;
  std::string recipe;
  int64_t work = 0;
  bool long_context = false;
  bool started = false, ran = false;
  Clock::time_point started_at;
};

struct Slot {
  int id = 0;
  std::string gpu;    // CUDA_VISIBLE_DEVICES for its workers; "" on the host
  std::string label;  // "gpu0", "host0"
  WorkerProcess proc;
  LineReader reader;
  bool ready = false;
  Clock::time_point spawned_at, last_message;
  std::map<int64_t, InFlight> inflight;
  std::optional<int64_t> running;         // the case inside the code under test
  std::map<int64_t, std::string> crash_what;  // a worker's own crash report, by case
  int startup_failures = 0;
  std::string fatal;
  bool fatal_usage = false;
  // An investigation this slot is running (its cases have negative indices).
  std::unique_ptr<Investigation> inv;
  Finding* inv_finding = nullptr;
  Clock::time_point inv_started;
  int64_t inv_next_index = -1;
  bool respawn_before_next = false;
  std::deque<std::pair<std::string, std::string>> repro_ops;  // (recipe, path) to write
  bool repro_waiting = false;
  // statistics
  int64_t cases = 0, long_cases = 0, respawns = 0;
  double run_s = 0, up_s = 0, pool_s = 0;        // from the current worker's heartbeat
  double run_s_done = 0, up_s_done = 0, pool_s_done = 0;  // from workers already gone
  json phases = json::object(), phases_done = json::object();  // the target's seconds per phase
};

class Supervisor {
 public:
  explicit Supervisor(const CampaignOptions& o) : opt_(o) {}
  int run();

 private:
  // setup
  void open_campaign();
  void make_slots();
  std::vector<std::string> worker_argv() const;
  int worker_threads() const;
  void spawn(Slot& s);
  // loop
  void dispatch(Slot& s);
  void pump(Slot& s);
  void handle(Slot& s, const json& m);
  void check_health(Slot& s);
  void worker_gone(Slot& s, const std::string& how, const std::string& verdict);
  void outcome(Slot& s, const InFlight& f, Verdict v);
  void fuzz_outcome(Slot& s, const InFlight& f, Verdict& v);
  void investigation_outcome(Slot& s, const InFlight& f, const Verdict& v);
  void start_investigation(Slot& s, Finding& f, const Verdict& v, const std::string& recipe);
  void finish_investigation(Slot& s);
  double deadline_for(int64_t work) const;
  std::optional<int64_t> next_index();
  int64_t planned_cases() const;  // indices of this shard below --cases (-1: no --cases)
  bool finished() const;
  bool investigations_done() const;  // no finding being confirmed, shrunk or waiting for it
  // output
  void progress_line(bool force);
  void say(const std::string& line);  // a line above the progress line (terminal only)
  void tick();
  void write_summary(const std::string& reason);
  std::string summary_text(const std::string& reason) const;

  CampaignOptions opt_;
  std::string dir_;
  std::unique_ptr<CaseStream> stream_;
  Journal journal_;
  std::unique_ptr<FindingStore> findings_;
  Ledger ledger_;
  int64_t tolerated_total_ = 0;
  Coverage coverage_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::set<int64_t> done_, requeue_;
  int64_t next_fresh_ = 0;
  int64_t run_number_ = 1;
  Clock::time_point t0_ = Clock::now(), last_progress_, last_tick_;
  // totals (campaign-wide: resumed runs included)
  std::map<std::string, int64_t> by_verdict_, by_class_;
  int64_t cases_total_ = 0, cases_this_run_ = 0, long_this_run_ = 0, failed_total_ = 0, suite_errors_ = 0;
  int64_t new_findings_ = 0;
  double earlier_seconds_ = 0;
  double per_work_ = 0;  // learned: the slowest seconds per unit of work seen in the code under test
  int64_t learned_from_ = 0;
  struct Waiting {
    Finding* finding;
    Verdict first;
    std::string recipe;
  };
  std::deque<Waiting> waiting_;  // new findings whose slot was busy shrinking another
  bool stopping_ = false;
  std::string stop_reason_;
  bool fatal_usage_ = false;
  std::string fatal_reason_;
  double time_target_s_ = 0, time_oracle_s_ = 0;
  std::map<std::string, std::pair<int64_t, double>> class_rate_;  // class -> (cases, seconds in code under test + oracle)
};

int Supervisor::worker_threads() const {
  if (opt_.threads > 0) return opt_.threads;
  const int slots = static_cast<int>(std::max<size_t>(1, slots_.size()));
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / slots - 1);
}

std::vector<std::string> Supervisor::worker_argv() const {
  return {opt_.self_exe, "fuzz-worker", "--kernel", opt_.kernel, "--budget", stream_->config().budget,
          "--threads", std::to_string(worker_threads())};
}

void Supervisor::open_campaign() {
  if (!opt_.resume_dir.empty()) {
    dir_ = opt_.resume_dir;
    const JournalState st = read_journal(dir_ + "/journal.jsonl");
    const json& c = st.campaign;
    if (!opt_.kernel.empty() && opt_.kernel != c.value("kernel", "")) {
      throw InputError(dir_, "", "--kernel",
                       "this campaign fuzzes '" + c.value("kernel", "") + "'; --resume keeps its kernel (leave --kernel out)");
    }
    opt_.kernel = c.value("kernel", "");
    StreamConfig sc;
    sc.seed = c.value("seed", uint64_t{1});
    sc.budget = c.value("budget", "large");
    sc.device_variants = c.value("device_variants", false);
    stream_ = std::make_unique<CaseStream>(sc);
    if (opt_.cases < 0) opt_.cases = c.value("cases", int64_t{-1});
    if (c.contains("shard")) {
      opt_.shard_index = c.at("shard").at(0).get<int64_t>();
      opt_.shard_count = c.at("shard").at(1).get<int64_t>();
    }
    done_ = st.done;
    by_verdict_ = st.by_verdict;
    by_class_ = st.by_class;
    cases_total_ = static_cast<int64_t>(done_.size());
    for (const auto& [v, n] : by_verdict_)
      if (v != "pass") failed_total_ += n;
    // Tolerated cases (the ledger) are failed cases that are not raised: counted apart.
    for (const auto& [sig, n] : st.tolerated) {
      tolerated_total_ += n;
      failed_total_ -= n;
      if (LedgerEntry* e = ledger_.match(sig, opt_.kernel)) e->count += n;
    }
    earlier_seconds_ = st.seconds;
    run_number_ = st.runs + 1;
    journal_.open_append(dir_ + "/journal.jsonl");
    findings_ = std::make_unique<FindingStore>(dir_, opt_.kernel);
    for (const auto& fl : st.findings) {
      const std::string id = fl.value("id", "");
      auto it = st.finding_done.find(id);
      auto hit = st.hits.find(id);
      Finding& f =
          findings_->restore(fl, it == st.finding_done.end() ? nullptr : &it->second, hit == st.hits.end() ? 0 : hit->second);
      if (f.state == "interrupted") {  // its shrinking was cut short: start it again from the first case
        f.state = "investigating";
        waiting_.push_back({&f, f.first, f.recipe});
      }
    }
    if (opt_.cases < 0 && opt_.hours < 0) opt_.hours = 8;
    // Coverage is campaign-wide: the recipes of the cases already run come back from the stream.
    for (int64_t i : done_) coverage_.add(stream_->at(i), 0);
    journal_.append({{"t", "run"}, {"run", run_number_}, {"started", utc_now()}, {"resumed", true},
                     {"argv", opt_.argv_line}, {"done_before", cases_total_}, {"ledger", opt_.ledger}});
    return;
  }
  dir_ = opt_.out_dir;
  if (fs::exists(dir_ + "/journal.jsonl")) {
    throw InputError(dir_, "", "--out", "already holds a campaign (journal.jsonl); continue it with --resume " + dir_ +
                                            " or choose another --out");
  }
  fs::create_directories(dir_ + "/findings");
  StreamConfig sc;
  sc.seed = opt_.seed;
  sc.budget = opt_.budget;
  sc.device_variants = !is_host_target(opt_.kernel);
  stream_ = std::make_unique<CaseStream>(sc);
  journal_.create(dir_ + "/journal.jsonl");
  json campaign{{"t", "campaign"}, {"schema", kJournalSchema}, {"version", kJournalVersion}, {"kernel", opt_.kernel},
                {"seed", sc.seed}, {"budget", sc.budget}, {"device_variants", sc.device_variants},
                {"cases", opt_.cases}, {"created", utc_now()}, {"generator", std::string("vattn ") + VATTN_VERSION}};
  if (opt_.shard_given) campaign["shard"] = {opt_.shard_index, opt_.shard_count};
  journal_.append(campaign);
  journal_.append({{"t", "run"}, {"run", run_number_}, {"started", utc_now()}, {"resumed", false}, {"argv", opt_.argv_line},
                   {"ledger", opt_.ledger}});
  journal_.sync();
  findings_ = std::make_unique<FindingStore>(dir_, opt_.kernel);
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
          throw InputError("", "", "--gpus", "GPU " + item + " is not visible (" + std::to_string(visible.size()) + " visible)");
        }
        gpus.push_back(visible[static_cast<size_t>(std::stoll(item))]);
      }
    }
    if (gpus.empty()) throw InputError("", "", "--kernel", "no CUDA device is visible; GPU revisions cannot be fuzzed here (host:* targets can)");
  }
  for (size_t i = 0; i < gpus.size(); ++i) {
    auto s = std::make_unique<Slot>();
    s->id = static_cast<int>(i);
    s->gpu = gpus[i];
    s->label = (gpus[i].empty() ? "host" : "gpu") + std::to_string(i);
    slots_.push_back(std::move(s));
  }
}

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
  s.proc.spawn(worker_argv(), env, dir_ + "/workers/" + s.label + ".log");
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

std::optional<int64_t> Supervisor::next_index() {
  if (!requeue_.empty()) {
    const int64_t i = *requeue_.begin();
    requeue_.erase(requeue_.begin());
    return i;
  }
  // This shard's indices: shard_index, shard_index + shard_count, ... (next_fresh_ counts them).
  auto index_of = [&](int64_t k) { return opt_.shard_index + k * opt_.shard_count; };
  while (done_.count(index_of(next_fresh_))) ++next_fresh_;
  const int64_t i = index_of(next_fresh_);
  if (opt_.cases >= 0 && i >= opt_.cases) return std::nullopt;
  ++next_fresh_;
  return i;
}

int64_t Supervisor::planned_cases() const {
  if (opt_.cases < 0) return -1;
  if (opt_.shard_index >= opt_.cases) return 0;
  return (opt_.cases - opt_.shard_index + opt_.shard_count - 1) / opt_.shard_count;
}

void Supervisor::dispatch(Slot& s) {
  if (!s.ready || s.proc.command_fd() < 0) return;
  if (s.inv) {
    if (!s.inflight.empty() || s.repro_waiting) return;
    if (!s.inv->done() && s.inv->fresh_process() && s.respawn_before_next) {
      s.respawn_before_next = false;
      retire_stats(s);
      spawn(s);  // a fresh process for each run of a class that can take a worker down
      return;
    }
    if (!s.inv->done() && since(s.inv_started) > opt_.max_shrink_seconds) s.inv->out_of_time();
    if (auto r = s.inv->next()) {
      InFlight f;
      f.index = s.inv_next_index--;
      f.recipe = r->to_line();
      f.work = recipe_work(*r);
      const std::string repro = dir_ + "/pending/shrink" + std::to_string(-f.index) + ".h5";
      send_message(s.proc.command_fd(),
                   {{"op", "case"}, {"index", f.index}, {"recipe", f.recipe}, {"repro", repro}, {"force_repro", true}});
      s.inflight[f.index] = f;
      s.respawn_before_next = s.inv->fresh_process();
      return;
    }
    if (!s.repro_ops.empty()) {
      const auto [recipe, path] = s.repro_ops.front();
      s.repro_ops.pop_front();
      send_message(s.proc.command_fd(), {{"op", "repro"}, {"index", s.inv_next_index--}, {"recipe", recipe}, {"repro", path}});
      s.repro_waiting = true;
      return;
    }
    finish_investigation(s);
    return;
  }
  if (!waiting_.empty() && !stopping_) {
    const Waiting w = waiting_.front();
    waiting_.pop_front();
    start_investigation(s, *w.finding, w.first, w.recipe);
    return;
  }
  if (stopping_) return;
  // Enough cases ahead to keep the worker's pool generating while its main thread runs one.
  const size_t cap = static_cast<size_t>(opt_.window > 0 ? opt_.window : 2 * worker_threads() + 2);
  while (s.inflight.size() < cap) {
    const auto idx = next_index();
    if (!idx) return;
    const StreamCase sc = stream_->at(*idx);
    InFlight f;
    f.index = *idx;
    f.recipe = sc.recipe.to_line();
    f.work = sc.work;
    f.long_context = sc.long_context;
    const std::string repro = dir_ + "/pending/case" + std::to_string(*idx) + ".h5";
    if (!send_message(s.proc.command_fd(), {{"op", "case"}, {"index", f.index}, {"recipe", f.recipe}, {"repro", repro}})) {
      requeue_.insert(*idx);
      return;
    }
    s.inflight[f.index] = f;
  }
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
    s.ready = true;
    s.startup_failures = 0;
    for (Finding* f : findings_->all()) send_message(s.proc.command_fd(), {{"op", "known"}, {"sig", f->signature}});
    for (const LedgerEntry& e : ledger_.entries()) send_message(s.proc.command_fd(), {{"op", "known"}, {"sig", e.signature}});
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
    if (m.contains("error")) say("[" + s.label + "] repro not written: " + printable(m.value("error", "")));
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
      ++suite_errors_;
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
    if (!stopping_ || s.inv) spawn(s);
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

void Supervisor::outcome(Slot& s, const InFlight& f, Verdict v) {
  if (f.index < 0) {
    investigation_outcome(s, f, v);
    return;
  }
  fuzz_outcome(s, f, v);
}

void Supervisor::fuzz_outcome(Slot& s, const InFlight& f, Verdict& v) {
  if (v.verdict == "input-error") {
    // A recipe of the stream that does not generate is a bug of the suite, not of the kernel.
    ++suite_errors_;
    say("[" + s.label + "] case " + std::to_string(f.index) + " could not be generated: " + printable(v.detail));
  }
  done_.insert(f.index);
  ++cases_total_;
  ++cases_this_run_;
  ++s.cases;
  const std::string cls = f.long_context ? "long" : "short";
  if (f.long_context) {
    ++long_this_run_;
    ++s.long_cases;
  }
  ++by_verdict_[v.verdict];
  ++by_class_[cls];
  time_target_s_ += v.target_s;
  time_oracle_s_ += v.oracle_s;
  auto& cr = class_rate_[cls];
  ++cr.first;
  cr.second += v.target_s + v.oracle_s;
  const StreamCase sc = stream_->at(f.index);
  coverage_.add(sc, v.device_error);
  json line{{"t", "case"}, {"i", f.index}, {"v", v.verdict}, {"c", cls}, {"s", std::round(v.total_s * 1e4) / 1e4},
            {"g", s.label}};
  if (v.device_error) line["e"] = v.device_error;
  Finding* finding = nullptr;
  if (v.failed() && v.verdict != "input-error") {
    if (LedgerEntry* known = ledger_.match(v.signature(), opt_.kernel)) {  // counted, not raised again
      ++known->count;
      ++tolerated_total_;
      if (!v.repro.empty()) fs::remove(v.repro);
      line["sig"] = v.signature();
      line["k"] = "ledger";
      journal_.append(line);
      return;
    }
    ++failed_total_;
    finding = findings_->find(v.signature());
    if (finding) {
      ++finding->count;
      if (!v.repro.empty()) fs::remove(v.repro);
    } else {
      finding = &findings_->add(v, f.recipe);
      ++new_findings_;
      for (auto& other : slots_)
        if (other->ready && other->proc.command_fd() >= 0)
          send_message(other->proc.command_fd(), {{"op", "known"}, {"sig", finding->signature}});
      journal_.append({{"t", "finding"}, {"id", finding->id}, {"sig", finding->signature}, {"dir", finding->dir},
                       {"recipe", f.recipe}, {"first", v.to_json()}, {"run", run_number_},
                       {"elapsed_s", std::round(since(t0_) * 10) / 10}});
      say("FINDING " + finding->id + " " + printable(finding->signature) + " on case " + std::to_string(f.index) + " (" +
          s.label + "): " + printable(f.recipe) + (v.detail.empty() ? "" : "\n    " + printable(v.detail)) + "\n    -> " +
          finding->dir);
      start_investigation(s, *finding, v, f.recipe);
    }
    line["sig"] = finding->signature;
    line["f"] = finding->id;
  }
  journal_.append(line);
}

void Supervisor::start_investigation(Slot& s, Finding& f, const Verdict& v, const std::string& recipe) {
  if (s.inv) {  // this slot is busy with another one: this one waits its turn
    waiting_.push_back({&f, v, recipe});
    return;
  }
  InvestigationLimits lim;
  lim.max_runs = opt_.max_shrink_runs;
  lim.max_seconds = opt_.max_shrink_seconds;
  s.inv = std::make_unique<Investigation>(v, Recipe::parse(recipe), takes_worker_down(v.verdict), lim);
  s.inv_finding = &f;
  s.inv_started = Clock::now();
  // The other cases this worker holds: a crash class needs a fresh worker now, so they go back.
  s.respawn_before_next = s.inv->fresh_process() && s.proc.alive();
  if (s.respawn_before_next) {
    for (const auto& [i, fl] : s.inflight)
      if (i >= 0) requeue_.insert(i);
    s.inflight.clear();
    s.running.reset();
    s.proc.kill_group();
    s.respawn_before_next = false;
  }
}

void Supervisor::investigation_outcome(Slot& s, const InFlight& f, const Verdict& v) {
  if (!s.inv) return;
  const std::string before = s.inv->shrunk_repro();
  s.inv->feed(v);
  // Keep only the repro of the latest shrink step that failed the same way.
  const std::string now = s.inv->shrunk_repro();
  std::error_code ec;
  if (!v.repro.empty() && v.repro != now) fs::remove(v.repro, ec);
  if (before != now && before.find("/pending/") != std::string::npos) fs::remove(before, ec);
  (void)f;
}

void Supervisor::finish_investigation(Slot& s) {
  Finding& f = *s.inv_finding;
  Investigation& inv = *s.inv;
  const std::string shrunk = inv.shrunk().to_line();
  if (f.state == "investigating") {
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
  f.investigation = {{"confirmed", inv.confirmed()}, {"shrunk_recipe", shrunk}, {"shrink_steps", inv.steps()},
                     {"runs", inv.runs()}, {"seconds", std::round(since(s.inv_started) * 10) / 10},
                     {"stop_reason", inv.stop_reason()}};
  findings_->save(f);
  journal_.append({{"t", "finding-done"}, {"id", f.id}, {"investigation", f.investigation}});
  const std::string line = "FINDING " + f.id + " shrunk in " + std::to_string(inv.steps()) + " steps (" +
                           std::to_string(inv.runs()) + " runs" +
                           (inv.confirmed() ? "" : ", NOT confirmed in a fresh worker") + "): " + printable(shrunk) +
                           "\n    reproduce: " + FindingStore::rerun_command(opt_.kernel, shrunk);
  s.inv.reset();
  s.inv_finding = nullptr;
  say(line);
  // A crash class ran its last candidate in a process of its own: start fuzzing in a fresh one.
  if (takes_worker_down(f.first.verdict)) s.proc.kill_group();
}

bool Supervisor::investigations_done() const {
  for (const auto& s : slots_)
    if (s->inv) return false;
  return waiting_.empty();
}

bool Supervisor::finished() const {
  // Only this shard's indices below --cases are ever dispatched, so the count says it.
  if (opt_.cases < 0 || static_cast<int64_t>(done_.size()) < planned_cases()) return false;
  return investigations_done();
}

void Supervisor::say(const std::string& line) {
  if (!opt_.progress) return;
  std::fprintf(stderr, "\r\033[K%s\n", line.c_str());
  progress_line(true);
}

void Supervisor::progress_line(bool force) {
  if (!opt_.progress) return;
  if (!force && since(last_progress_) < 0.5) return;
  last_progress_ = Clock::now();
  const double e = since(t0_);
  std::ostringstream os;
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s  cases %lld (%.1f/s)  long %lld (%.2f/s)  findings %zu", hms(e).c_str(),
                static_cast<long long>(cases_total_), e > 0 ? static_cast<double>(cases_this_run_) / e : 0.0,
                static_cast<long long>(long_this_run_), e > 0 ? static_cast<double>(long_this_run_) / e : 0.0,
                findings_->all().size());
  os << buf;
  for (const auto& s : slots_) {
    std::snprintf(buf, sizeof buf, " | %s %.1f/s%s", s->label.c_str(), e > 0 ? static_cast<double>(s->cases) / e : 0.0,
                  s->inv ? " (shrinking)" : "");
    os << buf;
  }
  std::fprintf(stderr, "\r\033[K%s", os.str().c_str());
  std::fflush(stderr);
}

void Supervisor::tick() {
  if (since(last_tick_) < 5) return;
  last_tick_ = Clock::now();
  journal_.append({{"t", "tick"}, {"run", run_number_}, {"elapsed_s", std::round(since(t0_) * 10) / 10},
                   {"cases", cases_total_}});
  for (auto* f : findings_->all()) findings_->save(*f);  // counts
}

std::string Supervisor::summary_text(const std::string& reason) const {
  std::ostringstream os;
  const double e = since(t0_);
  char buf[256];
  os << "vattn fuzz: " << opt_.kernel << ", seed " << stream_->config().seed << ", budget " << stream_->config().budget
     << ", campaign " << dir_ << "\n";
  std::snprintf(buf, sizeof buf, "  this run: %s, %lld cases (%.1f/s), %lld long-context (%.2f/s); stopped: %s\n",
                hms(e).c_str(), static_cast<long long>(cases_this_run_), e > 0 ? cases_this_run_ / e : 0.0,
                static_cast<long long>(long_this_run_), e > 0 ? long_this_run_ / e : 0.0, reason.c_str());
  os << buf;
  std::snprintf(buf, sizeof buf, "  campaign: %lld cases in %s over %lld run(s); %lld failed; %lld suite error(s)",
                static_cast<long long>(cases_total_), hms(earlier_seconds_ + e).c_str(),
                static_cast<long long>(run_number_), static_cast<long long>(failed_total_),
                static_cast<long long>(suite_errors_));
  os << buf;
  if (tolerated_total_ > 0) os << "; " << tolerated_total_ << " tolerated (ledger)";
  if (opt_.shard_count > 1) os << "; shard " << opt_.shard_index << "/" << opt_.shard_count;
  os << "\n";
  os << "  verdicts:";
  for (const auto& [v, n] : by_verdict_) os << " " << v << " " << n;
  os << "\n  by size (this run, seconds in code under test + checks per case):";
  for (const auto& [cls, r] : class_rate_) {
    std::snprintf(buf, sizeof buf, " %s %lld (%.1f/s, %.3f s/case)", cls.c_str(), static_cast<long long>(r.first),
                  e > 0 ? r.first / e : 0.0, r.first ? r.second / static_cast<double>(r.first) : 0.0);
    os << buf;
  }
  os << "\n  where the time goes (this run):";
  double up = 0, run = 0;
  for (const auto& s : slots_) {
    const double su = s->up_s_done + s->up_s, sr = s->run_s_done + s->run_s;
    up += su;
    run += sr;
    const double sp = s->pool_s_done + s->pool_s;
    std::snprintf(buf, sizeof buf,
                  "\n    %s: %lld cases, main thread (%s) busy %.0f%% of %.0f s, pool threads busy %.1f on average, "
                  "%lld worker start(s)",
                  s->label.c_str(), static_cast<long long>(s->cases), s->gpu.empty() ? "target" : "GPU",
                  su > 0 ? 100 * sr / su : 0.0, su, su > 0 ? sp / su : 0.0, static_cast<long long>(s->respawns));
    os << buf;
    json ph = s->phases_done;
    for (auto it = s->phases.begin(); it != s->phases.end(); ++it)
      if (it.value().is_number()) ph[it.key()] = ph.value(it.key(), 0.0) + it.value().get<double>();
    for (auto it = ph.begin(); it != ph.end(); ++it) {
      std::snprintf(buf, sizeof buf, "%s %s %.1f s", it == ph.begin() ? ":" : ",", it.key().c_str(), it.value().get<double>());
      os << buf;
    }
  }
  std::snprintf(buf, sizeof buf, "\n    sum over cases: code under test %.1f s, checks and oracles %.1f s\n", time_target_s_,
                time_oracle_s_);
  os << buf;
  auto fs_all = const_cast<FindingStore&>(*findings_).all();
  os << "  findings: " << fs_all.size() << (new_findings_ ? " (" + std::to_string(new_findings_) + " new this run)" : "")
     << "\n";
  for (const Finding* f : fs_all) {
    const std::string shrunk = f->investigation.is_object() ? f->investigation.value("shrunk_recipe", f->recipe) : f->recipe;
    os << "    [" << f->id << "] " << printable(f->signature) << "  x" << f->count << "  (" << f->state << ")\n"
       << "        first: case " << f->first.index << ": " << printable(f->recipe) << "\n"
       << (f->first.detail.empty() ? "" : "        detail: " + printable(f->first.detail) + "\n")
       << "        shrunk: " << printable(shrunk) << "\n"
       << "        reproduce: " << FindingStore::rerun_command(opt_.kernel, shrunk) << "\n"
       << "        evidence: " << f->dir << "\n";
  }
  if (!ledger_.path().empty()) {
    os << "  ledger " << ledger_.path() << ": " << tolerated_total_ << " tolerated case(s)\n";
    for (const LedgerEntry& le : ledger_.entries())
      os << "    " << printable(le.signature) << " on " << printable(le.kernel) << "  x" << le.count << "  (" << printable(le.reason)
         << ")\n";
  }
  os << "  coverage (campaign):\n" << coverage_.text();
  return os.str();
}

void Supervisor::write_summary(const std::string& reason) {
  json j{{"schema", "vattn-fuzz-summary"}, {"version", 1}, {"kernel", opt_.kernel}, {"seed", stream_->config().seed},
         {"budget", stream_->config().budget}, {"campaign", dir_}, {"stopped", reason},
         {"this_run", {{"elapsed_s", since(t0_)}, {"cases", cases_this_run_}, {"long_cases", long_this_run_}}},
         {"campaign_cases", cases_total_}, {"failed", failed_total_}, {"suite_errors", suite_errors_},
         {"verdicts", by_verdict_}, {"coverage", coverage_.to_json()}};
  json slots = json::array();
  for (const auto& s : slots_) {
    slots.push_back({{"label", s->label}, {"cases", s->cases}, {"long_cases", s->long_cases},
                     {"up_s", s->up_s_done + s->up_s}, {"main_busy_s", s->run_s_done + s->run_s},
                     {"worker_starts", s->respawns}});
  }
  j["workers"] = slots;
  json fl = json::array();
  for (const Finding* f : findings_->all()) fl.push_back(f->to_json(opt_.kernel));
  j["findings"] = fl;
  j["tolerated"] = tolerated_total_;
  if (!ledger_.path().empty()) j["ledger"] = ledger_.to_json();
  if (opt_.shard_count > 1 || opt_.shard_index > 0) j["shard"] = {opt_.shard_index, opt_.shard_count};
  std::ofstream out(dir_ + "/summary.json.tmp");
  out << j.dump(2) << "\n";
  out.close();
  fs::rename(dir_ + "/summary.json.tmp", dir_ + "/summary.json");
}

int Supervisor::run() {
  const bool fresh = opt_.resume_dir.empty();
  if (!opt_.ledger.empty()) ledger_ = Ledger::load(opt_.ledger);  // a bad ledger is a usage error, before any work
  if (fresh) {
    // Everything that can be checked here is, before the campaign directory exists: a host
    // target's name and rules, and whether a GPU revision has a GPU. A revision library that does
    // not load is only seen by the first worker (the supervisor never loads CUDA code).
    if (is_host_target(opt_.kernel)) (void)make_host_target(TargetOptions{opt_.kernel, GenBudget::small()});
    make_slots();
    open_campaign();
  } else {
    open_campaign();
    make_slots();
  }
  fs::create_directories(dir_ + "/workers");
  fs::create_directories(dir_ + "/pending");
  std::signal(SIGPIPE, SIG_IGN);
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  t0_ = last_tick_ = Clock::now();
  for (auto& s : slots_) spawn(*s);
  Clock::time_point stop_at{};
  while (true) {
    if (g_stop_requests > 0 && !stopping_) {
      stopping_ = true;
      stop_reason_ = "interrupted (resume with --resume " + dir_ + ")";
      stop_at = Clock::now();
    }
    if (!stopping_ && opt_.hours >= 0 && since(t0_) >= opt_.hours * 3600) {
      stopping_ = true;
      stop_reason_ = "time is up";
      stop_at = Clock::now();
    }
    if (!stopping_ && opt_.stop_after_findings > 0 && new_findings_ >= opt_.stop_after_findings && investigations_done()) {
      stopping_ = true;
      stop_reason_ = std::to_string(new_findings_) + (new_findings_ == 1 ? " finding" : " findings") +
                     " (--stop-after-findings " + std::to_string(opt_.stop_after_findings) + ")";
      stop_at = Clock::now();
    }
    if (!stopping_ && finished()) {
      stopping_ = true;
      stop_reason_ = opt_.shard_count > 1 ? "all " + std::to_string(planned_cases()) + " cases of shard " +
                                                 std::to_string(opt_.shard_index) + "/" + std::to_string(opt_.shard_count) + " ran"
                                           : "all " + std::to_string(opt_.cases) + " cases ran";
      stop_at = Clock::now();
    }
    if (stopping_) {
      if (stop_at == Clock::time_point{}) stop_at = Clock::now();
      bool busy = false;
      for (auto& s : slots_) {
        if (s->inv && !fatal_reason_.empty()) s->inv.reset();
        if (s->inv && (g_stop_requests > 0 || opt_.hours >= 0)) {
          s->inv_finding->state = "interrupted";
          findings_->save(*s->inv_finding);
          s->inv.reset();
        }
        for (const auto& [i, f] : s->inflight)
          if (i >= 0) busy = true;
        if (s->inv) busy = true;
      }
      // In-flight cases get a few seconds to finish (a second interrupt, or a fatal error, ends at once).
      if (!busy || g_stop_requests > 1 || !fatal_reason_.empty() || since(stop_at) > 10) break;
    }
    std::vector<pollfd> fds;
    for (auto& s : slots_) dispatch(*s);
    for (auto& s : slots_)
      if (s->proc.report_fd() >= 0) fds.push_back({s->proc.report_fd(), POLLIN, 0});
    ::poll(fds.data(), fds.size(), 50);
    for (auto& s : slots_) pump(*s);
    for (auto& s : slots_) check_health(*s);
    progress_line(false);
    tick();
    journal_.sync_if_due();
  }
  for (auto& s : slots_) {
    for (const auto& [i, f] : s->inflight)
      if (i >= 0) requeue_.insert(i);  // not run: a --resume runs them
    s->proc.stop(2.0);
  }
  for (auto& w : waiting_) {  // never shrunk: the first case stands
    w.finding->state = "interrupted";
    findings_->save(*w.finding);
  }
  if (opt_.progress) std::fprintf(stderr, "\r\033[K");
  if (!fatal_reason_.empty() && cases_this_run_ == 0) {
    std::fprintf(stderr, "vattn fuzz: nothing could run: %s\n", printable(fatal_reason_).c_str());
    journal_.append({{"t", "end"}, {"run", run_number_}, {"elapsed_s", since(t0_)}, {"reason", fatal_reason_}});
    if (fresh) {
      // A campaign that never ran a case leaves nothing behind: the same --out works once fixed.
      journal_.close();
      std::error_code ec;
      for (const char* entry : {"journal.jsonl", "findings", "workers", "pending", "summary.json"})
        fs::remove_all(dir_ + "/" + entry, ec);
      fs::remove(dir_, ec);  // only if empty: it may have held the user's files before
    }
    return 2;
  }
  const std::string reason = fatal_reason_.empty() ? stop_reason_ : stop_reason_ + ": " + fatal_reason_;
  journal_.append({{"t", "end"}, {"run", run_number_}, {"elapsed_s", std::round(since(t0_) * 10) / 10},
                   {"reason", reason}, {"cases", cases_total_}});
  journal_.sync();
  for (auto* f : findings_->all()) findings_->save(*f);
  write_summary(reason);
  std::fputs(summary_text(reason).c_str(), stdout);
  if (opt_.report) {
    std::fflush(stdout);
    std::printf("  %s\n", write_campaign_report(opt_.self_exe, dir_).c_str());
  }
  const size_t n = findings_->all().size();
  std::printf("vattn fuzz: %lld cases, %zu finding%s%s\n", static_cast<long long>(cases_total_), n, n == 1 ? "" : "s",
              fatal_reason_.empty() ? "" : " (stopped early)");
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) return 2;
  if (!fatal_reason_.empty() && n == 0) return 2;
  return n > 0 ? 1 : 0;
}

}  // namespace

int run_campaign(const CampaignOptions& options) {
  Supervisor sup(options);
  return sup.run();
}

}  // namespace vattn::fuzz
