// SPDX-License-Identifier: Apache-2.0
// The GPU fuzz target: a kernel revision (built-in name or .so) planned once per head count at
// the stream's limits, or at a recipe's own plan limits (limits=R/Q/T/S: a plan per heads and
// limits, the last 32 kept, runner_cache.h), each case uploaded (staged, on a pool thread) and run
// through the testbed (vattn/testbed/testbed.h), which also judges it and sets the GPU the plan is
// made for (sms=, sm_blocks=; a revision without the plan hook is refused such a case, and the
// worker's ready message says whether it has one). This target chooses the options: the CPU
// float64 oracle (small work) or the naive GPU oracle (large work, relocated pools, injected
// faults), the fault it plants (recipe key fault=), and which properties a case gets (partly
// visible poison on every case, the argument contract on one in eight, fp32 partials sampled).
#pragma once

#include "vattn/fuzz/worker/target.h"

namespace vattn::fuzz {

// InputError (field --kernel) when the revision does not load or no CUDA device is visible.
std::unique_ptr<Target> make_gpu_target(const TargetOptions& options);

}  // namespace vattn::fuzz
