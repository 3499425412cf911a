// SPDX-License-Identifier: Apache-2.0
// The GPU fuzz target: a kernel revision (built-in name or .so) planned once per head count at
// the stream's limits, each case uploaded (staged, on a pool thread) and run through the testbed
// (vattn/testbed/testbed.h), which also judges it. This target chooses the options: the CPU
// float64 oracle (small work) or the naive GPU oracle (large work, relocated pools, injected
// faults), the fault it plants (recipe key fault=), and which properties a case gets (partly
// visible poison on every case, the argument contract on one in eight, fp32 partials sampled).
#pragma once

#include "vattn/fuzz/worker/target.h"

namespace vattn::fuzz {

// InputError (field --kernel) when the revision does not load or no CUDA device is visible.
std::unique_ptr<Target> make_gpu_target(const TargetOptions& options);

}  // namespace vattn::fuzz
