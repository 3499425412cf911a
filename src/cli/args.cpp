// SPDX-License-Identifier: Apache-2.0
#include "args.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "commands.h"
#include "gen_kinds.h"
#include "read_watchdog.h"

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

bool Args::parse(int argc, char** argv) {
  bool options_done = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (options_done || a.empty() || a[0] != '-' || a == "-") {
      if (!pos_allowed_) throw UsageError("unexpected argument '" + a + "'");
      positional_.push_back(a);
      continue;
    }
    if (a == "--") {
      options_done = true;
      continue;
    }
    std::string name, value;
    bool has_inline_value = false;
    const Spec* spec = nullptr;
    if (a.size() == 2 && a[0] == '-' && a[1] != '-') {
      for (const auto& s : specs_) {
        if (s.alias == a[1]) spec = &s;
      }
      if (a == "-h") spec = find("help");
      if (!spec) throw UsageError("unknown option '" + a + "'");
      name = spec->name;
    } else if (a.rfind("--", 0) == 0) {
      const size_t eq = a.find('=');
      name = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      if (eq != std::string::npos) {
        value = a.substr(eq + 1);
        has_inline_value = true;
      }
      spec = find(name);
      if (!spec) throw UsageError("unknown option '--" + name + "'");
    } else {
      throw UsageError("unknown option '" + a + "'");
    }
    if (name == "help") {
      std::fputs(help_text().c_str(), stdout);
      return false;
    }
    if (spec->takes_value) {
      if (!has_inline_value) {
        if (i + 1 >= argc) throw UsageError("option '" + a + "' needs a value (" + spec->metavar + ")");
        value = argv[++i];
      }
      // An empty value is never meaningful here; taken as "not given" it would silently pick a
      // default (the built-in kernel, every case, ...).
      if (value.empty()) {
        throw UsageError("option '" + (has_inline_value ? "--" + name : a) + "' has an empty value (" + spec->metavar + ")");
      }
    } else if (has_inline_value) {
      throw UsageError("option '--" + name + "' takes no value");
    }
    if (values_.count(name)) throw UsageError("option '--" + name + "' given twice");
    values_[name] = value;
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
  if (text.empty() || *end != '\0' || errno == ERANGE) throw UsageError("--" + name + ": '" + text + "' is not an integer");
  if (v < lo || v > hi) {
    throw UsageError("--" + name + ": " + text + " is outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return v;
}

double Args::get_double(const std::string& name, double fallback) const {
  if (!has(name)) return fallback;
  const std::string text = get(name);
  double v = 0;
  if (!gen::parse_plain_decimal(text, &v)) throw UsageError("--" + name + ": '" + text + "' is not a finite decimal number");
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

void check_read_timeout() {
  try {
    (void)read_timeout_from_environment();
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
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
      throw UsageError("--" + option + ": " + item + " is outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
    out.push_back(static_cast<int>(v));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace vattn::cli
