// SPDX-License-Identifier: Apache-2.0
// A campaign's run options: what is not its case stream but says how it runs (workers, threads,
// cases in flight, deadlines, shrink limits, when to stop). Each run line of the journal records
// the ones that run used, and `--resume` takes the latest again unless one is given on its command
// line, which is then said ("--workers 4: the campaign's last run used 2") and recorded for the
// runs after it. Values read back are checked as the command line checks them (the limits below,
// which cmd_fuzz.cpp uses too); a bad one is an error naming the journal's line and the field.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vattn/fuzz/campaign/supervisor.h"
#include "vattn/fuzz/protocol/protocol.h"

namespace vattn::fuzz {

namespace run_limits {
constexpr int64_t kMaxCases = int64_t{1} << 40;
constexpr int kMaxWorkers = 256;
constexpr int kMaxThreads = 1024;
constexpr int kMaxWindow = 100000;
constexpr int kMaxShrinkRuns = 1000000;
constexpr int kMaxStopAfterFindings = 1000000;
constexpr double kMaxSeconds = 1e7;  // a deadline or a shrink time limit (about four months)
}  // namespace run_limits

// The run options of `o`, as a run line records them.
json run_options_json(const CampaignOptions& o);

// Sets each option of `recorded` that the command line did not give (o.given) in `o`; returns a
// line for each given one that differs from the record. InputError naming `where` (FILE:LINE) and
// the field (options.workers, ...) for a recorded value the command line would refuse.
std::vector<std::string> reuse_run_options(const json& recorded, const std::string& where, CampaignOptions& o);

}  // namespace vattn::fuzz
