// SPDX-License-Identifier: Apache-2.0
// What the campaign says: the live progress line and the lines above it (terminal only), the
// journal's ticks, DIR/summary.json (schema vattn-fuzz-summary v1) and the closing summary text;
// each says the stream's rate and whether a finding is being investigated beside it.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>

#include "vattn/case/fd_write.h"
#include "vattn/fuzz/campaign/supervisor_internal.h"

namespace vattn::fuzz::supervisor_detail {

json Span::to_json() const {
  json j{{"seconds", std::round(seconds * 100) / 100}, {"cases", cases}};
  j["cases_per_s"] = seconds > 0 ? json(std::round(static_cast<double>(cases) / seconds * 10) / 10) : json(nullptr);
  return j;
}

namespace {

// "001 hang: deadline passed: shrinking, run 4, 2 step(s)": what an investigator is doing now.
std::string investigation_state(const Slot& iv) {
  if (!iv.inv) return "";
  const std::string s = iv.inv_finding->id + " " + printable(iv.inv_finding->signature) + ": ";
  if (iv.inv->done()) return s + "writing its repro files";
  if (!iv.inv->confirmed()) return s + "confirming in a fresh worker";
  return s + "shrinking, run " + std::to_string(iv.inv->runs() + 1) + ", " + std::to_string(iv.inv->steps()) +
         " step(s)";
}

// Cases per second over the last ten seconds of samples (the progress line's), or over the run.
double recent_rate(Slot& s, double elapsed) {
  const auto now = Clock::now();
  s.rate_samples.emplace_back(now, s.cases);
  while (s.rate_samples.size() > 2 && std::chrono::duration<double>(now - s.rate_samples.front().first).count() > 10)
    s.rate_samples.pop_front();
  const double dt = std::chrono::duration<double>(now - s.rate_samples.front().first).count();
  if (dt < 2) return elapsed > 0 ? static_cast<double>(s.cases) / elapsed : 0.0;
  return static_cast<double>(s.cases - s.rate_samples.front().second) / dt;
}

Span sum_spans(const std::vector<std::unique_ptr<Slot>>& slots, Span Slot::*which) {
  Span t;
  for (const auto& s : slots) {
    t.seconds += ((*s).*which).seconds;
    t.cases += ((*s).*which).cases;
  }
  return t;
}

}  // namespace

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
  for (auto& s : slots_) {
    std::snprintf(buf, sizeof buf, " | %s %.1f/s", s->label.c_str(), recent_rate(*s, e));
    os << buf;
    const Slot& iv = investigator_of(*s);
    const std::string inv = investigation_state(iv);
    if (!inv.empty()) os << ", investigating " << inv;
    if (!inv.empty() && iv.inflight.empty() && investigator_yields(iv)) os << " (waiting for its share)";
  }
  if (!waiting_.empty()) os << " | " << waiting_.size() << " finding(s) waiting";
  std::fprintf(stderr, "\r\033[K%s", os.str().c_str());
  std::fflush(stderr);
}

void Supervisor::tick() {
  const double dt = since(last_tick_);
  if (dt < 5) return;
  last_tick_ = Clock::now();
  // The pulse for logs (off a terminal there is no progress line): the stream's cases per second
  // since the last tick, and the findings being investigated beside it.
  json line{{"t", "tick"},
            {"run", run_number_},
            {"elapsed_s", std::round(since(t0_) * 10) / 10},
            {"cases", cases_total_},
            {"rate", std::round(static_cast<double>(cases_this_run_ - last_tick_cases_) / dt * 10) / 10}};
  last_tick_cases_ = cases_this_run_;
  json inv = json::array();
  for (const auto& iv : investigators_)
    if (iv->inv) inv.push_back(iv->inv_finding->id);
  if (!inv.empty()) line["investigating"] = inv;
  record(line);
  for (auto* f : findings_->all())  // counts
    if (const std::string why = findings_->save(*f); !why.empty()) suite_failure(why);
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
  if (suite_failed_) os << "  STOPPED: " << printable(fatal_reason_) << "\n";
  size_t listed_errors = 0;
  for (const json& err : suite_error_list_) {
    if (++listed_errors > 10) {
      os << "    ... (summary.json: suite_error_list)\n";
      break;
    }
    os << "    suite error: " << (err.contains("index") ? "case " + err.at("index").dump() + ": " : std::string())
       << printable(err.value("what", "")) << ": " << printable(err.value("detail", "")) << "\n";
  }
  for (const auto& p : journal_problems_) os << "    journal: " << printable(p.get<std::string>()) << " (skipped)\n";
  if (!mix_.is_null())
    os << "  mix: " << mix_.value("share_percent", 0) << "% of the cases shaped like the " << mix_.value("cases", 0)
       << " captured case(s) of " << printable(mix_.value("from", "")) << " (" << mix_.value("shapes", 0) << " shapes, "
       << dir_ << "/mix.json)\n";
  const int64_t not_run = by_verdict_.count("resource") ? by_verdict_.at("resource") : 0;
  if (resource_errors_ > 0 || not_run > 0) {
    std::snprintf(buf, sizeof buf, "  resource errors: %lld, retried %lld, gave up %lld%s\n",
                  static_cast<long long>(resource_errors_), static_cast<long long>(resource_retried_),
                  static_cast<long long>(not_run),
                  not_run > 0 ? ": those cases did not run (not passed, no finding)" : "");
    os << buf;
    size_t listed = 0;
    for (const auto& c : not_run_cases_) {
      if (++listed > 10) {
        os << "    ... and " << not_run_cases_.size() - 10 << " more this run (summary.json: resources.not_run)\n";
        break;
      }
      os << "    not run: case " << c.value("index", int64_t{-1}) << ": " << printable(c.value("recipe", "")) << "\n"
         << "        " << printable(c.value("resource", "")) << ": " << printable(c.value("detail", "")) << "\n";
    }
  }
  const Span clean = sum_spans(slots_, &Slot::clean), busy = sum_spans(slots_, &Slot::investigating);
  if (busy.seconds > 0) {
    const double rc = clean.seconds > 0 ? static_cast<double>(clean.cases) / clean.seconds : 0.0;
    const double ri = static_cast<double>(busy.cases) / busy.seconds;
    std::snprintf(buf, sizeof buf,
                  "  stream rate (per worker): %.1f/s while a finding was investigated (%.1f s), %.1f/s otherwise "
                  "(%.1f s)%s\n",
                  ri, busy.seconds, rc, clean.seconds,
                  rc > 0 ? (": " + std::to_string(static_cast<int>(std::lround(100 * ri / rc))) + "%").c_str() : "");
    os << buf;
  }
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
  size_t counted = 0, counted_new = 0;
  for (const Finding* f : fs_all) {
    counted += raised(*f) ? 1 : 0;
    counted_new += raised(*f) && new_this_run_.count(f) ? 1 : 0;
  }
  os << "  findings: " << counted << (counted_new ? " (" + std::to_string(counted_new) + " new this run)" : "")
     << (counted < fs_all.size() ? "; " + std::to_string(fs_all.size() - counted) +
                                       " not confirmed (a fresh worker did not repeat the crash or hang: no finding)"
                                 : "")
     << "\n";
  for (const Finding* f : fs_all) {
    const std::string shrunk =
        f->investigation.is_object() ? f->investigation.value("shrunk_recipe", f->recipe) : f->recipe;
    os << "    [" << f->id << "] " << printable(f->signature) << "  x" << f->count << "  ("
       << (raised(*f) ? f->state : "NOT CONFIRMED") << ")\n"
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

std::string Supervisor::write_summary(const std::string& reason) {
  json j{
      {"schema", "vattn-fuzz-summary"},
      {"version", 1},
      {"kernel", opt_.kernel},
      {"seed", stream_->config().seed},
      {"budget", stream_->config().budget},
      {"campaign", dir_},
      {"stopped", reason},
      {"this_run",
       {{"elapsed_s", since(t0_)}, {"cases", cases_this_run_}, {"long_cases", long_this_run_}, {"not_run", not_run_}}},
      {"campaign_cases", cases_total_},
      {"failed", failed_total_},
      {"suite_errors", suite_errors_},
      {"verdicts", by_verdict_},
      {"coverage", coverage_.to_json()}};
  json slots = json::array();
  for (const auto& s : slots_) {
    const Slot& iv = investigator_of(*s);
    slots.push_back({{"label", s->label},
                     {"cases", s->cases},
                     {"long_cases", s->long_cases},
                     {"up_s", s->up_s_done + s->up_s},
                     {"main_busy_s", s->run_s_done + s->run_s},
                     {"worker_starts", s->respawns},
                     {"stream_spans", {{"clean", s->clean.to_json()}, {"investigating", s->investigating.to_json()}}},
                     {"investigator", {{"runs", iv.runs}, {"worker_starts", iv.respawns}}}});
  }
  j["workers"] = slots;
  j["stream_spans"] = {{"clean", sum_spans(slots_, &Slot::clean).to_json()},
                       {"investigating", sum_spans(slots_, &Slot::investigating).to_json()}};
  j["resources"] = {{"errors", resource_errors_},
                    {"retried", resource_retried_},
                    {"gave_up", by_verdict_.count("resource") ? by_verdict_.at("resource") : 0},
                    {"not_run", not_run_cases_}};
  json fl = json::array(), unconfirmed = json::array();
  for (const Finding* f : findings_->all()) {
    fl.push_back(f->to_json(opt_.kernel));
    if (!raised(*f)) unconfirmed.push_back(f->id);
  }
  j["findings"] = fl;
  j["unconfirmed"] = unconfirmed;
  json extra = json::array();
  for (const auto& [sig, n] : extra_)
    extra.push_back(
        {{"signature", sig}, {"check", signature_check(sig)}, {"bucket", signature_bucket(sig)}, {"count", n}});
  j["extra_buckets"] = extra;
  j["tolerated"] = tolerated_total_;
  if (!ledger_.path().empty()) j["ledger"] = ledger_.to_json();
  if (opt_.shard_count > 1 || opt_.shard_index > 0) j["shard"] = {opt_.shard_index, opt_.shard_count};
  if (!mix_.is_null()) j["mix"] = mix_;
  j["suite_error_list"] = suite_error_list_;
  if (!kernel_sha256_.empty()) j["kernel_sha256"] = kernel_sha256_;
  j["suite_failure"] = suite_failed_ ? json(fatal_reason_) : json(nullptr);
  if (!journal_problems_.empty()) j["journal_problems"] = journal_problems_;
  // The journal as it stands with this summary: a reader takes the summary as current only while
  // the journal is this long (a later run that was killed leaves it longer; summary_rebuild.h).
  j["journal"] = {{"bytes", journal_.bytes()}};
  return replace_file(dir_ + "/summary.json", j.dump(2) + "\n", Durability::kSynced);
}

}  // namespace vattn::fuzz::supervisor_detail
