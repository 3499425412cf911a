// SPDX-License-Identifier: Apache-2.0
// One `vattn bench` case on the device, shared by the benchmark and vattn_timeline_probe: K2.6
// shapes (H heads, d_qk 576, d_v 512), every request with the same prefix P and T drafts, the
// prefix rows scattered over the KV pool (a random permutation of each copy's slot range), a
// chain mask for T <= 16 and a random tree above, and a workspace planned for exactly this case.
// `sets` copies of the index array (all in one pool) let a benchmark rotate launches through
// more KV than the L2 holds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/vattn_abi.h"
#include "vattn/gpu/device_buffer.h"
#include "vattn/gpu/revision.h"

namespace vattn {

constexpr double kBenchRotateBytes = 256e6;  // KV the sets span together: well past the 60 MB L2

struct BenchCase {
  std::string tree;  // "chain" or "random"
  int64_t n_q = 0, kv_rows = 0;
  int sets = 1;
  vattn_limits limits{};
  DeviceBuffer pool, q, draft, kv_indptr, qo_indptr, bits, words, forced_splits, out, lse, workspace;
  std::vector<DeviceBuffer> indices;  // one per set
  std::vector<vattn_args> args;       // one per set, all writing the same out, lse and workspace
};

// rotate_bytes: how much KV the sets should span together (at most 32 sets; 0: one set).
BenchCase make_bench_case(const Revision& rev, int batch, int drafts, int prefix, int heads, int max_splits,
                          uint64_t seed, double rotate_bytes);

// One instantiated CUDA graph of run() per set, captured on `stream`. Throws CudaError; when run()
// refuses, the capture is ended first, so the stream stays usable.
std::vector<cudaGraphExec_t> capture_case_graphs(const Revision& rev, const BenchCase& c, cudaStream_t stream);

// After a call: the split count the kernel used (ABI word 1). Throws CudaError when the device
// error word (word 0) is set: a bench case is valid input, so any bit there is the kernel's fault.
int case_splits_used(const BenchCase& c);

// Unique bytes a call moves (each KV row, prefix and drafts, once; q in; out and lse out) and
// its flops (B*T*H*(P+T)*2*(d_qk+d_v)), the roofline's two sides.
double bench_case_bytes(int batch, int drafts, int prefix, int heads);
double bench_case_flops(int batch, int drafts, int prefix, int heads);

}  // namespace vattn
