// SPDX-License-Identifier: Apache-2.0
// vattn report: the HTML morning report of a campaign (or of a merge), optionally beside another
// campaign. The page is made by vattn/fuzz/report/morning_report.py (matplotlib); this command finds it
// and passes the options on, so people need only one program name.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

#include "vattn/case/case.h"
#include "vattn/case/fd_write.h"
#include "vattn/cli/args.h"
#include "vattn/cli/commands.h"
#include "vattn/fuzz/campaign/campaign_lock.h"
#include "vattn/fuzz/campaign/report_runner.h"
#include "vattn/fuzz/campaign/summary_rebuild.h"

namespace vattn::cli {

namespace fs = std::filesystem;

namespace {

// A file of this process's own (mkstemp in $TMPDIR), removed when it goes.
struct TempSummary {
  std::string path;
  explicit TempSummary(const std::string& text) {
    const char* dir = std::getenv("TMPDIR");
    std::string name = std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") + "/vattn-summary-XXXXXX";
    const int fd = ::mkstemp(name.data());
    if (fd < 0) throw std::runtime_error("cannot make a temporary file in " + name + ": " + std::strerror(errno));
    const bool ok = write_all(fd, text.data(), text.size());
    ::close(fd);
    path = name;
    if (!ok) throw std::runtime_error("cannot write the temporary file " + name + ": " + std::strerror(errno));
  }
  ~TempSummary() {
    if (!path.empty()) ::unlink(path.c_str());
  }
  TempSummary(const TempSummary&) = delete;
  TempSummary& operator=(const TempSummary&) = delete;
  TempSummary(TempSummary&& o) noexcept : path(std::move(o.path)) { o.path.clear(); }
  TempSummary& operator=(TempSummary&&) = delete;
};

}  // namespace

int cmd_report(int argc, char** argv) {
  Args args("report", "DIR [--compare DIR_B] [--out FILE]",
            "Writes the morning report of the fuzz campaign in DIR (or of a `vattn fuzz-merge` directory):\n"
            "one self-contained HTML page with throughput over time, coverage histograms, verdicts,\n"
            "findings (class, count, shrunk recipe, the line that re-runs it), the ledger of tolerated\n"
            "findings and the workers. --compare puts a second campaign beside it (e.g. last night's\n"
            "revision and tonight's). A campaign whose journal has outgrown its summary.json (a run killed\n"
            "after the summary was written) is reported from its journal, and says so.\n"
            "Needs python3 with matplotlib (Debian: python3-matplotlib).");
  args.positionals("DIR", "campaign directory (holds summary.json and journal.jsonl)", 1)
      .option("compare", "DIR_B", "a second campaign, shown side by side")
      .option("out", "FILE", "where to write the page", "DIR/report.html")
      .option("title", "TEXT", "the page's title")
      .example("vattn report night1", "writes night1/report.html")
      .example("vattn report night2 --compare night1 --out compare.html", "two revisions side by side")
      .note("exit codes: 0 written, 2 unusable campaign directory, or python3/matplotlib missing");
  std::vector<std::string> pass;
  try {
    if (!args.parse(argc, argv)) return kExitOk;
    if (args.positional().size() != 1) throw UsageError("one campaign directory, please (--compare for a second)");
    pass.push_back(args.positional().front());
    for (const char* o : {"compare", "out", "title"}) {
      if (args.has(o)) {
        pass.push_back(std::string("--") + o);
        pass.push_back(args.get(o));
      }
    }
  } catch (const UsageError& e) {
    return args.usage_error(e.what());
  }
  // The journal is the record: a campaign whose summary.json it has outgrown (a run killed after
  // the summary was written) is reported from a summary rebuilt from it, handed to the generator
  // in a private temporary file, never written into the campaign.
  std::vector<TempSummary> rebuilt;
  try {
    for (const auto& [dir, option] : {std::make_pair(pass.front(), std::string("--summary")),
                                      std::make_pair(args.get("compare"), std::string("--compare-summary"))}) {
      if (dir.empty()) continue;
      std::string note;
      const fuzz::json summary = fuzz::campaign_summary(dir, note);
      if (note.empty()) continue;
      std::fprintf(stderr, "vattn report: %s: %s; reported from its journal\n", printable(dir).c_str(),
                   printable(note).c_str());
      rebuilt.emplace_back(summary.dump(2) + "\n");
      pass.push_back(option);
      pass.push_back(rebuilt.back().path);
    }
  } catch (const InputError& e) {
    std::fprintf(stderr, "vattn report: %s\n", e.what());
    return kExitBadInput;
  } catch (const std::runtime_error& e) {
    std::fprintf(stderr, "vattn report: %s\n", e.what());
    return kExitBadInput;
  }
  // The report reads a running campaign without its lock (a snapshot), but does not write into the
  // folder of one: that campaign writes its own report.html when it stops.
  const std::string out_dir = args.has("out") ? fs::path(args.get("out")).parent_path().string() : pass.front();
  if (const long pid = fuzz::campaign_lock_holder(out_dir.empty() ? "." : out_dir)) {
    std::fprintf(stderr, "vattn report: %s; it writes its report when it stops (--out FILE elsewhere writes one now)\n",
                 fuzz::held_by_text(out_dir, pid).c_str());
    return kExitBadInput;
  }
  const fuzz::ReportRun r = fuzz::run_report(self_exe(), pass);
  if (!r.output.empty()) std::fprintf(r.code == 0 ? stdout : stderr, "%s\n", r.output.c_str());
  if (r.code == 127) std::fprintf(stderr, "vattn report: cannot run the report generator (python3 with matplotlib)\n");
  if (std::fflush(stdout) != 0) return kExitBadInput;
  return r.code == 0 ? kExitOk : kExitBadInput;
}

}  // namespace vattn::cli
