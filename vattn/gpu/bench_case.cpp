// SPDX-License-Identifier: Apache-2.0
#include "vattn/gpu/bench_case.h"

#include <algorithm>
#include <random>

#include <cuda_runtime.h>

#include "vattn/gen/generate.h"
#include "vattn/gpu/bench_kernels.h"

namespace vattn {
namespace {

constexpr int kDqk = 576, kDv = 512;
constexpr int kMaxSets = 32;

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

}  // namespace

BenchCase make_bench_case(const Revision& rev, int batch, int drafts, int prefix, int heads, int max_splits,
                          uint64_t seed, double rotate_bytes) {
  BenchCase c;
  c.tree = drafts <= 16 ? "chain" : "random";
  const int H = heads;
  c.n_q = static_cast<int64_t>(batch) * drafts;
  c.kv_rows = static_cast<int64_t>(batch) * prefix;
  const double kv_bytes = static_cast<double>(c.kv_rows) * kDqk * 2;
  c.sets = std::max(1, std::min(kMaxSets, static_cast<int>(rotate_bytes / std::max(kv_bytes, 1.0))));
  const int64_t n_slots = std::max<int64_t>(1, c.kv_rows * c.sets);

  c.pool = DeviceBuffer("kv_pool", static_cast<size_t>(n_slots) * kDqk * 2);
  c.q = DeviceBuffer("q", static_cast<size_t>(c.n_q) * H * kDqk * 2);
  c.draft = DeviceBuffer("kv_draft", static_cast<size_t>(c.n_q) * kDqk * 2);
  VATTN_CUDA(fill_bf16_random(c.pool.as<uint16_t>(), static_cast<size_t>(n_slots) * kDqk, seed, 1.f, nullptr));
  VATTN_CUDA(fill_bf16_random(c.q.as<uint16_t>(), static_cast<size_t>(c.n_q) * H * kDqk, seed + 1, 1.f, nullptr));
  VATTN_CUDA(fill_bf16_random(c.draft.as<uint16_t>(), static_cast<size_t>(c.n_q) * kDqk, seed + 2, 1.f, nullptr));

  // Scattered slots: each copy's prefix rows are a random permutation of its own slot range.
  std::mt19937_64 rng(seed);
  for (int s = 0; s < c.sets; ++s) {
    std::vector<int32_t> idx(static_cast<size_t>(std::max<int64_t>(c.kv_rows, 1)));
    for (int64_t i = 0; i < c.kv_rows; ++i) idx[static_cast<size_t>(i)] = static_cast<int32_t>(s * c.kv_rows + i);
    std::shuffle(idx.begin(), idx.end(), rng);
    c.indices.push_back(upload_vector("kv_indices", idx));
  }
  std::vector<int32_t> kv_indptr(batch + 1), qo_indptr(batch + 1);
  for (int b = 0; b <= batch; ++b) {
    kv_indptr[b] = b * prefix;
    qo_indptr[b] = b * drafts;
  }
  std::vector<int64_t> word_indptr;
  const auto bits = packed_tree_mask(c.tree, drafts, batch, seed, word_indptr);
  c.kv_indptr = upload_vector("kv_indptr", kv_indptr);
  c.qo_indptr = upload_vector("qo_indptr", qo_indptr);
  c.bits = upload_vector("mask_bits", bits);
  c.words = upload_vector("mask_word_indptr", word_indptr);
  c.forced_splits = upload_vector("forced_splits", std::vector<int32_t>{0});
  c.out = DeviceBuffer("out", static_cast<size_t>(c.n_q) * H * kDv * 2);
  c.lse = DeviceBuffer("lse", static_cast<size_t>(c.n_q) * H * 4);

  c.limits.max_requests = batch;
  c.limits.max_total_drafts = c.n_q;
  c.limits.max_drafts_per_request = drafts;
  c.limits.num_heads = H;
  c.limits.max_splits = max_splits;
  size_t ws_bytes = 0;
  if (rev.api->workspace_size(&c.limits, &ws_bytes) != VATTN_OK)
    throw CudaError("workspace_size refused the bench limits");
  c.workspace = DeviceBuffer("workspace", ws_bytes);

  c.args.resize(c.sets);
  for (int s = 0; s < c.sets; ++s) {
    vattn_args& a = c.args[s];
    a = vattn_args{};
    a.q = c.q.as<const uint16_t>();
    a.kv_pool = c.pool.as<const uint16_t>();
    a.n_slots = n_slots;
    a.kv_indices = c.indices[s].as<const int32_t>();
    a.kv_indptr = c.kv_indptr.as<const int32_t>();
    a.kv_draft = c.draft.as<const uint16_t>();
    a.qo_indptr = c.qo_indptr.as<const int32_t>();
    a.mask_bits = c.bits.as<const uint32_t>();
    a.mask_word_indptr = c.words.as<const int64_t>();
    a.forced_splits = c.forced_splits.as<const int32_t>();
    a.out = c.out.as<uint16_t>();
    a.lse = c.lse.as<float>();
    a.num_requests = batch;
    a.n_q = c.n_q;
    a.num_heads = H;
    a.d_qk = kDqk;
    a.d_v = kDv;
    a.sm_scale = 0.1446796f;
  }
  return c;
}

std::vector<cudaGraphExec_t> capture_case_graphs(const Revision& rev, const BenchCase& c, cudaStream_t stream) {
  std::vector<cudaGraphExec_t> graphs(c.sets);
  for (int s = 0; s < c.sets; ++s) {
    VATTN_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    const vattn_status st = rev.api->run(&c.args[s], &c.limits, c.workspace.data(), c.workspace.bytes(), stream);
    cudaGraph_t g = nullptr;
    const cudaError_t end = cudaStreamEndCapture(stream, &g);  // ends the capture even when run refused
    if (st != VATTN_OK) throw CudaError(std::string("run: ") + rev.api->status_string(st));
    VATTN_CUDA(end);
    VATTN_CUDA(cudaGraphInstantiate(&graphs[s], g, 0));
    VATTN_CUDA(cudaGraphDestroy(g));
  }
  return graphs;
}

int case_splits_used(const BenchCase& c) {
  uint32_t words[2] = {0, 0};
  c.workspace.download(words, sizeof words);
  if (words[0] != 0) throw CudaError("bench case raised device error word " + std::to_string(words[0]));
  return static_cast<int>(words[1]);
}

double bench_case_bytes(int batch, int drafts, int prefix, int heads) {
  const double kv_rows = static_cast<double>(batch) * prefix, n_q = static_cast<double>(batch) * drafts;
  return (kv_rows + n_q) * kDqk * 2 + n_q * heads * (kDqk * 2 + kDv * 2 + 4);
}

double bench_case_flops(int batch, int drafts, int prefix, int heads) {
  return static_cast<double>(batch) * drafts * heads * (static_cast<double>(prefix) + drafts) * 2 * (kDqk + kDv);
}

}  // namespace vattn
