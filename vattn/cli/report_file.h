// SPDX-License-Identifier: Apache-2.0
// Report files (--json OUT): checked before any work, written whole at the end.
#pragma once

#include <string>
#include <vector>

namespace vattn::cli {

// Why a report cannot be written to `path`, or "" when it can: it names one of the `inputs` (a
// captured dump must never be overwritten by its own report), or write_target_problem says why.
// Creates nothing.
std::string report_path_problem(const std::string& path, const std::vector<std::string>& inputs = {});

// Writes `text` to `path` (through a link, to its target) via a temporary file in the same folder
// and a rename, so a failed write leaves any earlier report intact. Returns "" or the reason (with the system's message).
std::string write_report(const std::string& path, const std::string& text);

// `--json -`: while active, file descriptor 1 is a copy of stderr, so everything the command
// prints goes there, and the real stdout is kept for the report alone (a pipe into jq gets JSON
// and nothing else). The destructor puts stdout back.
class StdoutForReport {
 public:
  explicit StdoutForReport(bool active);
  ~StdoutForReport();
  StdoutForReport(const StdoutForReport&) = delete;
  StdoutForReport& operator=(const StdoutForReport&) = delete;
  bool active() const { return saved_ >= 0; }
  // Writes `text` to the real stdout; false on a write error (a full disk, a closed pipe).
  bool write(const std::string& text);

 private:
  int saved_ = -1;
};

}  // namespace vattn::cli
