// SPDX-License-Identifier: Apache-2.0
// `vattn bench`: the kernel-level benchmark protocol. For each (batch, drafts/tree, prefix):
// scattered KV slots, inputs rotated through enough copies to defeat the L2, median of
// per-launch CUDA-event timings after warm-up, eager and CUDA-graph replay, compared with a
// roofline from ceilings measured in the same run. A third mode times the graph replay
// queued behind a gate kernel, so the GPU never waits for the host to submit it: the time
// the call takes inside a larger graph (a serving step), without the host launch latency
// that the first two include when the GPU is idle. Several revisions are timed in one run on
// the same inputs, in turn for each case, against the same ceilings.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kernels/vattn_revisions.h"

namespace vattn {

struct BenchOptions {
  std::vector<std::string> kernels = {VATTN_REVISION_DEFAULT};  // timed in this order for each case
  std::vector<int> prefixes = {4096, 16384, 65536, 91000, 131072};
  std::vector<int> batches = {1, 8};
  std::vector<int> drafts = {16, 64};  // 16: chain (DFlash), 64: random tree (EAGLE)
  int heads = 8;
  int max_splits = 128;
  int reps = 30;
  int warmup = 5;
  int gate_us = 200;  // the queued mode's gate: longer than the host needs to submit a replay
  unsigned long long seed = 1;
};

struct BenchRow {
  std::string kernel;  // revision name
  int batch = 0, drafts = 0, prefix = 0;
  std::string tree;
  int splits_used = 0;
  double eager_us = 0, graph_us = 0, queued_us = 0;
  double bytes = 0, flops = 0;
  double roofline_us = 0;  // max(bytes / copy bandwidth, flops / mma peak)
};

struct BenchReport {
  std::string device;
  std::vector<std::string> kernels;  // revision names, in the order of the options
  int sms = 0;
  int gate_us = 0;
  double copy_gbps = 0, mma_tflops = 0;
  std::vector<BenchRow> rows;
};

// progress(line) is called once per finished case.
BenchReport run_bench(const BenchOptions& opt, const std::function<void(const BenchRow&)>& progress);

std::string bench_table(const BenchReport& r);

}  // namespace vattn
