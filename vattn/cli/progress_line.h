// SPDX-License-Identifier: Apache-2.0
// A progress line on a terminal (stderr): one line, rewritten in place at most five times a
// second, cleared before anything else is printed. Off when stderr is not a terminal or with
// --quiet, so logs and pipes get no control characters.
#pragma once

#include <chrono>
#include <string>

namespace vattn::cli {

class ProgressLine {
 public:
  explicit ProgressLine(bool enabled);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  bool enabled() const { return enabled_; }
  // Shows `text` (already printable), unless the last update was under 0.2 s ago and not forced.
  void show(const std::string& text, bool force = false);
  // Removes the line (call before printing a row to stdout or stderr).
  void clear();

 private:
  bool enabled_, shown_ = false;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace vattn::cli
