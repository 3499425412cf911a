// SPDX-License-Identifier: Apache-2.0
#include "vattn/gpu/timeline.h"

#include <dlfcn.h>

#include <algorithm>
#include <vector>

#include <cuda_runtime.h>

#include "vattn/case/case.h"
#include "vattn/gpu/bench_case.h"
#include "vattn/gpu/cuda_check.h"
#include "vattn/gpu/revision.h"

namespace vattn {

TimelineRevision load_timeline_revision(const std::string& kernel) {
  TimelineRevision t;
  t.rev = load_revision(kernel);
  if (t.rev.library)
    t.read = reinterpret_cast<vattn_timeline_read_fn>(dlsym(t.rev.library.get(), VATTN_TIMELINE_SYMBOL));
  if (!t.read)
    throw InputError(kernel, "", "--kernel",
                     "not a timing-probe build: it does not export " VATTN_TIMELINE_SYMBOL
                     " (build with -DVATTN_BUILD_PROBES=ON and give revisions/libvattn_rev_v2_timeline.so)");
  return t;
}

TimelineReport run_timeline(const TimelineRevision& probe, const TimelineOptions& opt) {
  const Revision& rev = probe.rev;
  const vattn_timeline_read_fn read = probe.read;
  TimelineReport rep;
  rep.revision = rev.name();
  const CurrentDevice device = current_device();
  rep.device = device.name;
  rep.sms = device.sms;

  // The bench's inputs, rotated through the same number of copies, so the L2 is as cold.
  BenchCase c =
      make_bench_case(rev, opt.batch, opt.drafts, opt.prefix, opt.heads, opt.max_splits, opt.seed, kBenchRotateBytes);
  rep.tree = c.tree;
  cudaStream_t stream;
  VATTN_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const std::vector<cudaGraphExec_t> graphs = capture_case_graphs(rev, c, stream);
  auto check_read = [&](vattn_timeline* t) {
    const int e = read(t);
    if (e != 0) VATTN_CUDA(static_cast<cudaError_t>(e));
  };
  std::vector<vattn_timeline> calls(static_cast<size_t>(opt.calls));
  vattn_timeline discard;
  for (int i = 0; i < opt.warmup; ++i) VATTN_CUDA(cudaGraphLaunch(graphs[i % c.sets], stream));
  VATTN_CUDA(cudaStreamSynchronize(stream));
  check_read(&discard);  // clears what the warm-up stamped
  cudaEvent_t e0, e1;
  VATTN_CUDA(cudaEventCreate(&e0));
  VATTN_CUDA(cudaEventCreate(&e1));
  std::vector<float> times;
  for (int i = 0; i < opt.calls; ++i) {
    VATTN_CUDA(cudaEventRecord(e0, stream));
    VATTN_CUDA(cudaGraphLaunch(graphs[(opt.warmup + i) % c.sets], stream));
    VATTN_CUDA(cudaEventRecord(e1, stream));
    VATTN_CUDA(cudaEventSynchronize(e1));
    float ms = 0;
    VATTN_CUDA(cudaEventElapsedTime(&ms, e0, e1));
    times.push_back(ms);
    check_read(&calls[static_cast<size_t>(i)]);
  }
  rep.splits_used = case_splits_used(c);
  for (auto g : graphs) cudaGraphExecDestroy(g);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaStreamDestroy(stream);
  std::sort(times.begin(), times.end());
  rep.replay_us = times[times.size() / 2] * 1e3;
  rep.summary = summarize_timeline(calls, VATTN_TL_BLOCKS);
  return rep;
}

}  // namespace vattn
