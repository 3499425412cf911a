// SPDX-License-Identifier: Apache-2.0
#include "vattn/gpu/bench.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include <cuda_runtime.h>

#include "vattn/gpu/bench_case.h"
#include "vattn/gpu/bench_kernels.h"
#include "vattn/gpu/device_buffer.h"
#include "vattn/gpu/gate_kernel.h"
#include "vattn/gpu/revision.h"

namespace vattn {
namespace {

float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

BenchRow bench_one(const Revision& rev, const BenchOptions& opt, int batch, int drafts, int prefix, uint64_t seed) {
  BenchRow row;
  row.batch = batch;
  row.drafts = drafts;
  row.prefix = prefix;
  BenchCase c = make_bench_case(rev, batch, drafts, prefix, opt.heads, opt.max_splits, seed, kBenchRotateBytes);
  row.tree = c.tree;
  const int sets = c.sets;
  const std::vector<vattn_args>& args = c.args;
  const vattn_limits& lim = c.limits;
  DeviceBuffer& ws = c.workspace;

  cudaStream_t stream;
  VATTN_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  VATTN_CUDA(cudaEventCreate(&e0));
  VATTN_CUDA(cudaEventCreate(&e1));
  auto launch = [&](int s) {
    const vattn_status st = rev.api->run(&args[s], &lim, ws.data(), ws.bytes(), stream);
    if (st != VATTN_OK) throw CudaError(std::string("run: ") + rev.api->status_string(st));
  };
  auto time_one = [&](const std::function<void(int)>& go, int s, bool queued = false) {
    if (queued) VATTN_CUDA(launch_gate(stream, static_cast<unsigned long long>(opt.gate_us)));
    VATTN_CUDA(cudaEventRecord(e0, stream));
    go(s);
    VATTN_CUDA(cudaEventRecord(e1, stream));
    VATTN_CUDA(cudaEventSynchronize(e1));
    float ms = 0;
    VATTN_CUDA(cudaEventElapsedTime(&ms, e0, e1));
    return ms;
  };

  for (int i = 0; i < opt.warmup; ++i) launch(i % sets);
  VATTN_CUDA(cudaStreamSynchronize(stream));
  std::vector<float> eager;
  for (int i = 0; i < opt.reps; ++i) eager.push_back(time_one(launch, i % sets));
  row.splits_used = case_splits_used(c);

  const std::vector<cudaGraphExec_t> graphs = capture_case_graphs(rev, c, stream);
  auto replay = [&](int s) { VATTN_CUDA(cudaGraphLaunch(graphs[s], stream)); };
  for (int i = 0; i < opt.warmup; ++i) replay(i % sets);
  std::vector<float> graph;
  for (int i = 0; i < opt.reps; ++i) graph.push_back(time_one(replay, i % sets));
  std::vector<float> queued;
  for (int i = 0; i < opt.reps; ++i) queued.push_back(time_one(replay, i % sets, true));
  for (auto g : graphs) cudaGraphExecDestroy(g);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaStreamDestroy(stream);

  row.eager_us = median(eager) * 1e3;
  row.graph_us = median(graph) * 1e3;
  row.queued_us = median(queued) * 1e3;
  row.bytes = bench_case_bytes(batch, drafts, prefix, opt.heads);
  row.flops = bench_case_flops(batch, drafts, prefix, opt.heads);
  return row;
}

}  // namespace

BenchReport run_bench(const BenchOptions& opt, const std::function<void(const BenchRow&)>& progress) {
  BenchReport rep;
  std::vector<Revision> revs;
  for (const std::string& k : opt.kernels) {
    revs.push_back(load_revision(k));
    rep.kernels.push_back(revs.back().name());
  }
  rep.gate_us = opt.gate_us;
  const CurrentDevice device = current_device();
  rep.device = device.name;
  rep.sms = device.sms;
  rep.copy_gbps = measure_copy_gbps(size_t(2) << 30);
  rep.mma_tflops = measure_mma_tflops(rep.sms);
  uint64_t seed = opt.seed;
  for (int batch : opt.batches)
    for (int drafts : opt.drafts)
      for (int prefix : opt.prefixes) {
        for (const Revision& rev : revs) {  // the same seed: every revision gets the same inputs
          BenchRow r = bench_one(rev, opt, batch, drafts, prefix, seed);
          r.kernel = rev.name();
          r.roofline_us = std::max(r.bytes / (rep.copy_gbps * 1e9), r.flops / (rep.mma_tflops * 1e12)) * 1e6;
          rep.rows.push_back(r);
          if (progress) progress(r);
        }
        ++seed;
      }
  return rep;
}

std::string bench_table(const BenchReport& r) {
  std::ostringstream os;
  char line[320];
  std::string names;
  for (const auto& k : r.kernels) names += (names.empty() ? "" : ", ") + k;
  std::snprintf(line, sizeof line,
                "device %s (%d SMs), %s %s; ceilings measured now: copy %.0f GB/s, mma.sync bf16 %.0f TFLOP/s\n",
                r.device.c_str(), r.sms, r.kernels.size() > 1 ? "kernels" : "kernel", names.c_str(), r.copy_gbps,
                r.mma_tflops);
  os << line;
  const bool several = r.kernels.size() > 1;
  os << (several ? "kernel     " : "")
     << "    B     T tree        P  splits   eager_us   graph_us  queued_us    GB/s  TFLOP/s  roofline_us  %roof(eager)"
        "  %roof(graph)  %roof(queued)"
     << (several ? "  graph vs " + r.kernels[0] : "") << "\n";
  double first_graph = 0;
  for (const auto& x : r.rows) {
    const double t = x.graph_us;
    if (several) {
      if (x.kernel == r.kernels[0]) first_graph = t;
      std::snprintf(line, sizeof line, "%-10s ", x.kernel.c_str());
      os << line;
    }
    std::snprintf(line, sizeof line,
                  "%5d %5d %-6s %7d %6d %10.1f %10.1f %10.1f %7.0f %8.1f %12.2f %12.1f%% %12.1f%% %13.1f%%", x.batch,
                  x.drafts, x.tree.c_str(), x.prefix, x.splits_used, x.eager_us, x.graph_us, x.queued_us,
                  x.bytes / (t * 1e-6) / 1e9, x.flops / (t * 1e-6) / 1e12, x.roofline_us,
                  100 * x.roofline_us / x.eager_us, 100 * x.roofline_us / t, 100 * x.roofline_us / x.queued_us);
    os << line;
    if (several) {  // > 1: faster than the first revision on this case
      std::snprintf(line, sizeof line, "  %8.2fx", first_graph / t);
      os << line;
    }
    os << "\n";
  }
  os << "GB/s and TFLOP/s: graph replay. queued: the same replay enqueued behind a " << r.gate_us
     << " us gate kernel (no host launch latency: the call's cost inside a larger graph)\n";
  if (several) os << "graph vs " << r.kernels[0] << ": its graph time / this revision's (> 1: faster)\n";
  return os.str();
}

}  // namespace vattn
