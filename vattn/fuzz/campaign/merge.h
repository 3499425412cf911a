// SPDX-License-Identifier: Apache-2.0
// `vattn fuzz-merge`: several campaign directories (the tasks of a Slurm array, each one shard of
// one case stream, or campaigns of one kernel run on different hosts) become one summary.json of
// the same schema (vattn-fuzz-summary v1), with totals, verdicts, coverage and ledger counts
// summed and findings merged by signature (counts summed, every part's evidence listed).
#pragma once

#include <string>
#include <vector>

#include "vattn/fuzz/protocol/protocol.h"

namespace vattn::fuzz {

// Reads every part's journal and its summary (rebuilt from the journal when the journal has
// outgrown it or there is none: summary_rebuild.h) and merges them. Throws InputError naming the
// part and the field when a part is not a campaign or is still running, when a field read is not
// what it must be (counts are whole numbers >= 0, shards [I, N] with 0 <= I < N), when the parts
// fuzz different kernels or budgets, or when two parts of one seed ran the same case index.
json merge_campaigns(const std::vector<std::string>& part_dirs);

// Reads DIR/summary.json, checking its schema and version (InputError naming the file).
json read_summary(const std::string& dir);

}  // namespace vattn::fuzz
