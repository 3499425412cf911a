// SPDX-License-Identifier: Apache-2.0
#include "vattn/cli/report_file.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <system_error>

#include "vattn/case/fd_write.h"
#include "vattn/casefile/write_target.h"

namespace vattn::cli {

namespace fs = std::filesystem;

std::string report_path_problem(const std::string& path, const std::vector<std::string>& inputs) {
  std::error_code ec;
  for (const auto& in : inputs)
    if (fs::equivalent(path, in, ec)) return "it is the input file " + in + ", which the report would overwrite";
  return write_target_problem(path);
}

std::string write_report(const std::string& path, const std::string& text) {
  // A report named through a link replaces the link's target (write_target.h); the file itself is
  // then written like every other file of the suite.
  return replace_file(write_target(path), text, Durability::kBuffered);
}

StdoutForReport::StdoutForReport(bool active) {
  if (!active) return;
  std::fflush(stdout);
  saved_ = ::dup(STDOUT_FILENO);
  if (saved_ >= 0) ::dup2(STDERR_FILENO, STDOUT_FILENO);
}

StdoutForReport::~StdoutForReport() {
  if (saved_ < 0) return;
  std::fflush(stdout);
  ::dup2(saved_, STDOUT_FILENO);
  ::close(saved_);
}

bool StdoutForReport::write(const std::string& text) {
  std::fflush(stdout);
  return write_all(saved_, text.data(), text.size());
}

}  // namespace vattn::cli
