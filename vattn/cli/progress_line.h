// SPDX-License-Identifier: Apache-2.0
// A progress line, for steps that may run long (the CPU oracle on a long context). On a terminal
// (stderr): one line, rewritten in place at most five times a second, cleared before anything
// else is printed. Off a terminal (a pipe, a CI log): plain lines, no control characters, only
// once a step has run for the log interval (VATTN_PROGRESS_INTERVAL seconds, default 10) and then
// at most that often: a log shows that a long step is alive and how far it got, and a quick run
// prints nothing. Off with --quiet.
#pragma once

#include <chrono>
#include <string>

namespace vattn::cli {

constexpr const char* kProgressIntervalVariable = "VATTN_PROGRESS_INTERVAL";
constexpr double kDefaultProgressInterval = 10;
// The variable's entry in the "environment:" paragraph of a command's --help.
constexpr const char* kProgressIntervalHelp =
    "  VATTN_PROGRESS_INTERVAL=SECONDS\n"
    "      when stderr is not a terminal (a pipe, a CI log), a step that runs longer than SECONDS\n"
    "      (default 10; the CPU oracle on a long context) prints a progress line, and one every\n"
    "      SECONDS after; on a terminal the progress line is rewritten in place";
// The log interval in seconds: VATTN_PROGRESS_INTERVAL (a number > 0), or the default when unset
// or empty. std::invalid_argument naming the variable for any other value (a command checks it
// with its options, so a bad value is a usage error).
double progress_interval_from_environment();

class ProgressLine {
 public:
  // `label` starts each logged line ("vattn replay").
  explicit ProgressLine(bool enabled, std::string label = "vattn");
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  bool enabled() const { return mode_ != Mode::kOff; }
  // Shows `text` (already printable). On a terminal: unless the last update was under 0.2 s ago
  // and not forced. In a log: `force` marks the start of a new step (nothing is printed then);
  // the text is printed once the step has run for the interval, and then once an interval.
  void show(const std::string& text, bool force = false);
  // Removes the line (call before printing a row to stdout or stderr); nothing to do in a log.
  void clear();

 private:
  enum class Mode { kOff, kTerminal, kLog };
  using Clock = std::chrono::steady_clock;
  Mode mode_;
  std::string label_;
  bool shown_ = false;
  double interval_s_ = kDefaultProgressInterval;
  Clock::time_point start_, last_{}, step_start_;
};

}  // namespace vattn::cli
