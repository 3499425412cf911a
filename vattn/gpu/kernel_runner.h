// SPDX-License-Identifier: Apache-2.0
// The run step of the testbed (vattn/testbed/testbed.h, which owns initialize, verify and the
// evidence): one kernel revision planned for a set of limits. Owns the workspace, poisons
// outputs and workspace before every run, and after it reads the device error word and checks
// every guard band; judging the result is the testbed's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vattn/gpu/device_case.h"
#include "vattn/gpu/revision.h"

namespace vattn {

struct RunResult {
  vattn_status status = VATTN_OK;
  uint32_t device_error = 0;    // VATTN_DEVERR_* bits from the workspace
  uint32_t splits_used = 0;     // workspace word 1: largest split count used
  std::vector<float> out, lse;  // widened outputs
  std::vector<std::string> guard_violations;
  bool ok() const { return status == VATTN_OK && device_error == 0 && guard_violations.empty(); }
  std::string problem(const vattn_revision* api) const;  // "" when ok()
};

// Limits that just fit one case (tests), with room for max_splits.
vattn_limits limits_for(const Case& c, int max_splits);

class KernelRunner {
 public:
  KernelRunner(Revision rev, const vattn_limits& limits);
  const Revision& revision() const { return rev_; }
  const vattn_limits& limits() const { return limits_; }
  DeviceBuffer& workspace() { return ws_; }

  // Enqueue only: what a serving step (or a graph capture) does.
  vattn_status enqueue(const DeviceCase& dc, cudaStream_t stream);
  // Poison, set the split count, run, synchronise, collect everything.
  // Outputs are filled with `output_fill` bytes first (0xFF: NaN as bf16 and fp32, so what a
  // kernel leaves unwritten shows; a finite fill where it must write NaN).
  RunResult run(DeviceCase& dc, int forced_splits, cudaStream_t stream = nullptr, unsigned char output_fill = 0xFF);
  uint32_t read_device_error() const;

 private:
  Revision rev_;
  vattn_limits limits_;
  DeviceBuffer ws_;
};

}  // namespace vattn
