// SPDX-License-Identifier: Apache-2.0
#include "vattn/fuzz/campaign/findings.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "vattn/case/case.h"
#include "vattn/case/fd_write.h"

namespace vattn::fuzz {

namespace fs = std::filesystem;

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

Finding& FindingStore::add(const Verdict& v, const std::string& recipe) {
  auto f = std::make_unique<Finding>();
  char id[16];
  std::snprintf(id, sizeof id, "%03zu", findings_.size() + 1);
  f->id = id;
  f->dir = dir_ + "/findings/" + f->id + "-" + v.verdict;
  f->signature = v.signature();
  f->first = v;
  f->recipe = recipe;
  f->count = 1;
  fs::create_directories(f->dir);
  if (!v.repro.empty() && fs::exists(v.repro)) {
    std::error_code ec;
    fs::rename(v.repro, f->dir + "/repro.h5", ec);
    if (!ec) f->repro = "repro.h5";
  }
  save(*f);
  by_signature_[f->signature] = f.get();
  findings_.push_back(std::move(f));
  return *findings_.back();
}

Finding& FindingStore::restore(const json& line, const json* done_line, int64_t hits) {
  auto f = std::make_unique<Finding>();
  f->id = line.value("id", "");
  f->dir = line.value("dir", "");
  f->signature = line.value("sig", "");
  f->first = Verdict::from_json(line.value("first", json::object()));
  f->recipe = line.value("recipe", "");
  f->count = hits;
  std::ifstream in(f->dir + "/finding.json");
  const json saved = json::parse(in, nullptr, false);
  if (saved.is_object()) {
    f->repro = saved.value("repro", "");
    f->shrunk_repro = saved.value("shrunk_repro", "");
    if (saved.contains("investigation")) f->investigation = saved["investigation"];
  }
  if (done_line) {
    f->state = "done";
    f->investigation = done_line->value("investigation", f->investigation);
  } else {
    f->state = "interrupted";  // the supervisor stopped while shrinking it; the first case stands
  }
  by_signature_[f->signature] = f.get();
  findings_.push_back(std::move(f));
  save(*findings_.back());
  return *findings_.back();
}

void FindingStore::save(const Finding& f) const {
  const std::string why = replace_file(f.dir + "/finding.json", f.to_json(kernel_).dump(2) + "\n", Durability::kSynced);
  if (!why.empty()) throw std::runtime_error("finding " + why);
}

std::vector<Finding*> FindingStore::all() {
  std::vector<Finding*> v;
  for (auto& f : findings_) v.push_back(f.get());
  return v;
}

}  // namespace vattn::fuzz
