// SPDX-License-Identifier: Apache-2.0
// The GPU fuzz target: a kernel revision (built-in name or .so) planned once per head count at
// the stream's limits, run on guarded, poisoned buffers, and held to the CPU float64 oracle
// (small work) or the naive GPU oracle (large work, relocated pools, injected faults).
// Besides the oracle comparison every case gets: the device error word (zero on valid input),
// guard bands, and, where the kernel used two or more splits, the fp32-partials property.
#pragma once

#include "vattn/fuzz/worker/target.h"

namespace vattn::fuzz {

// InputError (field --kernel) when the revision does not load or no CUDA device is visible.
std::unique_ptr<Target> make_gpu_target(const TargetOptions& options);

}  // namespace vattn::fuzz
