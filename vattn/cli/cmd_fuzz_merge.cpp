// SPDX-License-Identifier: Apache-2.0
// vattn fuzz-merge: the campaign directories of several hosts (a Slurm array's tasks, each one
// --shard of one stream) become one summary.json and one report (vattn/fuzz/campaign/merge.h).
#include <cstdio>
#include <filesystem>

#include "vattn/case/case.h"
#include "vattn/case/fd_write.h"
#include "vattn/cli/args.h"
#include "vattn/cli/commands.h"
#include "vattn/fuzz/campaign/campaign_lock.h"
#include "vattn/fuzz/campaign/merge.h"
#include "vattn/fuzz/campaign/report_runner.h"

namespace vattn::cli {

namespace fs = std::filesystem;
using fuzz::json;

namespace {

// Writes DIR/summary.json atomically; refuses a directory that holds a campaign of its own.
void write_merged(const std::string& dir, const json& summary) {
  if (const long pid = fuzz::campaign_lock_holder(dir))
    throw InputError(dir, "", "--out", fuzz::held_by_text(dir, pid));
  if (fs::exists(dir + "/journal.jsonl"))
    throw InputError(dir, "", "--out", "holds a campaign (journal.jsonl); merge into a directory of its own");
  fs::create_directories(dir);
  const std::string why = replace_file(dir + "/summary.json", summary.dump(2) + "\n", Durability::kSynced);
  if (!why.empty()) throw InputError(dir + "/summary.json", "", "--out", why);
}

void print_merged(const json& m, const std::string& dir) {
  std::printf(
      "vattn fuzz-merge: %zu part(s) of %s (budget %s), %lld cases, %lld failed, %lld tolerated, %lld suite error(s)\n",
      m["parts"].size(), m.value("kernel", "").c_str(), m.value("budget", "").c_str(),
      static_cast<long long>(m.value("campaign_cases", int64_t{0})),
      static_cast<long long>(m.value("failed", int64_t{0})), static_cast<long long>(m.value("tolerated", int64_t{0})),
      static_cast<long long>(m.value("suite_errors", int64_t{0})));
  for (const json& p : m["parts"]) {
    std::string shard = p.contains("shard") ? " shard " + std::to_string(p["shard"][0].get<int64_t>()) + "/" +
                                                  std::to_string(p["shard"][1].get<int64_t>())
                                            : "";
    std::printf("  %s: %lld cases, seed %llu%s; %s\n", printable(p.value("dir", "")).c_str(),
                static_cast<long long>(p.value("cases", int64_t{0})),
                static_cast<unsigned long long>(p.value("seed", uint64_t{0})), shard.c_str(),
                printable(p.value("stopped", "")).c_str());
    if (p.contains("rebuilt_from_journal"))
      std::printf("    counted from its journal: %s\n", printable(p.value("rebuilt_from_journal", "")).c_str());
    for (const json& problem : p.value("journal_problems", json::array()))
      std::printf("    journal.jsonl %s\n", printable(problem.get<std::string>()).c_str());
  }
  std::printf("  verdicts:");
  for (auto it = m["verdicts"].begin(); it != m["verdicts"].end(); ++it)
    std::printf(" %s %lld", printable(it.key()).c_str(), static_cast<long long>(it.value().get<int64_t>()));
  std::printf("\n  findings: %zu\n", m["findings"].size());
  for (const json& f : m["findings"]) {
    const json& evidence = f["parts"][0]["evidence"];
    std::printf("    %s  x%lld  (in %zu part(s)); first evidence: %s\n", printable(f.value("signature", "")).c_str(),
                static_cast<long long>(f.value("count", int64_t{0})), f["parts"].size(),
                evidence.is_string() ? printable(evidence.get<std::string>()).c_str() : "(none)");
  }
  for (const json& e : m.value("extra_buckets", json::array()))
    std::printf("    %s  x%lld  (more buckets: counted, not filed)\n", printable(e.value("signature", "")).c_str(),
                static_cast<long long>(e.value("count", int64_t{0})));
  std::printf("  summary: %s/summary.json\n", dir.c_str());
}

}  // namespace

int cmd_fuzz_merge(int argc, char** argv) {
  Args args("fuzz-merge", "--out DIR PART_DIR...",
            "Merges the campaign directories of several `vattn fuzz` runs of one kernel and budget (the\n"
            "tasks of scripts/slurm/fuzz-array.sbatch, each one --shard of one case stream) into DIR/summary.json\n"
            "(schema vattn-fuzz-summary v1, docs/fuzz-files.md): totals, verdicts, coverage and ledger counts\n"
            "summed, findings merged by signature with every part's evidence listed; then DIR/report.html.\n"
            "Parts of one seed must not have run the same case index. A part's journal is its record: a part\n"
            "killed before it wrote summary.json, or after (its journal has outgrown it), is counted from its\n"
            "journal and its findings' files, and says so. A part still running is refused.");
  args.positionals("PART_DIR...", "campaign directories", 1)
      .option("out", "DIR", "where the merged summary and report go (not a campaign directory)")
      .flag("no-report", "do not write DIR/report.html")
      .example("vattn fuzz-merge --out night1/merged night1/task-*", "the tasks of one Slurm array")
      .note("exit codes: 0 merged, nothing found; 1 merged, with findings; 2 usage, or a part that cannot be merged");
  std::string out;
  try {
    if (!args.parse(argc, argv)) return kExitOk;
    out = args.get("out");
    if (out.empty()) throw UsageError("--out DIR is required");
  } catch (const UsageError& e) {
    return args.usage_error(e.what());
  }
  json merged;
  try {
    merged = fuzz::merge_campaigns(args.positional());
    merged["campaign"] = fs::absolute(out).lexically_normal().string();
    write_merged(out, merged);
  } catch (const InputError& e) {
    std::fprintf(stderr, "vattn fuzz-merge: %s\n", e.what());
    return kExitBadInput;
  } catch (const fs::filesystem_error& e) {
    std::fprintf(stderr, "vattn fuzz-merge: %s\n", e.what());
    return kExitBadInput;
  }
  print_merged(merged, out);
  if (!args.has("no-report")) std::printf("  %s\n", fuzz::write_campaign_report(self_exe(), out).c_str());
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) return kExitBadInput;
  return merged["findings"].empty() ? kExitOk : kExitCheckFailed;
}

}  // namespace vattn::cli
