// SPDX-License-Identifier: Apache-2.0
#include "vattn/fuzz/campaign/summary_rebuild.h"

#include <filesystem>
#include <memory>

#include "vattn/case/case.h"
#include "vattn/fuzz/campaign/coverage.h"
#include "vattn/fuzz/campaign/findings.h"
#include "vattn/fuzz/campaign/merge.h"
#include "vattn/fuzz/campaign/mix_file.h"
#include "vattn/fuzz/gen/case_stream.h"

namespace vattn::fuzz {

namespace fs = std::filesystem;

bool summary_is_current(const json& summary, const std::string& journal_path) {
  std::error_code ec;
  const auto size = fs::file_size(journal_path, ec);
  if (ec || !summary.contains("journal") || !summary.at("journal").is_object()) return false;
  const json& b = summary.at("journal").value("bytes", json());
  return b.is_number_unsigned() && b.get<uint64_t>() == static_cast<uint64_t>(size);
}

json summary_from_journal(const std::string& dir, const JournalState& st) {
  const json& c = st.campaign;
  const std::string kernel = st.kernel_library.empty() ? c.at("kernel").get<std::string>() : st.kernel_library;
  StreamConfig sc = stream_config_of(c);
  if (c.contains("mix") && !c.at("mix").is_null()) {
    const json& mix = c.at("mix");
    if (!mix.is_object() || !mix.contains("digest") || !mix.at("digest").is_string())
      throw InputError(dir + "/journal.jsonl", "", "mix.digest",
                       "missing: the campaign line must name mix.json's digest");
    sc.mix = std::make_shared<const MixTable>(load_mix_file(dir + "/mix.json", mix.at("digest").get<std::string>()));
  }
  const CaseStream stream(sc);
  // Coverage as the supervisor counts it: every case that ran (not those given up for resources).
  Coverage coverage;
  for (int64_t i : st.done) {
    if (st.not_run.count(i)) continue;
    auto e = st.device_errors.find(i);
    coverage.add(stream.at(i), e == st.device_errors.end() ? 0 : e->second);
  }
  int64_t failed = 0, tolerated = 0;
  for (const auto& [v, n] : st.by_verdict)
    if (v != "pass" && v != "input-error" && v != "resource") failed += n;
  json tolerated_by = json::object();
  for (const auto& [sig, n] : st.tolerated) {
    tolerated += n;
    tolerated_by[sig] = n;
  }
  failed -= tolerated;
  FindingStore store(dir, kernel);
  json findings = json::array(), unconfirmed = json::array();
  for (const json& line : st.findings) {
    const std::string id = line.at("id").get<std::string>();
    auto done = st.finding_done.find(id);
    auto hits = st.hits.find(id);
    const Finding& f = store.restore(line, done == st.finding_done.end() ? nullptr : &done->second,
                                     hits == st.hits.end() ? 0 : hits->second);
    findings.push_back(f.to_json(kernel));
    if (f.state == "done" && f.investigation.is_object() && f.investigation.value("confirmed", json(true)) == false)
      unconfirmed.push_back(id);
  }
  json extra = json::array();
  for (const auto& [sig, n] : st.extra)
    extra.push_back(
        {{"signature", sig}, {"check", signature_check(sig)}, {"bucket", signature_bucket(sig)}, {"count", n}});
  const int64_t gave_up = static_cast<int64_t>(st.not_run.size());
  std::error_code ec;
  const auto bytes = fs::file_size(dir + "/journal.jsonl", ec);
  json j{{"schema", "vattn-fuzz-summary"},
         {"version", 1},
         {"kernel", kernel},
         {"seed", sc.seed},
         {"budget", sc.budget},
         {"campaign", dir},
         {"stopped", st.last_end.is_object() && st.last_end.contains("reason") && st.last_end.at("reason").is_string()
                         ? st.last_end.at("reason").get<std::string>()
                         : "killed: run " + std::to_string(st.runs) + " has no end line (rebuilt from the journal)"},
         {"this_run",
          {{"elapsed_s", st.last_run_seconds},
           {"cases", st.last_run_cases},
           {"long_cases", st.last_run_long},
           {"not_run", 0}}},
         {"campaign_cases", static_cast<int64_t>(st.done.size())},
         {"failed", failed},
         {"suite_errors", st.suite_errors},
         {"suite_error_list", st.suite_error_list},
         {"verdicts", st.by_verdict},
         {"coverage", coverage.to_json()},
         {"workers", json::array()},
         {"resources",
          {{"errors", st.resource_errors},
           {"retried", st.resource_retried},
           {"gave_up", gave_up},
           {"not_run", json::array()}}},
         {"findings", findings},
         {"unconfirmed", unconfirmed},
         {"extra_buckets", extra},
         {"tolerated", tolerated},
         {"tolerated_by_signature", tolerated_by},
         {"rebuilt_from_journal", true}};
  if (!st.kernel_sha256.empty()) j["kernel_sha256"] = st.kernel_sha256;
  if (c.contains("shard")) j["shard"] = c.at("shard");
  if (c.contains("mix") && !c.at("mix").is_null()) j["mix"] = c.at("mix");
  if (!st.problems.empty()) j["journal_problems"] = st.problems;
  if (!ec) j["journal"] = {{"bytes", bytes}};
  return j;
}

json campaign_summary(const std::string& dir, std::string& note, JournalState* journal) {
  note.clear();
  const std::string jpath = dir + "/journal.jsonl", spath = dir + "/summary.json";
  std::error_code ec;
  const bool has_journal = fs::exists(jpath, ec), has_summary = fs::exists(spath, ec);
  if (!has_journal && !has_summary)
    throw InputError(spath, "", "summary.json", "missing, and no journal.jsonl beside it: not a campaign directory");
  if (!has_journal) return read_summary(dir);  // a merge's: its parts' journals are read where it is made
  JournalState st = read_journal(jpath);
  json summary;
  if (has_summary) {
    try {
      summary = read_summary(dir);
    } catch (const InputError& e) {
      note = std::string("summary.json cannot be used (") + e.what() + ")";
    }
  } else {
    note = "no summary.json (the campaign never stopped cleanly)";
  }
  if (note.empty() && !summary_is_current(summary, jpath))
    note =
        "summary.json is older than journal.jsonl (a later run did not stop cleanly, or a vattn before "
        "summaries recorded the journal's length wrote it)";
  if (!note.empty()) summary = summary_from_journal(dir, st);
  if (journal) *journal = std::move(st);
  return summary;
}

}  // namespace vattn::fuzz
