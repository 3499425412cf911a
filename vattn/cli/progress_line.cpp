// SPDX-License-Identifier: Apache-2.0
#include "vattn/cli/progress_line.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "vattn/recipe/vocab.h"

namespace vattn::cli {

namespace {

double seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

// "1h02m03s", "2m03s", "3s": how long the command has run, in a logged line.
std::string elapsed_text(double s) {
  const auto total = static_cast<long long>(s);
  char buf[32];
  if (total >= 3600)
    std::snprintf(buf, sizeof buf, "%lldh%02lldm%02llds", total / 3600, total / 60 % 60, total % 60);
  else if (total >= 60)
    std::snprintf(buf, sizeof buf, "%lldm%02llds", total / 60, total % 60);
  else
    std::snprintf(buf, sizeof buf, "%llds", total);
  return buf;
}

}  // namespace

double progress_interval_from_environment() {
  const char* text = std::getenv(kProgressIntervalVariable);
  if (text == nullptr || *text == '\0') return kDefaultProgressInterval;
  double v = 0;
  if (!vocab::parse_plain_decimal(text, &v) || !(v > 0))
    throw std::invalid_argument(std::string(kProgressIntervalVariable) + "='" + text +
                                "': expected a number of seconds > 0 (how often a log shows progress)");
  return v;
}

ProgressLine::ProgressLine(bool enabled, std::string label)
    : mode_(!enabled                       ? Mode::kOff
            : ::isatty(STDERR_FILENO) != 0 ? Mode::kTerminal
                                           : Mode::kLog),
      label_(std::move(label)), start_(Clock::now()), step_start_(start_) {
  if (mode_ != Mode::kLog) return;
  try {
    interval_s_ = progress_interval_from_environment();
  } catch (const std::invalid_argument&) {
    interval_s_ = kDefaultProgressInterval;  // the command refused it already, or never asked
  }
}

ProgressLine::~ProgressLine() { clear(); }

void ProgressLine::show(const std::string& text, bool force) {
  const auto now = Clock::now();
  if (mode_ == Mode::kLog) {
    if (force) {
      step_start_ = now;
      return;
    }
    // The step must have run an interval, and the last logged line be an interval old.
    if (seconds(now - step_start_) < interval_s_ || (shown_ && seconds(now - last_) < interval_s_)) return;
    last_ = now;
    shown_ = true;
    std::fflush(stdout);
    std::fprintf(stderr, "%s: %.*s [%s]\n", label_.c_str(), 300, text.c_str(),
                 elapsed_text(seconds(now - start_)).c_str());
    std::fflush(stderr);
    return;
  }
  if (mode_ != Mode::kTerminal) return;
  if (!force && shown_ && now - last_ < std::chrono::milliseconds(200)) return;
  last_ = now;
  std::fflush(stdout);
  std::fprintf(stderr, "\r\033[K%.*s", 160, text.c_str());  // one terminal line, even for long names
  std::fflush(stderr);
  shown_ = true;
}

void ProgressLine::clear() {
  if (mode_ != Mode::kTerminal || !shown_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  shown_ = false;
}

}  // namespace vattn::cli
