// SPDX-License-Identifier: Apache-2.0
// Subcommands of the `vattn` binary. Each returns the process exit code:
// 0 success, 1 a check failed (out of tolerance, property violated), 2 unusable input or usage.
#pragma once

#include <string>

namespace vattn::cli {

constexpr int kExitOk = 0;
constexpr int kExitCheckFailed = 1;
constexpr int kExitBadInput = 2;
// The exit-code paragraph of every --help (and of `vattn` alone).
constexpr const char* kExitCodesHelp =
    "exit codes: 0 ok, 1 a check failed, 2 unusable input, usage, or no CUDA device where one is needed\n"
    "(2 takes precedence over 1: a run with an unusable input is incomplete)\n";

// This vattn was configured with VATTN_CUDA=OFF (VATTN_HAVE_CUDA 0): bench, timeline, graph-check,
// replay --kernel/--oracle gpu and GPU fuzz targets say so (kNoCuda) and exit 2.
#ifndef VATTN_HAVE_CUDA
#define VATTN_HAVE_CUDA 1
#endif
constexpr const char* kNoCuda = "this vattn was built without CUDA (VATTN_CUDA=OFF)";

int cmd_gen(int argc, char** argv);
int cmd_report(int argc, char** argv);
int cmd_fuzz_merge(int argc, char** argv);
int cmd_promote(int argc, char** argv);
int cmd_info(int argc, char** argv);
int cmd_replay(int argc, char** argv);
int cmd_bench(int argc, char** argv);
int cmd_bench_compare(int argc, char** argv);
int cmd_timeline(int argc, char** argv);
int cmd_graph_check(int argc, char** argv);
int cmd_fuzz(int argc, char** argv);
int cmd_fuzz_worker(int argc, char** argv);  // internal: the worker process `vattn fuzz` starts

// The path of the running vattn binary (/proc/self/exe); throws std::runtime_error.
std::string self_exe();

}  // namespace vattn::cli
