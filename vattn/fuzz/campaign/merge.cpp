// SPDX-License-Identifier: Apache-2.0
#include "vattn/fuzz/campaign/merge.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "vattn/case/case.h"
#include "vattn/case/file_read.h"
#include "vattn/fuzz/campaign/campaign_lock.h"
#include "vattn/fuzz/campaign/journal.h"
#include "vattn/fuzz/campaign/summary_rebuild.h"
#include "vattn/fuzz/protocol/json_read.h"

namespace vattn::fuzz {

namespace fs = std::filesystem;

namespace {

// A summary holds counts, coverage tables and at most a few hundred findings: a few MiB at most.
constexpr uint64_t kMaxSummaryBytes = uint64_t{64} << 20;

// Adds the counts of `from` into `into`: {key: n} maps, nested to any depth.
void add_counts(json& into, const json& from) {
  for (auto it = from.begin(); it != from.end(); ++it) {
    if (it.value().is_object()) {
      if (!into.contains(it.key())) into[it.key()] = json::object();
      add_counts(into[it.key()], it.value());
    } else if (it.value().is_number_integer()) {
      into[it.key()] = into.value(it.key(), int64_t{0}) + it.value().get<int64_t>();
    }
  }
}

int64_t integer(const json& j, const char* key, const std::string& file) {
  if (!j.contains(key) || !j.at(key).is_number_integer() || j.at(key).get<int64_t>() < 0)
    throw InputError(file, "", key, "missing or not a whole number >= 0");
  return j.at(key).get<int64_t>();
}

// A count read from a part's file: absent is 0; anything but a whole number >= 0 is refused.
int64_t count_of(const json& j, const char* key, const std::string& file, const std::string& field) {
  if (!j.is_object() || !j.contains(key)) return 0;
  const json& v = j.at(key);
  if (!v.is_number_integer() || v.get<int64_t>() < 0)
    throw InputError(file, "", field, v.dump() + ": not a whole number >= 0");
  return v.get<int64_t>();
}

// The summary's counts maps ({name: n}, nested for coverage) hold only whole numbers >= 0.
void check_counts(const json& j, const std::string& file, const std::string& field, int depth) {
  if (!j.is_object()) throw InputError(file, "", field, "not an object of counts");
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string name = field + "." + it.key();
    if (it.value().is_object() && depth > 0) {
      check_counts(it.value(), file, name, depth - 1);
    } else if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0) {
      throw InputError(file, "", name, it.value().dump() + ": not a whole number >= 0");
    }
  }
}

// What the merge reads of a part's summary, checked as untrusted input.
void check_summary(const json& s, const std::string& file) {
  for (const char* key : {"campaign_cases", "failed", "suite_errors"}) integer(s, key, file);
  count_of(s, "tolerated", file, "tolerated");
  check_counts(s.value("verdicts", json::object()), file, "verdicts", 0);
  check_counts(s.value("coverage", json::object()), file, "coverage", 1);
  for (const char* key : {"findings", "extra_buckets", "workers"})
    if (s.contains(key) && !s.at(key).is_array()) throw InputError(file, "", key, "not an array");
  size_t i = 0;
  for (const json& f : s.value("findings", json::array())) {
    const std::string at = "findings[" + std::to_string(i++) + "]";
    if (!f.is_object()) throw InputError(file, "", at, "not an object");
    count_of(f, "count", file, at + ".count");
    for (const char* key : {"id", "dir"})
      if (f.contains(key) && !f.at(key).is_string()) throw InputError(file, "", at + "." + key, "not text");
  }
  i = 0;
  for (const json& e : s.value("extra_buckets", json::array())) {
    const std::string at = "extra_buckets[" + std::to_string(i++) + "]";
    if (!e.is_object()) throw InputError(file, "", at, "not an object");
    count_of(e, "count", file, at + ".count");
  }
  for (const json& w : s.value("workers", json::array()))
    if (!w.is_object()) throw InputError(file, "", "workers", "an entry is not an object");
  if (s.contains("this_run") && !s.at("this_run").is_object()) throw InputError(file, "", "this_run", "not an object");
  if (s.contains("ledger") && !s.at("ledger").is_object()) throw InputError(file, "", "ledger", "not an object");
}

std::string text(const json& j, const char* key, const std::string& file) {
  if (!j.contains(key) || !j.at(key).is_string()) throw InputError(file, "", key, "missing or not a string");
  return j.at(key).get<std::string>();
}

}  // namespace

json read_summary(const std::string& dir) {
  const std::string path = dir + "/summary.json";
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec))) {
    throw InputError(path, "", "summary.json",
                     "missing: the campaign has not stopped cleanly (a killed run writes none; `vattn fuzz --resume " +
                         dir + "` finishes it)");
  }
  std::string why;
  json j = parse_json_bounded<json>(read_input_file(path, kMaxSummaryBytes, "summary.json"), &why);
  if (j.is_discarded() || !j.is_object())
    throw InputError(path, "", "summary.json", "is not a JSON object" + (why.empty() ? "" : ": " + why));
  if (j.value("schema", "") != "vattn-fuzz-summary" || !j.contains("version") || j.at("version") != 1)
    throw InputError(path, "", "schema", "not a vattn-fuzz-summary version 1 (this vattn reads version 1)");
  return j;
}

json merge_campaigns(const std::vector<std::string>& part_dirs) {
  if (part_dirs.empty()) throw InputError("", "", "parts", "no campaign directories to merge");
  json out{{"schema", "vattn-fuzz-summary"},
           {"version", 1},
           {"campaign_cases", 0},
           {"failed", 0},
           {"suite_errors", 0},
           {"tolerated", 0},
           {"verdicts", json::object()},
           {"coverage", json::object()},
           {"workers", json::array()},
           {"findings", json::array()},
           {"merged_from", json::array()},
           {"parts", json::array()}};
  std::map<uint64_t, std::map<int64_t, std::string>> owner;  // seed -> case index -> part that ran it
  std::map<std::string, size_t> finding_at;                  // signature -> index in out["findings"]
  std::map<std::string, int64_t> extra;                      // signature -> cases (extra_buckets)
  std::map<std::pair<std::string, std::string>, size_t> ledger_at;
  json ledger_entries = json::array();
  std::set<uint64_t> seeds;
  std::set<std::string> seen_dirs;
  std::string kernel_identity;  // the first part's kernel: its name, or its library's digest
  double elapsed = 0;
  int64_t cases_run = 0, long_run = 0;
  for (const std::string& dir_in : part_dirs) {
    const std::string dir = fs::absolute(dir_in).lexically_normal().string();
    if (!seen_dirs.insert(dir).second) throw InputError(dir, "", "parts", "given twice");
    const std::string file = dir + "/summary.json";
    // A part still running has no final word yet: merged when it stops.
    if (const long pid = campaign_lock_holder(dir))
      throw InputError(dir, "", "parts", held_by_text(dir, pid) + ": it is still running; merge it once it stops");
    // The journal is the record: a summary it has outgrown (a run after it was killed) is rebuilt.
    JournalState js;
    std::string note;
    const json s = campaign_summary(dir, note, &js);
    if (js.campaign.is_null())
      throw InputError(dir + "/journal.jsonl", "", "parts",
                       "missing: a merge's folder, not a campaign (merge its parts)");
    check_summary(s, file);
    const std::string kernel = text(s, "kernel", file), budget = text(s, "budget", file);
    const uint64_t seed = js.campaign.at("seed").get<uint64_t>();
    // One kernel: the same name, or for a library the same bytes (hosts may keep it at other paths).
    const std::string identity = s.contains("kernel_sha256") && s.at("kernel_sha256").is_string()
                                     ? "sha256:" + s.at("kernel_sha256").get<std::string>()
                                     : kernel;
    if (out.contains("kernel") && kernel_identity != identity)
      throw InputError(file, "", "kernel",
                       "'" + kernel + "', but the first part fuzzes '" + out["kernel"].get<std::string>() +
                           "': merge campaigns of one kernel");
    kernel_identity = identity;
    if (out.contains("budget") && out["budget"] != budget)
      throw InputError(file, "", "budget",
                       "'" + budget + "', but the first part's is '" + out["budget"].get<std::string>() + "'");
    out["kernel"] = kernel;
    out["budget"] = budget;
    seeds.insert(seed);
    // One stream, one runner per case: shards of a seed must not overlap.
    auto& ran = owner[seed];
    for (int64_t i : js.done) {
      auto [it, fresh] = ran.emplace(i, dir);
      if (!fresh)
        throw InputError(file, "", "shard",
                         "case " + std::to_string(i) + " of seed " + std::to_string(seed) + " was run by " +
                             it->second + " too: the parts overlap (give each task its own --shard I/N)");
    }
    const int64_t cases = integer(s, "campaign_cases", file);
    for (const char* key : {"campaign_cases", "failed", "suite_errors"})
      out[key] = out[key].get<int64_t>() + integer(s, key, file);
    out["tolerated"] = out["tolerated"].get<int64_t>() + count_of(s, "tolerated", file, "tolerated");
    add_counts(out["verdicts"], s.value("verdicts", json::object()));
    add_counts(out["coverage"], s.value("coverage", json::object()));
    const std::string part_name = fs::path(dir).filename().string();
    for (json w : s.value("workers", json::array())) {
      w["label"] = part_name + "/" + w.value("label", "?");
      out["workers"].push_back(w);
    }
    if (s.contains("this_run") && s["this_run"].is_object()) {
      elapsed = std::max(elapsed, s["this_run"].value("elapsed_s", 0.0));
      cases_run += s["this_run"].value("cases", int64_t{0});
      long_run += s["this_run"].value("long_cases", int64_t{0});
    }
    for (const json& f : s.value("findings", json::array())) {
      const std::string sig = text(f, "signature", file);
      // The evidence is inside the part: a finding's folder is findings/NAME, whatever a summary says.
      const std::string fdir = confined_finding_dir(f.value("dir", ""));
      const json where{{"dir", dir},
                       {"id", f.value("id", "")},
                       {"count", f.value("count", int64_t{0})},
                       {"evidence", fdir.empty() ? json(nullptr) : json(dir + "/" + fdir)}};
      auto it = finding_at.find(sig);
      if (it == finding_at.end()) {
        json first = f;
        first["parts"] = json::array({where});
        finding_at[sig] = out["findings"].size();
        out["findings"].push_back(first);
      } else {
        json& g = out["findings"][it->second];
        g["count"] = g.value("count", int64_t{0}) + f.value("count", int64_t{0});
        g["parts"].push_back(where);
      }
    }
    for (const json& e : s.value("extra_buckets", json::array()))
      extra[text(e, "signature", file)] += e.value("count", int64_t{0});
    if (s.contains("ledger")) {
      for (const json& e : s["ledger"].value("entries", json::array())) {
        const auto key = std::make_pair(e.value("signature", ""), e.value("kernel", "*"));
        auto it = ledger_at.find(key);
        if (it == ledger_at.end()) {
          ledger_at[key] = ledger_entries.size();
          ledger_entries.push_back(e);
        } else {
          json& g = ledger_entries[it->second];
          g["count"] = g.value("count", int64_t{0}) + e.value("count", int64_t{0});
          if (!g.contains("matched")) g["matched"] = json::object();
          add_counts(g["matched"], e.value("matched", json::object()));
        }
      }
    }
    json part{{"dir", dir},
              {"cases", cases},
              {"seed", seed},
              {"stopped", s.value("stopped", json("")).is_string() ? s.value("stopped", "") : ""}};
    if (js.campaign.contains("shard")) part["shard"] = js.campaign["shard"];
    if (!note.empty()) part["rebuilt_from_journal"] = note;
    if (!js.problems.empty()) part["journal_problems"] = js.problems;
    out["parts"].push_back(part);
    out["merged_from"].push_back(dir);
  }
  out["seed"] = seeds.size() == 1 ? json(*seeds.begin()) : json(nullptr);
  out["seeds"] = seeds;
  out["stopped"] = "merged " + std::to_string(part_dirs.size()) + " part(s)";
  out["this_run"] = {{"elapsed_s", elapsed}, {"cases", cases_run}, {"long_cases", long_run}};
  if (!ledger_entries.empty()) out["ledger"] = {{"file", "(merged)"}, {"entries", ledger_entries}};
  // A bucket another part filed as a finding stays in both lists: each part's cap was its own.
  json extras = json::array();
  for (const auto& [sig, n] : extra)
    extras.push_back(
        {{"signature", sig}, {"check", signature_check(sig)}, {"bucket", signature_bucket(sig)}, {"count", n}});
  out["extra_buckets"] = extras;
  return out;
}

}  // namespace vattn::fuzz
