// SPDX-License-Identifier: Apache-2.0
// Runs the morning report generator (vattn/fuzz/report/morning_report.py: Python and matplotlib, the
// plotting library a person would reach for; C++ has no well-kept equivalent) for `vattn report`
// and at the end of `vattn fuzz` and `vattn fuzz-merge`.
#pragma once

#include <string>
#include <vector>

namespace vattn::fuzz {

// The generator: $VATTN_REPORT_SCRIPT when set, else <dir of vattn>/../share/vattn/morning_report.py
// (an installed vattn), else the source tree's copy (a build tree). "" when none exists.
std::string report_script(const std::string& self_exe);

struct ReportRun {
  int code = 0;        // the generator's exit code; 127: python3 or the script is missing
  std::string output;  // what it printed (stdout and stderr)
};

// PYTHON SCRIPT ARGS... (PYTHON: $VATTN_PYTHON, else /usr/bin/python3, else python3); waits for it.
ReportRun run_report(const std::string& self_exe, const std::vector<std::string>& args);

// For the end of a campaign or a merge: writes DIR/report.html and returns the line to print
// ("report: DIR/report.html", or why there is none and how to make it).
std::string write_campaign_report(const std::string& self_exe, const std::string& dir);

}  // namespace vattn::fuzz
