// SPDX-License-Identifier: Apache-2.0
// vattn bench-compare: revisions set against a base across `vattn bench --json` reports (host only).
#include <cstdio>

#include "kernels/vattn_revisions.h"
#include "vattn/case/case.h"
#include "vattn/cli/args.h"
#include "vattn/cli/bench_compare.h"
#include "vattn/cli/commands.h"

namespace vattn::cli {

int cmd_bench_compare(int argc, char** argv) {
  Args args("bench-compare", "[options] REPORT.json...",
            "Sets kernel revisions against a base revision across `vattn bench --json` reports of one GPU\n"
            "(schema vattn-bench-report v2). On one GPU the order in which revisions are timed, and the drift\n"
            "between runs, move small shapes by a few percent: time A,B and then B,A, more than once, and give\n"
            "every report here. For each revision and shape: the mean graph-replay and queued times over the\n"
            "reports, base / revision (above 1: the revision is faster) and that ratio's spread between the\n"
            "reports; then its geometric mean over the verify shapes (T > 1) and the decode shapes (T = 1).\n"
            "Reads the reports only: no GPU needed.");
  args.positionals("REPORT.json...", "reports written by vattn bench --json", 1)
      .option("base", "NAME", "the revision the others are set against", "the first revision of the first report")
      .option("min-ratio", "R", "exit 1 when a revision's ratio (graph or queued) is below R at any shape")
      .example("vattn bench --kernel " VATTN_REVISION_DEFAULT
               ",new.so --json ab.json; vattn bench --kernel new.so," VATTN_REVISION_DEFAULT " --json ba.json",
               "time both, in both orders")
      .example("vattn bench-compare --base " VATTN_REVISION_DEFAULT " --min-ratio 0.99 ab.json ba.json",
               "then compare them")
      .note(
          "exit codes: 0 compared (none below --min-ratio); 1 some revision below --min-ratio; 2 usage, or a report "
          "that cannot be used");
  double min_ratio = 0;
  try {
    if (!args.parse(argc, argv)) return kExitOk;
    min_ratio = args.get_double("min-ratio", 0);
    if (args.has("min-ratio") && min_ratio <= 0) throw UsageError("--min-ratio must be above 0");
  } catch (const UsageError& e) {
    return args.usage_error(e.what());
  }
  Comparison c;
  try {
    c = compare_bench_reports(args.positional(), args.get("base"));
  } catch (const InputError& e) {
    std::fprintf(stderr, "vattn bench-compare: %s\n", e.what());
    return kExitBadInput;
  }
  std::fputs(comparison_table(c).c_str(), stdout);
  int rc = kExitOk;
  if (args.has("min-ratio")) {
    const std::vector<std::string> below = below_ratio(c, min_ratio);
    for (const std::string& line : below) std::printf("BELOW: %s\n", line.c_str());
    if (!below.empty())
      rc = kExitCheckFailed;
    else
      std::printf("every revision at or above %g at every shape (graph and queued)\n", min_ratio);
  }
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) return kExitBadInput;
  return rc;
}

}  // namespace vattn::cli
