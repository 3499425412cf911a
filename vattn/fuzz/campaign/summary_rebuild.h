// SPDX-License-Identifier: Apache-2.0
// The journal is the campaign's record; summary.json is what a clean stop made of it. A run
// killed after that stop (say a part resumed, then killed) leaves the journal longer than its
// summary knows, so readers never take a summary the journal has outgrown: each summary records
// the journal's length it was written at, and `vattn fuzz-merge` and `vattn report` rebuild a
// stale or missing one from the journal and the findings' finding.json (the same schema; only
// what the supervisor alone knew is left out: its workers' statistics, the stream spans, the
// ledger's entries).
#pragma once

#include <string>

#include "vattn/fuzz/campaign/journal.h"
#include "vattn/fuzz/protocol/protocol.h"

namespace vattn::fuzz {

// Whether `summary` was written when the journal at `journal_path` was as long as it is now.
bool summary_is_current(const json& summary, const std::string& journal_path);

// The summary (schema vattn-fuzz-summary v1) the campaign in DIR's journal gives, with
// "rebuilt_from_journal": true. InputError naming the file and field when the journal, mix.json
// or a finding's folder cannot be read.
json summary_from_journal(const std::string& dir, const JournalState& st);

// What a reader takes as DIR's summary: summary.json when it is current, else the one the journal
// gives; `note` says why it was rebuilt ("" when it was not). A directory without a journal (a
// merge's) gives its summary.json as it is. `journal` receives the journal read, when there is
// one. InputError when DIR has neither.
json campaign_summary(const std::string& dir, std::string& note, JournalState* journal = nullptr);

}  // namespace vattn::fuzz
