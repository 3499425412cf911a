// SPDX-License-Identifier: Apache-2.0
// vattn: verify-attention correctness suite. Dispatches to one subcommand per file.
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "vattn/casefile/read_watchdog.h"
#include "vattn/cli/commands.h"

namespace {

struct Subcommand {
  const char* name;
  int (*run)(int, char**);
  const char* summary;
};

const Subcommand kSubcommands[] = {
    {"gen", vattn::cli::cmd_gen, "write a generated, valid case file (with the float64 oracle's outputs)"},
    {"info", vattn::cli::cmd_info, "one line per case: shapes, lengths, stored producers"},
    {"replay", vattn::cli::cmd_replay, "validate a case file, recompute, compare every stored output"},
    {"bench", vattn::cli::cmd_bench, "time a kernel revision against a roofline measured in the same run (GPU)"},
    {"bench-compare", vattn::cli::cmd_bench_compare,
     "set revisions against a base across bench reports (both orders, several runs)"},
    {"timeline", vattn::cli::cmd_timeline, "where one call's time goes inside the kernels (a timing-probe build, GPU)"},
    {"graph-check", vattn::cli::cmd_graph_check, "CUDA-graph safety checks of a kernel revision (GPU)"},
    {"fuzz", vattn::cli::cmd_fuzz, "overnight fuzz campaign: isolated workers, findings shrunk, resumable"},
    {"fuzz-merge", vattn::cli::cmd_fuzz_merge, "merge the campaign directories of several hosts (Slurm array tasks)"},
    {"report", vattn::cli::cmd_report, "HTML morning report of a campaign, optionally beside another"},
    {"promote", vattn::cli::cmd_promote, "copy a finding's shrunk case into the regression corpus ctest replays"},
    {"fuzz-worker", vattn::cli::cmd_fuzz_worker, nullptr},  // started by `vattn fuzz`; not listed
};

void usage(FILE* f) {
  std::fprintf(f,
               "vattn %s: correctness suite for the MLA verify-attention kernel\n\n"
               "usage: vattn <command> [options]   (vattn <command> --help for its options)\n\ncommands:\n",
               VATTN_VERSION);
  for (const auto& s : kSubcommands)
    if (s.summary != nullptr) std::fprintf(f, "  %-12s %s\n", s.name, s.summary);
  std::fprintf(f, "\n  vattn --help (or help, -h) shows this; vattn --version prints the version.\n");
  std::fprintf(f, "\n%s", vattn::cli::kExitCodesHelp);
}

}  // namespace

int main(int argc, char** argv) {
  // A write past `ulimit -f` raises SIGXFSZ, which ends the process unless ignored: ignored, the
  // write fails with EFBIG and is reported as any full disk is (the file named, exit 2). Workers
  // started by `vattn fuzz` inherit this.
  std::signal(SIGXFSZ, SIG_IGN);
  // Rows and progress lines reach a pipe (a CI log, `| tee`) as they are printed, not when a
  // buffer fills or the command ends.
  std::setvbuf(stdout, nullptr, _IOLBF, BUFSIZ);
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "help")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? vattn::cli::kExitBadInput : vattn::cli::kExitOk;
  }
  if (!std::strcmp(argv[1], "--version")) {
    std::printf("vattn %s\n", VATTN_VERSION);
    return 0;
  }
  // A file-size limit (ulimit -f) would kill the process at the write that passes it (SIGXFSZ's
  // default): ignored, that write fails with EFBIG like one on a full disk, and the command says
  // which file could not be written (a fuzz campaign stops with exit 2 rather than lose evidence).
  // Ignored signals stay ignored across exec: the fuzz workers inherit it.
  std::signal(SIGXFSZ, SIG_IGN);
  for (const auto& s : kSubcommands) {
    if (std::strcmp(argv[1], s.name) == 0) {
      try {
        vattn::set_read_watchdog_label(std::string("vattn ") + s.name);
        const int code = s.run(argc - 1, argv + 1);
        // What a script reads must have arrived: a write error on stdout (a full disk, a closed
        // pipe) makes the run unusable, whatever the command found.
        if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
          std::fprintf(stderr, "vattn %s: cannot write to standard output: %s\n", s.name, std::strerror(errno));
          return vattn::cli::kExitBadInput;
        }
        return code;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "vattn %s: error: %s\n", s.name, e.what());
        return vattn::cli::kExitBadInput;
      }
    }
  }
  std::fprintf(stderr, "vattn: unknown command '%s'\n\n", argv[1]);
  usage(stderr);
  return vattn::cli::kExitBadInput;
}
