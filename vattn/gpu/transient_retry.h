// SPDX-License-Identifier: Apache-2.0
// Retrying a step that failed for a reason outside this process: device memory held by another.
// `ctest -L gpu -j 8` runs eight test processes on one GPU, and a case of one may hold tens of GB
// for a moment (a relocated pool past 2^32 bytes, a long context, the naive oracle's scratch);
// an allocation in another then fails although nothing is wrong with it. On the H200
// a split-v1 property failed that way, cudaErrorMemoryAllocation on a 3-draft case, and passed
// when re-run. So the GPU tests wait for memory instead (set_device_memory_wait in their main);
// every other program keeps the default of no wait: a fuzz worker is alone on its GPU, and a
// silent wait there would look like a hang to its supervisor.
// CUDA-free so that the CPU tests check the policy (tests/cpu/test_transient_retry.cpp).
#pragma once

#include <algorithm>
#include <chrono>

namespace vattn {

struct RetryWaits {
  std::chrono::milliseconds first{250};  // the first wait; each next one doubles...
  std::chrono::milliseconds most{4000};  // ...up to this
  std::chrono::milliseconds budget{0};   // no wait would take the total past this (0: no retry)
};

// Calls attempt() until it returns something other than `transient`, waiting between calls
// (wait(duration, waited_so_far) sleeps, and may say so) as long as the waits fit the budget.
// Returns the last attempt's result, `transient` when the budget ran out.
template <class Status, class Attempt, class Wait>
Status retry_transient(Status transient, const RetryWaits& w, Attempt&& attempt, Wait&& wait) {
  Status s = attempt();
  std::chrono::milliseconds waited{0}, next = w.first;
  while (s == transient && next.count() > 0 && waited + next <= w.budget) {
    wait(next, waited);
    waited += next;
    next = std::min(next * 2, w.most);
    s = attempt();
  }
  return s;
}

}  // namespace vattn
