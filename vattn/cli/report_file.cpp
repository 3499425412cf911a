// SPDX-License-Identifier: Apache-2.0
#include "vattn/cli/report_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "vattn/case/fd_write.h"
#include "vattn/casefile/write_target.h"

namespace vattn::cli {

namespace fs = std::filesystem;

namespace {

std::string system_reason() { return std::strerror(errno); }

}  // namespace

std::string report_path_problem(const std::string& path, const std::vector<std::string>& inputs) {
  std::error_code ec;
  for (const auto& in : inputs)
    if (fs::equivalent(path, in, ec)) return "it is the input file " + in + ", which the report would overwrite";
  return write_target_problem(path);
}

std::string write_report(const std::string& path, const std::string& text) {
  const std::string target = write_target(path);
  const std::string tmp = folder_of(target) + "/." + fs::path(target).filename().string() + ".tmp" +
                          std::to_string(static_cast<long>(::getpid()));
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return "cannot create " + tmp + ": " + system_reason();
  const bool wrote = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const std::string write_error = wrote ? "" : system_reason();
  if (std::fclose(f) != 0 || !wrote) {
    const std::string why = wrote ? system_reason() : write_error;
    std::remove(tmp.c_str());
    return "writing " + tmp + " failed: " + why;
  }
  if (std::rename(tmp.c_str(), target.c_str()) != 0) {
    const std::string why = system_reason();
    std::remove(tmp.c_str());
    return "cannot move the report into place: " + why;
  }
  return "";
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
