// SPDX-License-Identifier: Apache-2.0
// CUDA-graph safety checks of a kernel revision (the run() rules of kernels/vattn_abi.h and
// docs/verify-attention.md, "CUDA-graph rules"): capture in Global mode, audit the node
// types, replay one graph over changing device-side metadata and compare bitwise with eager
// runs, two graphs on two streams, no device allocation, no hidden synchronisation, and the
// plan limits enforced on the host and on the device.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "vattn/gpu/graph_slot.h"
#include "vattn/gpu/revision.h"

namespace vattn {

struct GraphCheckOptions {
  int replays = 40;  // check "replay"
  uint64_t seed = 1;
  int two_graph_rounds = 6;    // check "two-graphs"
  int memory_iterations = 16;  // eager runs and replays between the two cudaMemGetInfo reads
  unsigned gate_us = 200000;   // how long the gate kernel holds the stream
  double max_run_ms = 20.0;    // run() must return within this while the gate holds the stream
  // Slot shape, clamped to the revision's capabilities.
  int requests = 4;
  int heads = 8;
  int max_drafts = 37;    // limits.max_drafts_per_request (two mask words per row)
  int total_drafts = 64;  // limits.max_total_drafts
  int max_splits = 16;
  int max_prefix = 4099;
  std::FILE* progress = nullptr;  // one line per check as it starts, when set
};

struct CheckResult {
  std::string name;  // capture, node-audit, replay, two-graphs, memory, non-blocking, limits-host, limits-device
  bool pass = false;
  std::string detail;
};

// The slot shape the checks use for this revision.
SlotShape graph_check_shape(const Revision& rev, const GraphCheckOptions& opt);

// Runs every check in order; a check that cannot run (no graph) fails and says why. Never
// throws for a revision's misbehaviour: CUDA errors become failed checks.
std::vector<CheckResult> run_graph_checks(const Revision& rev, const GraphCheckOptions& opt);

}  // namespace vattn
