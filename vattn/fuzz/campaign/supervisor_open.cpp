// SPDX-License-Identifier: Apache-2.0
// Opening a campaign: a new directory (the journal's campaign and run lines, and mix.json with
// --mix-from), or one resumed from its journal (stream, totals, coverage, findings and the
// ledger's counts carried over; a finding whose shrinking was cut short is investigated again).
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "vattn/fuzz/campaign/mix_file.h"
#include "vattn/fuzz/campaign/supervisor_internal.h"

namespace vattn::fuzz::supervisor_detail {

namespace fs = std::filesystem;

namespace {

// Why --out cannot take `dir`, or "": another campaign holds it (asked only when this process holds
// no lock there) or has its journal there, it is not a folder, or it holds anything but a lock file
// (a folder of someone else's files is never written into, nor cleaned up after).
std::string foreign_folder_problem(const std::string& dir, bool ask_lock) {
  if (const long pid = ask_lock ? campaign_lock_holder(dir) : 0) return held_by_text(dir, pid);
  std::error_code ec;
  if (fs::exists(dir + "/journal.jsonl", ec))
    return "already holds a campaign (journal.jsonl); continue it with --resume " + dir + " or choose another --out";
  const fs::file_status st = fs::status(dir, ec);
  if (!fs::exists(st)) return "";
  if (!fs::is_directory(st)) return "is not a directory";
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name != kLockFile)
      return "is not empty and holds no campaign (it has " + name +
             "); --out takes a new or empty folder, so that nothing in it is overwritten or removed";
  }
  if (ec) return "cannot be listed: " + ec.message();
  return "";
}

}  // namespace

void Supervisor::claim_new_folder() {
  std::error_code ec;
  if (!fs::exists(dir_, ec)) {
    for (fs::path p = fs::path(dir_).lexically_normal(); !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
      created_dirs_.push_back(p.string());
      if (p == p.parent_path()) break;
    }
    fs::create_directories(dir_);
  }
  lock_ = CampaignLock::acquire(dir_, "--out");
  // Checked again under the lock: another --out may have claimed the folder in between.
  const std::string problem = foreign_folder_problem(dir_, false);
  if (!problem.empty()) throw InputError(dir_, "", "--out", problem);
}

void Supervisor::make_dir(const std::string& path) {
  if (fs::create_directory(path)) created_.push_back(path);
}

void Supervisor::remove_created() {
  journal_.close();
  std::error_code ec;
  for (auto it = created_.rbegin(); it != created_.rend(); ++it) fs::remove_all(*it, ec);
  created_.clear();
  if (lock_.created_file()) lock_.remove_file();
  for (const std::string& d : created_dirs_) fs::remove(d, ec);  // only if empty
  created_dirs_.clear();
}

void Supervisor::open_campaign() {
  if (!opt_.resume_dir.empty()) {
    dir_ = opt_.resume_dir;
    // One supervisor per campaign: the journal is read once the lock says no other one appends to it.
    std::error_code ec;
    if (fs::is_directory(dir_, ec) && fs::exists(dir_ + "/journal.jsonl", ec))
      lock_ = CampaignLock::acquire(dir_, "--resume");
    // What the campaign writes is its own: a link planted in its place is refused before any work.
    for (const char* name :
         {"journal.jsonl", "summary.json", "mix.json", "report.html", "findings", "workers", "pending"})
      if (fs::is_symlink(dir_ + "/" + name, ec))
        throw InputError(dir_ + "/" + name, "", "--resume",
                         "is a symbolic link; a campaign writes its files in its own folder, never through a link");
    const JournalState st = read_journal(dir_ + "/journal.jsonl");
    const json& c = st.campaign;
    if (!opt_.kernel.empty() && opt_.kernel != c.value("kernel", "")) {
      throw InputError(
          dir_, "", "--kernel",
          "this campaign fuzzes '" + c.value("kernel", "") + "'; --resume keeps its kernel (leave --kernel out)");
    }
    opt_.kernel = c.value("kernel", "");
    StreamConfig sc;
    sc.seed = c.value("seed", uint64_t{1});
    sc.budget = c.value("budget", "large");
    sc.device_variants = c.value("device_variants", false);
    sc.plan_variants = c.value("plan_variants", false);
    if (c.contains("mix") && !c.at("mix").is_null()) {
      // The table is the stream's: mix.json in the campaign folder, as the journal recorded it.
      mix_ = c.at("mix");
      const std::string digest = mix_.is_object() && mix_.contains("digest") && mix_.at("digest").is_string()
                                     ? mix_.at("digest").get<std::string>()
                                     : "";
      if (digest.empty())
        throw InputError(dir_ + "/journal.jsonl", "", "mix.digest",
                         "missing: the campaign line must name mix.json's digest");
      sc.mix = std::make_shared<const MixTable>(load_mix_file(dir_ + "/mix.json", digest));
    }
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
    // Failed: the target's verdicts; a recipe that did not generate and a case not run for want of
    // a resource are the suite's.
    for (const auto& [v, n] : by_verdict_)
      if (v != "pass" && v != "input-error" && v != "resource") failed_total_ += n;
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
    journal_.open_append(dir_ + "/journal.jsonl");
    findings_ = std::make_unique<FindingStore>(dir_, opt_.kernel);
    for (const auto& fl : st.findings) {
      const std::string id = fl.value("id", "");
      auto it = st.finding_done.find(id);
      auto hit = st.hits.find(id);
      Finding& f = findings_->restore(fl, it == st.finding_done.end() ? nullptr : &it->second,
                                      hit == st.hits.end() ? 0 : hit->second);
      if (f.state == "interrupted") {  // its shrinking was cut short: start it again from the first case
        f.state = "investigating";
        waiting_.push_back({&f, f.first, f.recipe});
      }
    }
    if (opt_.cases < 0 && opt_.hours < 0) opt_.hours = 8;
    // Coverage is campaign-wide: the recipes of the cases already run come back from the stream.
    for (int64_t i : done_) coverage_.add(stream_->at(i), 0);
    journal_.append({{"t", "run"},
                     {"run", run_number_},
                     {"started", utc_now()},
                     {"resumed", true},
                     {"argv", opt_.argv_line},
                     {"done_before", cases_total_},
                     {"ledger", opt_.ledger}});
    return;
  }
  dir_ = opt_.out_dir;
  if (const std::string problem = foreign_folder_problem(dir_, true); !problem.empty())
    throw InputError(dir_, "", "--out", problem);
  // Captured shapes are read before the campaign directory exists: a folder without readable case
  // files is a usage error that leaves nothing behind.
  MixSource mix;
  if (!opt_.mix_from.empty()) mix = read_mix_dir(opt_.mix_from, opt_.seed);
  claim_new_folder();
  make_dir(dir_ + "/findings");
  StreamConfig sc;
  sc.seed = opt_.seed;
  sc.budget = opt_.budget;
  sc.device_variants = !is_host_target(opt_.kernel);
  sc.plan_variants = opt_.plan_variants < 0 ? sc.device_variants : opt_.plan_variants == 1;
  if (!opt_.mix_from.empty()) {
    json doc = mix_to_json(mix);
    doc["created"] = utc_now();
    doc["generator"] = std::string("vattn ") + VATTN_VERSION;
    const std::string digest = write_mix_file(dir_ + "/mix.json", doc);
    created_.push_back(dir_ + "/mix.json");
    sc.mix = std::make_shared<const MixTable>(mix.table);
    mix_ = {{"file", "mix.json"},
            {"digest", digest},
            {"from", mix.dir},
            {"cases", mix.cases},
            {"shapes", mix.table.shapes.size()},
            {"share_percent", mix.table.share_percent}};
    std::fprintf(stderr, "vattn fuzz: --mix-from %s: %lld case(s) of %lld file(s), %zu shape(s), %d%% of the cases\n",
                 printable(opt_.mix_from).c_str(), static_cast<long long>(mix.cases), static_cast<long long>(mix.files),
                 mix.table.shapes.size(), mix.table.share_percent);
    for (const std::string& s : mix.skipped)
      std::fprintf(stderr, "vattn fuzz: --mix-from: skipped %s\n", printable(s).c_str());
  }
  stream_ = std::make_unique<CaseStream>(sc);
  journal_.create(dir_ + "/journal.jsonl");
  created_.push_back(dir_ + "/journal.jsonl");
  json campaign{{"t", "campaign"},
                {"schema", kJournalSchema},
                {"version", kJournalVersion},
                {"kernel", opt_.kernel},
                {"seed", sc.seed},
                {"budget", sc.budget},
                {"device_variants", sc.device_variants},
                {"plan_variants", sc.plan_variants},
                {"cases", opt_.cases},
                {"created", utc_now()},
                {"generator", std::string("vattn ") + VATTN_VERSION}};
  if (opt_.shard_given) campaign["shard"] = {opt_.shard_index, opt_.shard_count};
  if (!mix_.is_null()) campaign["mix"] = mix_;
  journal_.append(campaign);
  journal_.append({{"t", "run"},
                   {"run", run_number_},
                   {"started", utc_now()},
                   {"resumed", false},
                   {"argv", opt_.argv_line},
                   {"ledger", opt_.ledger}});
  journal_.sync();
  findings_ = std::make_unique<FindingStore>(dir_, opt_.kernel);
}

}  // namespace vattn::fuzz::supervisor_detail
