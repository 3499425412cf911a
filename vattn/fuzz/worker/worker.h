// SPDX-License-Identifier: Apache-2.0
// The fuzz worker: the process that does the dangerous work. It loads one target, takes case
// recipes from the supervisor on stdin, generates inputs on a thread pool, runs the code under
// test on its main thread one case at a time (reporting each case before it runs), checks the
// results on the pool, and reports verdicts and heartbeats on fd kReportFd (protocol.h).
// A target that crashes or hangs takes only this process down; the supervisor replaces it.
#pragma once

#include "vattn/fuzz/worker/target.h"

namespace vattn::fuzz {

struct WorkerOptions {
  TargetOptions target;
  int threads = 0;  // pool threads for generation and CPU oracles (0: the machine's cores - 1)
};

// Runs until "quit" or the end of stdin; returns the process exit code (0, or 2 when the target
// cannot be loaded: a "fatal" message says why).
int worker_main(const WorkerOptions& options, const GpuTargetFactory& gpu_factory);

}  // namespace vattn::fuzz
