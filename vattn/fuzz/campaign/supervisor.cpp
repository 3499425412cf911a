// SPDX-License-Identifier: Apache-2.0
// The campaign's loop: start a worker per slot, then dispatch, poll, read and check them until the
// campaign stops (a signal, --hours, --stop-after-findings, every case ran, or a fatal error);
// then the journal's end line, summary.json, the closing summary and the exit code. The members
// for each concern are in the files listed in supervisor_internal.h.
#include "vattn/fuzz/campaign/supervisor.h"

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <poll.h>

#include "vattn/fuzz/campaign/report_runner.h"
#include "vattn/fuzz/campaign/supervisor_internal.h"
#include "vattn/fuzz/worker/target.h"

namespace vattn::fuzz {

namespace supervisor_detail {

namespace {

volatile std::sig_atomic_t g_stop_requests = 0;
void on_stop_signal(int) { g_stop_requests = g_stop_requests + 1; }

}  // namespace

void Supervisor::record(const json& line) {
  if (journal_broken_) return;
  try {
    journal_.append(line);
  } catch (const std::exception& e) {
    journal_broken_ = true;
    suite_failure(std::string("the journal cannot be written (") + e.what() + "): nothing more can be recorded");
  }
}

void Supervisor::suite_failure(const std::string& why) {
  if (suite_failed_) return;  // the first reason is the one that stopped it
  suite_failed_ = true;
  if (fatal_reason_.empty()) fatal_reason_ = why;
  if (!stopping_) stop_reason_ = "the campaign cannot keep its record";
  stopping_ = true;
  // Said at once, on a terminal or not: a night's log shows it where it happened.
  std::fprintf(stderr, "%svattn fuzz: STOPPING: %s\n", opt_.progress ? "\r\033[K" : "", printable(why).c_str());
  std::fflush(stderr);
  ++suite_errors_;
  if (suite_error_list_.size() < 100) suite_error_list_.push_back({{"what", "fatal"}, {"detail", why}});
  record({{"t", "suite-error"}, {"what", "fatal"}, {"detail", why}, {"run", run_number_}});
}

void Supervisor::note_suite_error(const std::string& what, const std::string& detail, int64_t index) {
  ++suite_errors_;
  json e{{"what", what}, {"detail", detail}};
  if (index >= 0) e["index"] = index;
  if (suite_error_list_.size() < 100) suite_error_list_.push_back(e);
  if (index < 0) record({{"t", "suite-error"}, {"what", what}, {"detail", detail}, {"run", run_number_}});
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

bool Supervisor::investigations_done() const {
  for (const auto& s : investigators_)
    if (s->inv) return false;
  return waiting_.empty();
}

bool Supervisor::stream_has_cases() const {
  if (stopping_) return false;
  return opt_.cases < 0 || static_cast<int64_t>(done_.size()) < planned_cases();
}

bool Supervisor::raised(const Finding& f) const {
  // A crash or hang that a fresh worker did not repeat stays on record (its directory, the
  // summary's "unconfirmed") but is no finding; one still being investigated counts.
  return !(f.state == "done" && f.investigation.is_object() && !f.investigation.value("confirmed", true));
}

void Supervisor::account(Clock::time_point now) {
  const double dt = std::chrono::duration<double>(now - last_account_).count();
  last_account_ = now;
  for (auto& iv : investigators_)
    if (iv->inv && iv->proc.alive() && (!iv->ready || !iv->inflight.empty() || iv->repro_waiting)) iv->busy_s += dt;
  if (!stream_has_cases()) return;  // the stream's spans: only while it has cases to run
  for (auto& s : slots_)
    if (s->ready && s->proc.alive()) (investigator_of(*s).inv ? s->investigating : s->clean).seconds += dt;
}

bool Supervisor::finished() const {
  // Only this shard's indices below --cases are ever dispatched, so the count says it.
  if (opt_.cases < 0 || static_cast<int64_t>(done_.size()) < planned_cases()) return false;
  return investigations_done();
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
    try {
      open_campaign();
    } catch (...) {
      remove_created();
      throw;
    }
  } else {
    open_campaign();
    make_slots();
  }
  make_dir(dir_ + "/workers");
  make_dir(dir_ + "/pending");
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
    if (!stopping_ && opt_.stop_after_findings > 0 && raised_this_run_ >= opt_.stop_after_findings &&
        investigations_done()) {
      stopping_ = true;
      stop_reason_ = std::to_string(raised_this_run_) + (raised_this_run_ == 1 ? " finding" : " findings") +
                     " (--stop-after-findings " + std::to_string(opt_.stop_after_findings) + ")";
      stop_at = Clock::now();
    }
    if (!stopping_ && finished()) {
      stopping_ = true;
      stop_reason_ = opt_.shard_count > 1
                         ? "all " + std::to_string(planned_cases()) + " cases of shard " +
                               std::to_string(opt_.shard_index) + "/" + std::to_string(opt_.shard_count) + " ran"
                         : "all " + std::to_string(opt_.cases) + " cases ran";
      stop_at = Clock::now();
    }
    if (stopping_) {
      if (stop_at == Clock::time_point{}) stop_at = Clock::now();
      bool busy = false;
      for (Slot* s : all_slots()) {
        if (s->inv && (!fatal_reason_.empty() || g_stop_requests > 0 || opt_.hours >= 0)) {
          // Left where it stands: its shrink lines let a --resume go on from there.
          s->inv_finding->state = "interrupted";
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
    start_waiting_investigations();
    for (Slot* s : all_slots()) dispatch(*s);
    for (Slot* s : all_slots())
      if (s->proc.report_fd() >= 0) fds.push_back({s->proc.report_fd(), POLLIN, 0});
    ::poll(fds.data(), fds.size(), 50);
    for (Slot* s : all_slots()) pump(*s);
    for (Slot* s : all_slots()) check_health(*s);
    account(Clock::now());
    progress_line(false);
    tick();
    journal_.sync_if_due();
  }
  for (auto& s : slots_) {
    for (const auto& [i, f] : s->inflight)
      if (i >= 0) requeue_.insert(i);  // not run: a --resume runs them
    s->proc.stop(2.0);
  }
  for (auto& s : investigators_) s->proc.kill_group();        // nothing left to do; it may be hung in a run
  for (auto& w : waiting_) w.finding->state = "interrupted";  // never shrunk: the first case stands
  if (opt_.progress) std::fprintf(stderr, "\r\033[K");
  if (!fatal_reason_.empty() && cases_this_run_ == 0 && !suite_failed_) {
    std::fprintf(stderr, "vattn fuzz: nothing could run: %s\n", printable(fatal_reason_).c_str());
    record({{"t", "end"}, {"run", run_number_}, {"elapsed_s", since(t0_)}, {"reason", fatal_reason_}});
    // A campaign that never ran a case leaves nothing behind: the same --out works once fixed.
    // Only what this run created goes; a --resume created nothing worth removing.
    if (fresh) remove_created();
    return 2;
  }
  for (auto* f : findings_->all())
    if (const std::string why = findings_->save(*f); !why.empty()) suite_failure(why);
  const std::string reason = fatal_reason_.empty() ? stop_reason_ : stop_reason_ + ": " + fatal_reason_;
  record({{"t", "end"},
          {"run", run_number_},
          {"elapsed_s", std::round(since(t0_) * 10) / 10},
          {"reason", reason},
          {"cases", cases_total_}});
  journal_.sync();
  if (const std::string why = write_summary(reason); !why.empty()) suite_failure(why);
  std::fputs(summary_text(reason).c_str(), stdout);
  if (opt_.report) {
    std::fflush(stdout);
    std::printf("  %s\n", write_campaign_report(opt_.self_exe, dir_).c_str());
  }
  size_t n = 0, unconfirmed = 0;
  for (const Finding* f : findings_->all()) (raised(*f) ? n : unconfirmed) += 1;
  // A case given up for want of a resource has its journal line but did not run: said apart.
  const int64_t not_run = by_verdict_.count("resource") ? by_verdict_.at("resource") : 0;
  std::string also;
  if (unconfirmed > 0) also += "; " + std::to_string(unconfirmed) + " not confirmed (no finding)";
  if (not_run > 0) also += "; " + std::to_string(not_run) + " not run (resource errors)";
  std::printf("vattn fuzz: %lld cases, %zu finding%s%s%s\n", static_cast<long long>(cases_total_ - not_run), n,
              n == 1 ? "" : "s", also.c_str(), fatal_reason_.empty() ? "" : " (stopped early)");
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) return 2;
  if (suite_failed_) {
    // Whatever it found: a campaign that lost part of its record is not a result to trust.
    std::fprintf(stderr, "vattn fuzz: STOPPED, exit 2: %s\n", printable(fatal_reason_).c_str());
    return 2;
  }
  if (!fatal_reason_.empty() && n == 0) return 2;
  return n > 0 ? 1 : 0;
}

}  // namespace supervisor_detail

int run_campaign(const CampaignOptions& options) {
  supervisor_detail::Supervisor sup(options);
  return sup.run();
}

}  // namespace vattn::fuzz
