// SPDX-License-Identifier: Apache-2.0
// Resuming a campaign from its journal, which is untrusted: the folder is checked (its lock, no
// planted link), the journal read (lines it cannot use are said, not skipped in silence), the
// revision library it would load checked against its record and named, the run options taken
// back, and the stream, totals (over distinct case indices), coverage, suite errors, findings and
// the ledger's counts carried over; a finding whose investigation was cut short goes on from its
// last shrink line.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <set>
#include <string>

#include "vattn/fuzz/campaign/kernel_identity.h"
#include "vattn/fuzz/campaign/mix_file.h"
#include "vattn/fuzz/campaign/run_options.h"
#include "vattn/fuzz/campaign/supervisor_internal.h"

namespace vattn::fuzz::supervisor_detail {

namespace fs = std::filesystem;

void Supervisor::resume_kernel(const JournalState& st) {
  const std::string recorded =
      st.kernel_library.empty() ? st.campaign.at("kernel").get<std::string>() : st.kernel_library;
  if (!opt_.kernel.empty()) {
    const bool same = opt_.kernel == recorded || (is_kernel_library(opt_.kernel) && is_kernel_library(recorded) &&
                                                  absolute_library_path(opt_.kernel) == recorded);
    if (!same)
      throw InputError(dir_, "", "--kernel",
                       "this campaign fuzzes '" + recorded + "'; --resume keeps its kernel (leave --kernel out)");
  }
  opt_.kernel = recorded;
  if (!is_kernel_library(recorded)) return;
  // A journal from before absolute paths named the library as typed: the working directory
  // resolves it now, which need not be the one the campaign was started from.
  const bool absolute = fs::path(recorded).is_absolute();
  const std::string library = absolute_library_path(recorded);
  const std::string now = sha256_of_file(library, "kernel");
  std::string problem;
  if (!absolute) {
    problem =
        "the campaign recorded it as '" + recorded + "', relative to the folder it was started from, and no digest";
  } else if (st.kernel_sha256.empty()) {
    problem = "the campaign recorded no digest of it";
  } else if (st.kernel_sha256 != now) {
    problem = "its bytes are not the ones the campaign ran: sha256 " + now + ", recorded " + st.kernel_sha256;
  }
  if (!problem.empty() && !opt_.allow_changed_kernel)
    throw InputError(library, "", "kernel",
                     problem + "; --resume does not load it (--allow-changed-kernel fuzzes this library from here on)");
  if (problem.empty()) {
    std::fprintf(stderr, "vattn fuzz: --resume: loads the revision library %s (sha256 %s, as recorded)\n",
                 printable(library).c_str(), now.c_str());
  } else {
    std::fprintf(stderr, "vattn fuzz: --resume --allow-changed-kernel: loads the revision library %s (sha256 %s): %s\n",
                 printable(library).c_str(), now.c_str(), printable(problem).c_str());
    kernel_accepted_ = true;
  }
  opt_.kernel = library;
  kernel_sha256_ = now;
}

void Supervisor::resume_campaign() {
  dir_ = opt_.resume_dir;
  const std::string path = dir_ + "/journal.jsonl";
  // One supervisor per campaign: the journal is read once the lock says no other one appends to it.
  std::error_code ec;
  if (fs::is_directory(dir_, ec) && fs::exists(path, ec)) lock_ = CampaignLock::acquire(dir_, "--resume");
  // What the campaign writes is its own: a link planted in its place is refused before any work.
  for (const char* name :
       {"journal.jsonl", "summary.json", "mix.json", "report.html", "findings", "workers", "pending"})
    if (fs::is_symlink(dir_ + "/" + name, ec))
      throw InputError(dir_ + "/" + name, "", "--resume",
                       "is a symbolic link; a campaign writes its files in its own folder, never through a link");
  const JournalState st = read_journal(path);
  for (const std::string& p : st.problems) {
    std::fprintf(stderr, "vattn fuzz: %s: %s\n", printable(path).c_str(), printable(p).c_str());
    journal_problems_.push_back(p);
  }
  if (st.problem_lines > static_cast<int64_t>(st.problems.size()))
    std::fprintf(stderr, "vattn fuzz: %s: ... and %lld more line(s) skipped\n", printable(path).c_str(),
                 static_cast<long long>(st.problem_lines - static_cast<int64_t>(st.problems.size())));
  if (st.duplicate_cases > 0)
    std::fprintf(stderr, "vattn fuzz: %s: %lld case line(s) repeat an index journaled before; each index counts once\n",
                 printable(path).c_str(), static_cast<long long>(st.duplicate_cases));
  const json& c = st.campaign;
  resume_kernel(st);
  // The campaign's size and run options: the latest recorded, unless given again.
  if (!opt_.given.count("cases")) opt_.cases = c.value("cases", int64_t{-1});
  for (const std::string& line : reuse_run_options(st.options, path + ":" + std::to_string(st.options_line), opt_))
    std::fprintf(stderr, "vattn fuzz: --resume: %s\n", printable(line).c_str());
  StreamConfig sc = stream_config_of(c);
  if (c.contains("mix") && !c.at("mix").is_null()) {
    // The table is the stream's: mix.json in the campaign folder, as the journal recorded it.
    mix_ = c.at("mix");
    const std::string digest = mix_.is_object() && mix_.contains("digest") && mix_.at("digest").is_string()
                                   ? mix_.at("digest").get<std::string>()
                                   : "";
    if (digest.empty())
      throw InputError(path, "", "mix.digest", "missing: the campaign line must name mix.json's digest");
    sc.mix = std::make_shared<const MixTable>(load_mix_file(dir_ + "/mix.json", digest));
  }
  stream_ = std::make_unique<CaseStream>(sc);
  if (c.contains("shard")) {
    opt_.shard_index = c.at("shard").at(0).get<int64_t>();
    opt_.shard_count = c.at("shard").at(1).get<int64_t>();
  }
  done_ = st.done;
  by_verdict_ = st.by_verdict;
  by_class_ = st.by_class;
  cases_total_ = static_cast<int64_t>(done_.size());
  // Failed: the target's verdicts; a recipe that did not generate and a case not run for want of
  // a resource are the suite's.
  for (const auto& [v, n] : by_verdict_)
    if (v != "pass" && v != "input-error" && v != "resource") failed_total_ += n;
  suite_errors_ = st.suite_errors;
  suite_error_list_ = st.suite_error_list;
  resource_errors_ = st.resource_errors;
  resource_retried_ = st.resource_retried;
  // Tolerated cases (the ledger) are failed cases that are not raised: counted apart.
  for (const auto& [sig, n] : st.tolerated) {
    tolerated_total_ += n;
    failed_total_ -= n;
    ledger_.tolerate(sig, opt_.kernel, n);
  }
  extra_ = st.extra;
  earlier_seconds_ = st.seconds;
  run_number_ = st.runs + 1;
  if (opt_.cases < 0 && opt_.hours < 0) opt_.hours = 8;
  // Coverage is campaign-wide: the recipes of the cases already run come back from the stream
  // (a case given up for want of a resource did not run: it covers nothing).
  for (int64_t i : done_) {
    if (st.not_run.count(i)) continue;
    auto e = st.device_errors.find(i);
    coverage_.add(stream_->at(i), e == st.device_errors.end() ? 0 : e->second);
  }
  journal_.open_append(path);
  json run{{"t", "run"},
           {"run", run_number_},
           {"started", utc_now()},
           {"resumed", true},
           {"argv", opt_.argv_line},
           {"done_before", cases_total_},
           {"ledger", opt_.ledger},
           {"options", run_options_json(opt_)}};
  if (kernel_accepted_) {
    run["kernel_library"] = opt_.kernel;
    run["kernel_sha256"] = kernel_sha256_;
  }
  journal_.append(run);
  resume_findings(st);
}

void Supervisor::resume_findings(const JournalState& st) {
  findings_ = std::make_unique<FindingStore>(dir_, opt_.kernel);
  // A folder a full disk kept from being made is made now (mkdir: not through a link; findings/
  // itself was checked above), so the finding gets its evidence this time.
  std::error_code ec;
  fs::create_directory(dir_ + "/findings", ec);
  std::set<std::string> keep;  // pending files a resumed investigation goes on from
  for (const auto& fl : st.findings) {
    const std::string id = fl.at("id").get<std::string>();
    auto it = st.finding_done.find(id);
    auto hit = st.hits.find(id);
    Finding& f = findings_->restore(fl, it == st.finding_done.end() ? nullptr : &it->second,
                                    hit == st.hits.end() ? 0 : hit->second);
    fs::create_directory(f.dir, ec);
    if (const std::string why = findings_->save(f); !why.empty()) suite_failure(why);
    if (f.state != "interrupted") continue;
    // Its investigation was cut short: it goes on from its last shrink line (from the first case
    // when it has none), so a campaign stopped again and again still finishes its shrinking.
    f.state = "investigating";
    json progress;
    if (auto sh = st.shrink.find(id); sh != st.shrink.end()) {
      progress = sh->second;
      const std::string repro =
          progress.contains("repro") && progress.at("repro").is_string() ? progress.at("repro").get<std::string>() : "";
      if (repro.rfind("pending/", 0) == 0 && repro.find('/', 8) == std::string::npos) keep.insert(repro.substr(8));
    }
    waiting_.push_back({&f, f.first, f.recipe, progress});
  }
  // Repro files of cases that were in flight when the campaign stopped are nobody's now.
  for (fs::directory_iterator d(dir_ + "/pending", ec), end; !ec && d != end; d.increment(ec)) {
    const std::string name = d->path().filename().string();
    if (!keep.count(name) && d->symlink_status(ec).type() == fs::file_type::regular) fs::remove(d->path(), ec);
  }
}

}  // namespace vattn::fuzz::supervisor_detail
