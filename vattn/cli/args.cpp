// SPDX-License-Identifier: Apache-2.0
#include "vattn/cli/args.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include <CLI/CLI.hpp>

#include "vattn/case/memory_limit.h"
#include "vattn/casefile/case_file.h"
#include "vattn/casefile/read_watchdog.h"
#include "vattn/cli/commands.h"
#include "vattn/oracle/cpu_oracle.h"
#include "vattn/recipe/vocab.h"

namespace vattn::cli {

Args::Args(std::string command, std::string synopsis, std::string description)
    : command_(std::move(command)), synopsis_(std::move(synopsis)), description_(std::move(description)) {
  flag("help", "show this help and exit");
}

Args& Args::option(const std::string& name, const std::string& metavar, const std::string& help,
                   const std::string& default_text, char alias) {
  specs_.push_back({name, metavar, help, default_text, alias, true});
  return *this;
}

Args& Args::flag(const std::string& name, const std::string& help) {
  specs_.push_back({name, "", help, "", 0, false});
  return *this;
}

Args& Args::positionals(const std::string& metavar, const std::string& help, size_t min_count) {
  pos_metavar_ = metavar;
  pos_help_ = help;
  pos_min_ = min_count;
  pos_allowed_ = true;
  return *this;
}

Args& Args::example(const std::string& line, const std::string& what) {
  examples_.emplace_back(line, what);
  return *this;
}

Args& Args::note(const std::string& text) {
  notes_.push_back(text);
  return *this;
}

const Args::Spec* Args::find(const std::string& name) const {
  for (const auto& s : specs_) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

const Args::Spec* Args::find_alias(char alias) const {
  for (const auto& s : specs_) {
    if (alias != 0 && s.alias == alias) return &s;
  }
  return nullptr;
}

bool Args::parse(int argc, char** argv) {
  // --help wins wherever it stands before "--": `vattn gen -o --help` prints the help, not a
  // file named --help or a complaint about -o.
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") break;
    if (a == "--help" || a == "-h") {
      std::fputs(help_text().c_str(), stdout);
      return false;
    }
  }
  // CLI11 matches the options and collects their values. Its command line is wider than vattn's,
  // so one pass over the raw arguments first refuses what vattn does not take and CLI11 would:
  // "--out=" (CLI11 takes the next argument as the value), a value on a flag ("--quiet=true"),
  // and a one-letter option with its value attached ("-oFILE", "-o=FILE"); and it names an
  // option left without its value at the end of the line. The pass reads the line as CLI11 does:
  // an option of one value takes the next argument, whatever it is, and "--" ends the options.
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") break;
    if (a.size() < 2 || a[0] != '-') continue;  // a positional, or "-"
    if (a[1] != '-' && a.size() > 2) throw UsageError("unknown option '" + a + "'");
    const size_t eq = a[1] == '-' ? a.find('=') : std::string::npos;
    const Spec* s =
        a[1] == '-' ? find(a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2)) : find_alias(a[1]);
    if (s == nullptr) continue;  // unknown: named after CLI11 has run
    if (!s->takes_value) {
      if (eq != std::string::npos) throw UsageError("option '--" + s->name + "' takes no value");
    } else if (eq == std::string::npos) {
      if (++i == argc) throw UsageError("option '" + a + "' needs a value (" + s->metavar + ")");  // skips the value
    } else if (eq + 1 == a.size()) {
      throw UsageError("option '--" + s->name + "' has an empty value (" + s->metavar + ")");
    }
  }
  // After it: an option given twice (CLI11 would keep every value), an empty value (taken as "not
  // given" it would silently pick a default: the built-in kernel, every case, ...), an unknown
  // option and a positional where none is taken, each named. CLI11 is given no positional
  // option: it would split "[a,b]" into two; the arguments it does not match come back whole.
  // The help page stays vattn's own (help_text): notes, examples and exit codes in the one
  // layout every command shares.
  CLI::App app(description_, "vattn " + command_);
  app.set_help_flag();
  app.allow_extras();
  std::vector<std::pair<const Spec*, CLI::Option*>> opts;
  for (const auto& s : specs_) {
    if (s.name == "help") continue;
    const std::string names = (s.alias ? std::string("-") + s.alias + "," : std::string()) + "--" + s.name;
    CLI::Option* o = s.takes_value ? app.add_option(names, s.help)
                                         ->type_name(s.metavar)
                                         ->expected(1)
                                         ->allow_extra_args(false)
                                         ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
                                   : app.add_flag(names, s.help);
    opts.emplace_back(&s, o);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    throw UsageError(e.what());
  }
  bool options_done = false;
  for (const std::string& extra : app.remaining()) {
    if (extra == "--" && !options_done) {
      options_done = true;
      continue;
    }
    if (!options_done && extra.size() > 1 && extra[0] == '-')
      throw UsageError("unknown option '" + extra.substr(0, extra.find('=')) + "'");
    if (!pos_allowed_) throw UsageError("unexpected argument '" + extra + "'");
    positional_.push_back(extra);
  }
  for (const auto& so : opts) {
    const Spec& s = *so.first;
    const CLI::Option* o = so.second;
    if (o->count() == 0) continue;
    const std::vector<std::string>& got = o->results();
    if (o->count() > 1 || got.size() > 1) throw UsageError("option '--" + s.name + "' given twice");
    if (!s.takes_value) {
      values_[s.name] = "";
      continue;
    }
    if (got.empty() || got.front().empty())
      throw UsageError("option '--" + s.name + "' has an empty value (" + s.metavar + ")");
    values_[s.name] = got.front();
  }
  if (positional_.size() < pos_min_) {
    throw UsageError("expected at least " + std::to_string(pos_min_) + " " + pos_metavar_ + " argument" +
                     (pos_min_ == 1 ? "" : "s"));
  }
  return true;
}

bool Args::has(const std::string& name) const { return values_.count(name) != 0; }

std::string Args::get(const std::string& name, const std::string& fallback) const {
  const auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

long long Args::get_int(const std::string& name, long long fallback, long long lo, long long hi) const {
  if (!has(name)) return fallback;
  const std::string text = get(name);
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE)
    throw UsageError("--" + name + ": '" + text + "' is not an integer");
  if (v < lo || v > hi) {
    throw UsageError("--" + name + ": " + text + " is outside [" + std::to_string(lo) + ", " + std::to_string(hi) +
                     "]");
  }
  return v;
}

double Args::get_double(const std::string& name, double fallback) const {
  if (!has(name)) return fallback;
  const std::string text = get(name);
  double v = 0;
  if (!vocab::parse_plain_decimal(text, &v))
    throw UsageError("--" + name + ": '" + text + "' is not a finite decimal number");
  return v;
}

std::string Args::help_text() const {
  std::ostringstream os;
  os << "usage: vattn " << command_ << " " << synopsis_ << "\n\n" << description_ << "\n";
  if (pos_allowed_) os << "\n  " << pos_metavar_ << "\n      " << pos_help_ << "\n";
  os << "\noptions:\n";
  for (const auto& s : specs_) {
    std::string left = "  ";
    if (s.alias) left += std::string("-") + s.alias + ", ";
    left += "--" + s.name;
    if (s.takes_value) left += " " + s.metavar;
    os << left << "\n      " << s.help;
    if (!s.default_text.empty()) os << " (default: " << s.default_text << ")";
    os << "\n";
  }
  for (const auto& n : notes_) os << "\n" << n << "\n";
  if (!examples_.empty()) {
    os << "\nexamples:\n";
    for (const auto& e : examples_) os << "  " << e.first << "\n      " << e.second << "\n";
  }
  os << "\n" << kExitCodesHelp;
  return os.str();
}

int Args::usage_error(const std::string& why) const {
  std::fprintf(stderr, "vattn %s: %s\n(see vattn %s --help)\n", command_.c_str(), why.c_str(), command_.c_str());
  return kExitBadInput;
}

int Args::refuse_without_cuda(int argc, char** argv, const std::string& not_done) {
  try {
    if (!parse(argc, argv)) return kExitOk;
  } catch (const UsageError& e) {
    return usage_error(e.what());
  }
  std::fprintf(stderr, "vattn %s: %s; %s (%s needs a CUDA build and a CUDA device)\n", command_.c_str(), kNoCuda,
               not_done.c_str(), command_.c_str());
  return kExitBadInput;
}

Args& add_memory_option(Args& a) {
  return a.option("max-memory", "GIB",
                  "refuse (exit 2) a case whose shapes need more memory than this to be read or generated, and "
                  "checked",
                  "half the RAM");
}

void apply_memory_option(const Args& a) {
  if (!a.has("max-memory")) return;
  const double gib = a.get_double("max-memory", 0);
  if (!(gib > 0) || gib > 1e6)
    throw UsageError("--max-memory must be a number of GiB > 0 (got '" + a.get("max-memory") + "')");
  set_case_memory_limit(static_cast<uint64_t>(gib * static_cast<double>(1ull << 30)));
}

Args& add_case_reading_options(Args& a) { return add_memory_option(a).note(kReadTimeoutHelp); }

void apply_case_reading_options(const Args& a) {
  try {
    (void)read_timeout_from_environment();
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  apply_memory_option(a);
}

Args& add_oracle_work_option(Args& a) {
  return a.option("max-oracle-work", "N",
                  "refuse (exit 2) a case that needs more CPU-oracle work than this, in query rows x keys x heads "
                  "(sum of T_b*H*(P_b+T_b); about 0.3 us of one core each)",
                  std::to_string(kDefaultOracleWorkLimit));
}

void apply_oracle_work_option(const Args& a) {
  if (!a.has("max-oracle-work")) return;
  const double n = a.get_double("max-oracle-work", 0);
  if (!(n >= 1) || n > 9e18 || n != std::floor(n))
    throw UsageError("--max-oracle-work must be a whole number >= 1, e.g. 4000000000 or 4e9 (got '" +
                     a.get("max-oracle-work") + "')");
  set_oracle_work_limit(static_cast<int64_t>(n));
}

std::vector<int> parse_int_list(const std::string& option, const std::string& text, int lo, int hi) {
  std::vector<int> out;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || errno == ERANGE) {
      throw UsageError("--" + option + ": '" + item + "' in '" + text + "' is not an integer");
    }
    if (v < lo || v > hi) {
      throw UsageError("--" + option + ": " + item + " is outside [" + std::to_string(lo) + ", " + std::to_string(hi) +
                       "]");
    }
    out.push_back(static_cast<int>(v));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace vattn::cli
