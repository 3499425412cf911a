// SPDX-License-Identifier: Apache-2.0
#include "bench.h"

#include <algorithm>
#include <cstdio>
#include <random>
#include <sstream>

#include <cuda_runtime.h>

#include "bench_kernels.h"
#include "gate_kernel.h"
#include "case.h"
#include "device_buffer.h"
#include "generate.h"
#include "revision.h"

namespace vattn {
namespace {

constexpr int kDqk = 576, kDv = 512;
constexpr double kRotateBytes = 256e6;  // input copies cycled per case: well past the 60 MB L2
constexpr int kMaxSets = 32;

float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::vector<uint32_t> packed_tree_mask(const std::string& tree, int t, int batch, uint64_t seed,
                                       std::vector<int64_t>& word_indptr) {
  const std::vector<int32_t> parent = make_tree(tree, t, seed);
  const std::vector<uint8_t> dense = mask_from_parents(parent);
  const int words = (t + 31) / 32;
  std::vector<uint32_t> one(static_cast<size_t>(t) * words, 0u);
  for (int i = 0; i < t; ++i)
    for (int j = 0; j < t; ++j)
      if (dense[static_cast<size_t>(i) * t + j]) one[static_cast<size_t>(i) * words + j / 32] |= 1u << (j % 32);
  std::vector<uint32_t> all;
  word_indptr.assign(1, 0);
  for (int b = 0; b < batch; ++b) {
    all.insert(all.end(), one.begin(), one.end());
    word_indptr.push_back(static_cast<int64_t>(all.size()));
  }
  return all;
}

BenchRow bench_one(const Revision& rev, const BenchOptions& opt, int batch, int drafts, int prefix, uint64_t seed) {
  BenchRow row;
  row.batch = batch;
  row.drafts = drafts;
  row.prefix = prefix;
  row.tree = drafts <= 16 ? "chain" : "random";
  const int H = opt.heads;
  const int64_t n_q = static_cast<int64_t>(batch) * drafts;
  const int64_t kv_rows = static_cast<int64_t>(batch) * prefix;
  const double kv_bytes = static_cast<double>(kv_rows) * kDqk * 2;
  const int sets = std::max(1, std::min(kMaxSets, static_cast<int>(kRotateBytes / std::max(kv_bytes, 1.0))));
  const int64_t n_slots = std::max<int64_t>(1, kv_rows * sets);

  DeviceBuffer pool("kv_pool", static_cast<size_t>(n_slots) * kDqk * 2);
  DeviceBuffer q("q", static_cast<size_t>(n_q) * H * kDqk * 2), draft("kv_draft", static_cast<size_t>(n_q) * kDqk * 2);
  VATTN_CUDA(fill_bf16_random(pool.as<uint16_t>(), static_cast<size_t>(n_slots) * kDqk, seed, 1.f, nullptr));
  VATTN_CUDA(fill_bf16_random(q.as<uint16_t>(), static_cast<size_t>(n_q) * H * kDqk, seed + 1, 1.f, nullptr));
  VATTN_CUDA(fill_bf16_random(draft.as<uint16_t>(), static_cast<size_t>(n_q) * kDqk, seed + 2, 1.f, nullptr));

  // Scattered slots: each copy's prefix rows are a random permutation of its own slot range.
  std::mt19937_64 rng(seed);
  std::vector<DeviceBuffer> indices;
  for (int s = 0; s < sets; ++s) {
    std::vector<int32_t> idx(static_cast<size_t>(std::max<int64_t>(kv_rows, 1)));
    for (int64_t i = 0; i < kv_rows; ++i) idx[static_cast<size_t>(i)] = static_cast<int32_t>(s * kv_rows + i);
    std::shuffle(idx.begin(), idx.end(), rng);
    indices.push_back(upload_vector("kv_indices", idx));
  }
  std::vector<int32_t> kv_indptr(batch + 1), qo_indptr(batch + 1);
  for (int b = 0; b <= batch; ++b) {
    kv_indptr[b] = b * prefix;
    qo_indptr[b] = b * drafts;
  }
  std::vector<int64_t> word_indptr;
  const auto bits = packed_tree_mask(row.tree, drafts, batch, seed, word_indptr);
  DeviceBuffer d_kv_indptr = upload_vector("kv_indptr", kv_indptr), d_qo_indptr = upload_vector("qo_indptr", qo_indptr);
  DeviceBuffer d_bits = upload_vector("mask_bits", bits), d_words = upload_vector("mask_word_indptr", word_indptr);
  DeviceBuffer splits = upload_vector("forced_splits", std::vector<int32_t>{0});
  DeviceBuffer out("out", static_cast<size_t>(n_q) * H * kDv * 2), lse("lse", static_cast<size_t>(n_q) * H * 4);

  vattn_limits lim{};
  lim.max_requests = batch;
  lim.max_total_drafts = n_q;
  lim.max_drafts_per_request = drafts;
  lim.num_heads = H;
  lim.max_splits = opt.max_splits;
  size_t ws_bytes = 0;
  if (rev.api->workspace_size(&lim, &ws_bytes) != VATTN_OK) throw CudaError("workspace_size refused the bench limits");
  DeviceBuffer ws("workspace", ws_bytes);

  std::vector<vattn_args> args(sets);
  for (int s = 0; s < sets; ++s) {
    vattn_args& a = args[s];
    a = vattn_args{};
    a.q = q.as<const uint16_t>();
    a.kv_pool = pool.as<const uint16_t>();
    a.n_slots = n_slots;
    a.kv_indices = indices[s].as<const int32_t>();
    a.kv_indptr = d_kv_indptr.as<const int32_t>();
    a.kv_draft = draft.as<const uint16_t>();
    a.qo_indptr = d_qo_indptr.as<const int32_t>();
    a.mask_bits = d_bits.as<const uint32_t>();
    a.mask_word_indptr = d_words.as<const int64_t>();
    a.forced_splits = splits.as<const int32_t>();
    a.out = out.as<uint16_t>();
    a.lse = lse.as<float>();
    a.num_requests = batch;
    a.n_q = n_q;
    a.num_heads = H;
    a.d_qk = kDqk;
    a.d_v = kDv;
    a.sm_scale = 0.1446796f;
  }

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
  uint32_t words[2] = {0, 0};
  ws.download(words, sizeof words);
  if (words[0] != 0) throw CudaError("bench case raised device error word " + std::to_string(words[0]));
  row.splits_used = static_cast<int>(words[1]);

  std::vector<cudaGraphExec_t> graphs(sets);
  for (int s = 0; s < sets; ++s) {
    cudaGraph_t g;
    VATTN_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    launch(s);
    VATTN_CUDA(cudaStreamEndCapture(stream, &g));
    VATTN_CUDA(cudaGraphInstantiate(&graphs[s], g, 0));
    VATTN_CUDA(cudaGraphDestroy(g));
  }
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
  // Unique bytes: each KV row (prefix + drafts) once, q in, out + lse out.
  row.bytes = static_cast<double>(kv_rows + n_q) * kDqk * 2 + static_cast<double>(n_q) * H * (kDqk * 2 + kDv * 2 + 4);
  row.flops = static_cast<double>(batch) * drafts * H * (static_cast<double>(prefix) + drafts) * 2 * (kDqk + kDv);
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
  int dev = 0;
  VATTN_CUDA(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  VATTN_CUDA(cudaGetDeviceProperties(&prop, dev));
  rep.device = prop.name;
  rep.sms = prop.multiProcessorCount;
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
  std::snprintf(line, sizeof line, "device %s (%d SMs), %s %s; ceilings measured now: copy %.0f GB/s, mma.sync bf16 %.0f TFLOP/s\n",
                r.device.c_str(), r.sms, r.kernels.size() > 1 ? "kernels" : "kernel", names.c_str(), r.copy_gbps,
                r.mma_tflops);
  os << line;
  const bool several = r.kernels.size() > 1;
  os << (several ? "kernel     " : "") << "    B     T tree        P  splits   eager_us   graph_us  queued_us    GB/s  TFLOP/s  roofline_us  %roof(eager)"
        "  %roof(graph)  %roof(queued)" << (several ? "  graph vs " + r.kernels[0] : "") << "\n";
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
                  x.bytes / (t * 1e-6) / 1e9, x.flops / (t * 1e-6) / 1e12, x.roofline_us, 100 * x.roofline_us / x.eager_us,
                  100 * x.roofline_us / t, 100 * x.roofline_us / x.queued_us);
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
