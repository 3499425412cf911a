// SPDX-License-Identifier: Apache-2.0
#include "vattn/cli/progress_line.h"

#include <unistd.h>

#include <cstdio>

namespace vattn::cli {

ProgressLine::ProgressLine(bool enabled) : enabled_(enabled && ::isatty(STDERR_FILENO) != 0) {}

ProgressLine::~ProgressLine() { clear(); }

void ProgressLine::show(const std::string& text, bool force) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (!force && shown_ && now - last_ < std::chrono::milliseconds(200)) return;
  last_ = now;
  std::fflush(stdout);
  std::fprintf(stderr, "\r\033[K%.*s", 160, text.c_str());  // one terminal line, even for long names
  std::fflush(stderr);
  shown_ = true;
}

void ProgressLine::clear() {
  if (!enabled_ || !shown_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  shown_ = false;
}

}  // namespace vattn::cli
