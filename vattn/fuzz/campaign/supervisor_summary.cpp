// SPDX-License-Identifier: Apache-2.0
// What the campaign says: the live progress line and the lines above it (terminal only), the
// journal's ticks, DIR/summary.json (schema vattn-fuzz-summary v1) and the closing summary text.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "vattn/fuzz/campaign/supervisor_internal.h"

namespace vattn::fuzz::supervisor_detail {

namespace fs = std::filesystem;

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
  journal_.append(
      {{"t", "tick"}, {"run", run_number_}, {"elapsed_s", std::round(since(t0_) * 10) / 10}, {"cases", cases_total_}});
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
      std::snprintf(buf, sizeof buf, "%s %s %.1f s", it == ph.begin() ? ":" : ",", it.key().c_str(),
                    it.value().get<double>());
      os << buf;
    }
  }
  std::snprintf(buf, sizeof buf, "\n    sum over cases: code under test %.1f s, checks and oracles %.1f s\n",
                time_target_s_, time_oracle_s_);
  os << buf;
  auto fs_all = const_cast<FindingStore&>(*findings_).all();
  os << "  findings: " << fs_all.size()
     << (new_findings_ ? " (" + std::to_string(new_findings_) + " new this run)" : "") << "\n";
  for (const Finding* f : fs_all) {
    const std::string shrunk =
        f->investigation.is_object() ? f->investigation.value("shrunk_recipe", f->recipe) : f->recipe;
    os << "    [" << f->id << "] " << printable(f->signature) << "  x" << f->count << "  (" << f->state << ")\n"
       << "        first: case " << f->first.index << ": " << printable(f->recipe) << "\n"
       << (f->first.detail.empty() ? "" : "        detail: " + printable(f->first.detail) + "\n")
       << "        shrunk: " << printable(shrunk) << "\n"
       << "        reproduce: " << FindingStore::rerun_command(opt_.kernel, shrunk) << "\n"
       << "        evidence: " << f->dir << "\n";
  }
  if (!extra_.empty()) {
    int64_t cases = 0;
    for (const auto& [sig, n] : extra_) cases += n;
    os << "  more buckets, counted and not filed (" << kMaxFindingsPerCheck << " findings per check): " << extra_.size()
       << " bucket(s), " << cases << " case(s)\n";
    for (const auto& [sig, n] : extra_) os << "    " << printable(sig) << "  x" << n << "\n";
  }
  if (!ledger_.path().empty()) {
    os << "  ledger " << ledger_.path() << ": " << tolerated_total_ << " tolerated case(s)\n";
    for (const LedgerEntry& le : ledger_.entries()) {
      os << "    " << printable(le.signature) << " on " << printable(le.kernel) << "  x" << le.count << "  ("
         << printable(le.reason) << ")\n";
      // What it tolerated, when that is more than the entry's own text (a glob, a check without bucket).
      for (const auto& [sig, n] : le.matched)
        if (sig != le.signature) os << "        tolerated " << printable(sig) << "  x" << n << "\n";
    }
  }
  os << "  coverage (campaign):\n" << coverage_.text();
  return os.str();
}

void Supervisor::write_summary(const std::string& reason) {
  json j{{"schema", "vattn-fuzz-summary"},
         {"version", 1},
         {"kernel", opt_.kernel},
         {"seed", stream_->config().seed},
         {"budget", stream_->config().budget},
         {"campaign", dir_},
         {"stopped", reason},
         {"this_run", {{"elapsed_s", since(t0_)}, {"cases", cases_this_run_}, {"long_cases", long_this_run_}}},
         {"campaign_cases", cases_total_},
         {"failed", failed_total_},
         {"suite_errors", suite_errors_},
         {"verdicts", by_verdict_},
         {"coverage", coverage_.to_json()}};
  json slots = json::array();
  for (const auto& s : slots_) {
    slots.push_back({{"label", s->label},
                     {"cases", s->cases},
                     {"long_cases", s->long_cases},
                     {"up_s", s->up_s_done + s->up_s},
                     {"main_busy_s", s->run_s_done + s->run_s},
                     {"worker_starts", s->respawns}});
  }
  j["workers"] = slots;
  json fl = json::array();
  for (const Finding* f : findings_->all()) fl.push_back(f->to_json(opt_.kernel));
  j["findings"] = fl;
  json extra = json::array();
  for (const auto& [sig, n] : extra_)
    extra.push_back(
        {{"signature", sig}, {"check", signature_check(sig)}, {"bucket", signature_bucket(sig)}, {"count", n}});
  j["extra_buckets"] = extra;
  j["tolerated"] = tolerated_total_;
  if (!ledger_.path().empty()) j["ledger"] = ledger_.to_json();
  if (opt_.shard_count > 1 || opt_.shard_index > 0) j["shard"] = {opt_.shard_index, opt_.shard_count};
  std::ofstream out(dir_ + "/summary.json.tmp");
  out << j.dump(2) << "\n";
  out.close();
  fs::rename(dir_ + "/summary.json.tmp", dir_ + "/summary.json");
}

}  // namespace vattn::fuzz::supervisor_detail
