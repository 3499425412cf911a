// SPDX-License-Identifier: Apache-2.0
// Opening a new campaign: a new or empty folder claimed, the journal's campaign and run lines
// (the kernel pinned, the run options recorded), and mix.json with --mix-from. Resuming one is
// supervisor_resume.cpp.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "vattn/fuzz/campaign/kernel_identity.h"
#include "vattn/fuzz/campaign/mix_file.h"
#include "vattn/fuzz/campaign/run_options.h"
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
    resume_campaign();
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
  // A revision library is pinned: its absolute path (the workers load that, from any working
  // directory, at every resume) and its bytes' SHA-256 (a resume checks it).
  std::string sha256;
  if (is_kernel_library(opt_.kernel)) {
    opt_.kernel = absolute_library_path(opt_.kernel);
    sha256 = sha256_of_file(opt_.kernel, "--kernel");
    kernel_sha256_ = sha256;
  }
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
  if (!sha256.empty()) campaign["kernel_sha256"] = sha256;
  if (opt_.shard_given) campaign["shard"] = {opt_.shard_index, opt_.shard_count};
  if (!mix_.is_null()) campaign["mix"] = mix_;
  journal_.append(campaign);
  journal_.append({{"t", "run"},
                   {"run", run_number_},
                   {"started", utc_now()},
                   {"resumed", false},
                   {"argv", opt_.argv_line},
                   {"ledger", opt_.ledger},
                   {"options", run_options_json(opt_)}});
  journal_.sync();
  findings_ = std::make_unique<FindingStore>(dir_, opt_.kernel);
}

}  // namespace vattn::fuzz::supervisor_detail
