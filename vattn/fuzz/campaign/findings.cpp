// SPDX-License-Identifier: Apache-2.0
#include "vattn/fuzz/campaign/findings.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <sys/stat.h>

#include "vattn/case/case.h"
#include "vattn/case/fd_write.h"
#include "vattn/case/file_read.h"
#include "vattn/fuzz/protocol/json_read.h"

namespace vattn::fuzz {

namespace fs = std::filesystem;

namespace {
// A finding.json holds one finding's lines and recipes: kilobytes.
constexpr uint64_t kMaxFindingJsonBytes = uint64_t{16} << 20;
}  // namespace

std::string FindingStore::rerun_command(const std::string& kernel, const std::string& recipe) {
  return "vattn fuzz --kernel " + shell_quote(kernel) + " --recipe " + shell_quote(recipe);
}

json Finding::to_json(const std::string& kernel) const {
  json j{{"schema", "vattn-fuzz-finding"},
         {"version", 1},
         {"id", id},
         {"signature", signature},
         {"class", first.verdict},
         {"check", first.check},
         // Where the errors sit; null for a check without buckets, and for a wrong answer
         // journaled before buckets (its signature has none: a bucket of its own).
         {"bucket", signature_bucket(signature).empty() ? json(nullptr) : json(signature_bucket(signature))},
         {"detail", first.detail},
         {"count", count},
         {"state", state},
         {"kernel", kernel},
         {"dir", "findings/" + fs::path(dir).filename().string()},
         {"first_case", {{"index", first.index}, {"recipe", recipe}}}};
  if (!investigation.is_null()) j["investigation"] = investigation;
  const std::string shrunk = investigation.is_object() ? investigation.value("shrunk_recipe", recipe) : recipe;
  json rerun = json::array({FindingStore::rerun_command(kernel, shrunk)});
  const bool host = kernel.rfind("host:", 0) == 0;
  if (!shrunk_repro.empty() && !host)
    rerun.push_back("vattn replay " + shell_quote(dir + "/" + shrunk_repro) + " --kernel " + shell_quote(kernel));
  j["reproduce"] = rerun;
  if (!repro.empty()) j["repro"] = repro;
  if (!shrunk_repro.empty()) j["shrunk_repro"] = shrunk_repro;
  return j;
}

FindingStore::FindingStore(std::string campaign_dir, std::string kernel)
    : dir_(std::move(campaign_dir)), kernel_(std::move(kernel)) {}

Finding* FindingStore::find(const std::string& signature) {
  auto it = by_signature_.find(signature);
  return it == by_signature_.end() ? nullptr : it->second;
}

int FindingStore::count_check(const std::string& check) const {
  int n = 0;
  for (const auto& f : findings_)
    if (signature_check(f->signature) == check) ++n;
  return n;
}

namespace {

// The number of a finding id or of a folder name ("001", "001-wrong"), or -1.
int64_t number_of(const std::string& s) {
  size_t digits = 0;
  while (digits < s.size() && digits < 9 && std::isdigit(static_cast<unsigned char>(s[digits]))) ++digits;
  if (digits == 0 || (digits < s.size() && s[digits] != '-')) return -1;
  return std::stoll(s.substr(0, digits));
}

}  // namespace

Finding& FindingStore::add(const Verdict& v, const std::string& recipe, std::string& evidence_error) {
  evidence_error.clear();
  auto f = std::make_unique<Finding>();
  // Above every number in use: the journal's findings and whatever folder is there (a finding line
  // the journal lost, another run's leftovers). mkdir, not create_directories: an existing folder
  // is never taken over.
  int64_t next = 0;
  for (const auto& g : findings_) next = std::max(next, number_of(g->id));
  std::error_code ec;
  for (fs::directory_iterator it(dir_ + "/findings", ec), end; !ec && it != end; it.increment(ec))
    next = std::max(next, number_of(it->path().filename().string()));
  for (int tries = 0;; ++tries) {
    ++next;
    char id[32];
    std::snprintf(id, sizeof id, "%03lld", static_cast<long long>(next));
    f->id = id;
    f->dir = dir_ + "/findings/" + f->id + "-" + v.verdict;
    if (::mkdir(f->dir.c_str(), 0755) == 0) break;
    if (errno != EEXIST || tries >= 1000) {
      evidence_error = "cannot create the finding folder " + f->dir + ": " + std::strerror(errno);
      break;
    }
  }
  f->signature = v.signature();
  f->first = v;
  f->first.repro.clear();  // the worker's pending file: the finding's own is repro.h5 in its folder
  f->recipe = recipe;
  f->count = 1;
  if (evidence_error.empty() && !v.repro.empty()) {
    fs::rename(v.repro, f->dir + "/repro.h5", ec);
    if (ec) {
      evidence_error = "cannot move the repro " + v.repro + " into " + f->dir + ": " + ec.message();
    } else {
      f->repro = "repro.h5";
    }
  }
  if (evidence_error.empty()) evidence_error = save(*f);
  by_signature_[f->signature] = f.get();
  findings_.push_back(std::move(f));
  return *findings_.back();
}

Finding& FindingStore::restore(const json& line, const json* done_line, int64_t hits) {
  auto f = std::make_unique<Finding>();
  f->id = line.value("id", "");
  f->dir = dir_ + "/" + line.value("dir", "");
  f->signature = line.value("sig", "");
  try {
    f->first = Verdict::from_json(line.value("first", json::object()));
  } catch (const json::exception&) {
    f->first = Verdict{};  // a verdict of the wrong kinds: the finding stands on its signature
  }
  f->first.repro.clear();
  f->recipe = line.value("recipe", "");
  f->count = hits;
  std::error_code ec;
  if (fs::is_symlink(f->dir, ec))
    throw InputError(f->dir, "", "findings",
                     "is a symbolic link; a campaign keeps its findings in its own folder, never through a link");
  // A finding killed before its finding.json was written has none; one that is there is read as
  // untrusted: a regular file of bounded size (a FIFO or /dev/zero put there is refused), JSON of
  // bounded depth.
  const std::string saved_path = f->dir + "/finding.json";
  const json saved = fs::exists(fs::symlink_status(saved_path, ec))
                         ? parse_json_bounded<json>(read_input_file(saved_path, kMaxFindingJsonBytes, "finding.json"))
                         : json(json::value_t::discarded);
  // Only the names the store itself gives its files are taken from it: finding.json is not trusted
  // to point anywhere else.
  auto own_file = [&](const char* key, const char* name) {
    return saved.contains(key) && saved.at(key) == name ? std::string(name) : std::string();
  };
  if (saved.is_object()) {
    f->repro = own_file("repro", "repro.h5");
    f->shrunk_repro = own_file("shrunk_repro", "shrunk.h5");
    if (saved.contains("investigation") && saved.at("investigation").is_object())
      f->investigation = saved["investigation"];
  }
  if (done_line) {
    f->state = "done";
    const json inv = done_line->value("investigation", json());
    if (inv.is_object()) f->investigation = inv;
  } else {
    f->state = "interrupted";  // the supervisor stopped while shrinking it; the first case stands
  }
  by_signature_[f->signature] = f.get();
  findings_.push_back(std::move(f));
  return *findings_.back();
}

std::string FindingStore::save(const Finding& f) const {
  const std::string why = replace_file(f.dir + "/finding.json", f.to_json(kernel_).dump(2) + "\n", Durability::kSynced);
  return why.empty() ? "" : "finding " + f.id + ": " + why;
}

std::vector<Finding*> FindingStore::all() {
  std::vector<Finding*> v;
  for (auto& f : findings_) v.push_back(f.get());
  return v;
}

}  // namespace vattn::fuzz
