// SPDX-License-Identifier: Apache-2.0
// vattn_oracle_bench: how close the float64 oracle runs to a plain Eigen double GEMM of the same
// flop count, on a K2.6-sized verify call (H=8, T=64 chain, P=16384, d_qk=576, d_v=512).
// The oracle is worth its price only if it is GEMM-bound; this prints whether it is.
#include <Eigen/Dense>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>

#include "vattn/case/bf16.h"
#include "vattn/case/case.h"
#include "vattn/oracle/cpu_oracle.h"

namespace {

using Clock = std::chrono::steady_clock;
using RowMatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

vattn::Case k26_case(int heads, int drafts, int prefix, uint64_t seed) {
  vattn::Case c;
  c.name = "bench";
  c.num_heads = heads;
  c.d_qk = 576;
  c.d_v = 512;
  c.sm_scale = 0.1446796;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  auto fill = [&](std::vector<uint16_t>& v, size_t n) {
    v.resize(n);
    for (auto& x : v) x = vattn::float_to_bf16(uni(rng));
  };
  const size_t dqk = static_cast<size_t>(c.d_qk);
  fill(c.q, static_cast<size_t>(drafts) * static_cast<size_t>(heads) * dqk);
  fill(c.kv_pool, static_cast<size_t>(prefix) * dqk);
  fill(c.kv_draft, static_cast<size_t>(drafts) * dqk);
  // Scattered slots, as in a live pool.
  c.kv_indices.resize(static_cast<size_t>(prefix));
  std::iota(c.kv_indices.begin(), c.kv_indices.end(), 0);
  std::shuffle(c.kv_indices.begin(), c.kv_indices.end(), rng);
  c.kv_indptr = {0, prefix};
  c.qo_indptr = {0, drafts};
  c.draft_mask.assign(static_cast<size_t>(drafts) * static_cast<size_t>(drafts), 0);
  for (int i = 0; i < drafts; ++i)
    for (int j = 0; j <= i; ++j)
      c.draft_mask[static_cast<size_t>(i) * static_cast<size_t>(drafts) + static_cast<size_t>(j)] = 1;
  c.draft_mask_indptr = {0, static_cast<int64_t>(drafts) * drafts};
  vattn::validate(c);
  return c;
}

template <class F>
double best_seconds(int reps, F&& f) {
  double best = 1e300;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = Clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  // usage: vattn_oracle_bench [REPS]   (REPS: 1..1000, default 3)
  int reps = 3;
  if (argc > 2 || (argc == 2 && (!std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "--help")))) {
    std::fprintf(argc > 2 ? stderr : stdout,
                 "usage: vattn_oracle_bench [REPS]\nTimes the float64 CPU oracle on a K2.6-sized call (H=8, T=64, "
                 "P=16384) against a plain Eigen GEMM of the same products; best of REPS (1..1000, default 3).\n");
    return argc > 2 ? 2 : 0;
  }
  if (argc == 2) {
    char* end = nullptr;
    const long v = std::strtol(argv[1], &end, 10);
    if (end == argv[1] || *end != '\0' || v < 1 || v > 1000) {
      std::fprintf(stderr, "vattn_oracle_bench: REPS '%s' is not a whole number in 1..1000 (see --help)\n", argv[1]);
      return 2;
    }
    reps = static_cast<int>(v);
  }
  const int H = 8, T = 64, P = 16384;
  const vattn::Case c = k26_case(H, T, P, 20240611);
  const int64_t rows = static_cast<int64_t>(T) * H, keys = static_cast<int64_t>(P) + T;
  const double flops = 2.0 * static_cast<double>(rows) * static_cast<double>(keys) * (c.d_qk + c.d_v);

  // The same products without softmax, masking or gathering: S = Q K^T, O = S V.
  RowMatD q = RowMatD::Random(rows, c.d_qk), kv = RowMatD::Random(keys, c.d_qk), s(rows, keys), o(rows, c.d_v);
  volatile double sink = 0;
  vattn::Reference ref;
  // Interleaved and best-of: the machine is shared, and a neighbour's burst should hit both.
  double t_gemm = 1e300, t_oracle = 1e300;
  for (int i = 0; i < reps; ++i) {
    t_gemm = std::min(t_gemm, best_seconds(1, [&] {
                        s.noalias() = q * kv.transpose();
                        o.noalias() = s * kv.leftCols(c.d_v);
                        sink = sink + o(0, 0);
                      }));
    t_oracle = std::min(t_oracle, best_seconds(1, [&] { ref = vattn::oracle_fp64(c); }));
  }
  vattn::Reference emu;
  const double t_emu = best_seconds(1, [&] { emu = vattn::reference_bf16_emulated(c); });

  const double gemm_rate = flops / t_gemm * 1e-9, oracle_rate = flops / t_oracle * 1e-9;
  std::printf("case: %s, d_qk=%d d_v=%d, %lld query rows x %lld keys, %.2f GFLOP (2*rows*keys*(d_qk+d_v))\n",
              c.describe().c_str(), c.d_qk, c.d_v, static_cast<long long>(rows), static_cast<long long>(keys),
              flops * 1e-9);
  std::printf("eigen double GEMM (Q K^T, S V):  %8.3f s  %7.2f GFLOP/s   (best of %d)\n", t_gemm, gemm_rate, reps);
  std::printf(
      "oracle_fp64:                     %8.3f s  %7.2f GFLOP/s   (best of %d; also computes abs_pv, lse_scale)\n",
      t_oracle, oracle_rate, reps);
  std::printf("reference_bf16_emulated:         %8.3f s  %7.2f GFLOP/s   (one run)\n", t_emu, flops / t_emu * 1e-9);
  std::printf("oracle / GEMM rate: %.1f%%  (target >= 50%%)\n", 100.0 * oracle_rate / gemm_rate);
  std::printf("check: out[0]=%.6g lse[0]=%.6g\n", ref.out[0], ref.lse[0]);
  return 0;
}
