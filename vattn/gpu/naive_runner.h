// SPDX-License-Identifier: Apache-2.0
// Runs the naive GPU oracle on a DeviceCase and returns float32 out/lse.
#pragma once

#include <vector>

#include "vattn/gpu/device_case.h"
#include "vattn/oracle/cpu_oracle.h"

namespace vattn {

void run_naive_gpu_oracle(const DeviceCase& dc, std::vector<float>& out, std::vector<float>& lse);

// The naive GPU oracle as a Reference (out, lse, abs_pv, lse_scale widened to double), for
// long contexts where the CPU oracle is too slow.
Reference naive_gpu_reference(const DeviceCase& dc);

}  // namespace vattn
