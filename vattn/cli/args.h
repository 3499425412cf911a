// SPDX-License-Identifier: Apache-2.0
// The subcommands' options, declared once: long options (--name VALUE or --name=VALUE), optional
// one-letter aliases, flags, positionals, and a generated --help that lists every option with its
// default, notes, examples and the exit codes. CLI11 parses the command line (args.cpp); the rules
// vattn adds to it (no option twice, no empty value, no value on a flag or attached to a one-letter
// option, a positional always one argument) are checked there too. Errors are UsageError (exit 2).
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace vattn::cli {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Args {
 public:
  Args(std::string command, std::string synopsis, std::string description);

  // An option taking a value. default_text is shown in --help ("" = no default).
  Args& option(const std::string& name, const std::string& metavar, const std::string& help,
               const std::string& default_text = "", char alias = 0);
  Args& flag(const std::string& name, const std::string& help);
  // Positional arguments: at least min_count of them.
  Args& positionals(const std::string& metavar, const std::string& help, size_t min_count);
  Args& example(const std::string& line, const std::string& what);
  Args& note(const std::string& text);

  // Returns false after printing --help to stdout (the command should exit 0).
  bool parse(int argc, char** argv);

  bool has(const std::string& name) const;  // option given, or flag set
  std::string get(const std::string& name, const std::string& fallback = "") const;
  // Integer value in [lo, hi]; UsageError naming the option otherwise.
  long long get_int(const std::string& name, long long fallback, long long lo, long long hi) const;
  double get_double(const std::string& name, double fallback) const;
  const std::vector<std::string>& positional() const { return positional_; }

  std::string help_text() const;
  const std::string& command() const { return command_; }

  // "vattn CMD: WHY" and "(see vattn CMD --help)" on stderr; returns the exit code for bad input.
  int usage_error(const std::string& why) const;
  // A command that needs CUDA, in a build without it: --help and usage errors as in any build,
  // then "vattn CMD: <built without CUDA>; NOT_DONE (CMD needs a CUDA build and a CUDA device)".
  // Returns the exit code (0 after --help, 2 otherwise).
  int refuse_without_cuda(int argc, char** argv, const std::string& not_done);

 private:
  struct Spec {
    std::string name, metavar, help, default_text;
    char alias = 0;
    bool takes_value = true;
  };
  const Spec* find(const std::string& name) const;
  const Spec* find_alias(char alias) const;  // nullptr for 0 or an unknown letter

  std::string command_, synopsis_, description_;
  std::vector<Spec> specs_;
  std::string pos_metavar_, pos_help_;
  size_t pos_min_ = 0;
  bool pos_allowed_ = false;
  std::vector<std::pair<std::string, std::string>> examples_;
  std::vector<std::string> notes_;
  std::map<std::string, std::string> values_;
  std::vector<std::string> positional_;
};

// --max-memory GIB: the memory one case may take (vattn/case/memory_limit.h), for the commands
// that read or generate cases (info, replay, gen). apply: after parse(), the value checked (a bad
// one is a UsageError) and the limit set.
Args& add_memory_option(Args& a);
void apply_memory_option(const Args& a);
// The case reader's limits, for the commands that read case files (info, replay): --max-memory
// and the note on VATTN_READ_TIMEOUT (vattn/casefile/read_watchdog.h).
Args& add_case_reading_options(Args& a);
// After parse(): VATTN_READ_TIMEOUT and --max-memory checked (a bad value is a UsageError), and
// the memory limit set.
void apply_case_reading_options(const Args& a);
// --max-oracle-work N: the most work the CPU oracles take on (vattn/oracle/cpu_oracle.h), for the
// commands that run them (replay, gen); apply as above.
Args& add_oracle_work_option(Args& a);
void apply_oracle_work_option(const Args& a);

// Comma-separated non-negative integers ("4099,0,17"); UsageError naming the option.
std::vector<int> parse_int_list(const std::string& option, const std::string& text, int lo, int hi);

}  // namespace vattn::cli
