// Subcommands of the `vattn` binary. Each returns the process exit code:
// 0 success, 1 a check failed (out of tolerance, property violated), 2 unusable input or usage.
#pragma once

namespace vattn::cli {

constexpr int kExitOk = 0;
constexpr int kExitCheckFailed = 1;
constexpr int kExitBadInput = 2;

int cmd_gen(int argc, char** argv);
int cmd_info(int argc, char** argv);
int cmd_replay(int argc, char** argv);
int cmd_bench(int argc, char** argv);
int cmd_graph_check(int argc, char** argv);

}  // namespace vattn::cli
