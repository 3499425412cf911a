// SPDX-License-Identifier: Apache-2.0
// vattn_ceiling_probe: how fast could split-v1's work item (32 query rows x 32-key tiles,
// 8 warps, two cp.async stages, 96 KiB of shared memory) go if parts of its tile loop were
// free? The probe runs the item's tile loop on synthetic data with parts switched off:
//   copy         the two-stage cp.async stream of scattered KV rows, no math;
//   math         S = Q K^T and O += P V with their ldmatrix traffic, on a resident tile;
//   copy+math    both, with the two block barriers the decomposition cannot drop (P needs
//                every warp's S partial; a stage is refilled only after every warp used it);
//   full         copy+math plus what split-v1 adds per tile: the S exchange through shared
//                memory, the online softmax and the rescale (no masks, no guards);
//   copy-xN      the stream alone with N stages, N tiles in flight at each wait (split-v1
//                has one): where more stages stop helping, the stream is bandwidth-bound,
//                and no schedule of a 32-row item can beat that line;
// `full` calibrates the probe against `vattn bench`. Timing only: no result is checked.
// Every kernel records the SM it ran on, so the host can prove one block per SM.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>
#include <CLI/CLI.hpp>

#include "kernels/mma_sm80.cuh"
#include "kernels/split_params.h"
#include "kernels/split_tile.cuh"
#include "vattn/gpu/bench_kernels.h"
#include "vattn/gpu/cuda_check.h"
#include "vattn/gpu/device_buffer.h"

namespace vattn::kern {
namespace {

// Thread 0 writes the block's SM id after the grid's per-thread results in `sink`.
__device__ __forceinline__ void record_sm(float* sink) {
  if (threadIdx.x == 0) {
    unsigned id;
    asm volatile("mov.u32 %0, %%smid;\n" : "=r"(id));
    reinterpret_cast<unsigned*>(sink + gridDim.x * kThreads)[blockIdx.x] = id;
  }
}

// split-v1's item with parts switched off. The phases are the kernel's own (split_tile.cuh);
// what the probe leaves out is what every real tile adds on top: masks, the non-finite V
// guard, the item's setup and write-back, and the split reduce.
template <bool kCopy, bool kMath, bool kSoftmax>
__global__ void __launch_bounds__(kThreads, 1)
    probe_kernel(const uint16_t* __restrict__ pool, const int32_t* __restrict__ slots, const uint16_t* __restrict__ q,
                 int keys, int row_groups, float* sink) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  uint16_t* s_kv = reinterpret_cast<uint16_t*>(smem_raw);
  float* s_x = reinterpret_cast<float*>(smem_raw + kSmemKv);
  uint16_t* s_p = reinterpret_cast<uint16_t*>(smem_raw + kSmemKv + kSmemExchange);
  float* s_corr = reinterpret_cast<float*>(smem_raw + kSmemKv + kSmemExchange + kSmemP);

  record_sm(sink);
  const TileLane tl = tile_lane();
  const int copy_row = threadIdx.x >> 3, copy_ch = threadIdx.x & 7;
  const int32_t* req_slots = slots + static_cast<int64_t>(blockIdx.x / row_groups) * keys;
  const int ntiles = keys / kKeysPerTile;

  uint32_t qf[2][kKSteps][4];
  const bool all_rows[2][2] = {{true, true}, {true, true}};
  load_q(qf, q, 0, all_rows, tl);
  float o[2][8][4] = {};
  float m_run = -INFINITY, l_run = 0.f;
  if constexpr (!kSoftmax)  // a fixed P: the P.V traffic and mma without a softmax to produce it
    for (int i = threadIdx.x; i < kRowsPerTile * kPStride; i += kThreads) s_p[i] = 0x3d00;  // bf16 1/32
  if constexpr (!kCopy)  // the math alone works on zeros, not on whatever the shared memory held
    for (int i = threadIdx.x; i < kStages * kKeysPerTile * kSmemStride; i += kThreads) s_kv[i] = 0;

  auto source = [&](int tile) {
    return pool + static_cast<int64_t>(__ldg(req_slots + tile * kKeysPerTile + copy_row)) * kDqk + copy_ch * 8;
  };
  auto issue = [&](int tile, const uint16_t* src, int i0, int i1) {
    copy_row_chunks(s_kv + (tile % kStages) * kKeysPerTile * kSmemStride + copy_row * kSmemStride + copy_ch * 8, src,
                    true, i0, i1);
  };
  constexpr int kChunks = kChunksPerRow / 8;  // per thread and tile
  if constexpr (kCopy) {
    issue(0, source(0), 0, kChunks);
    cp_async_commit();
    if (ntiles > 1) issue(1, source(1), 0, kChunks);
    cp_async_commit();
  }
  const uint16_t* next_src = pool;  // the row of tile it + 1, issued during tile it >= 1

  for (int it = 0; it < ntiles; ++it) {
    // Loaded a tile ahead of its use, as split-v1 does with its kv_indices.
    const int32_t slot_after = kCopy && it + 2 < ntiles ? __ldg(req_slots + (it + 2) * kKeysPerTile + copy_row) : 0;
    if constexpr (kCopy) {
      if (it < 2)
        cp_async_wait<1>();
      else
        cp_async_wait<0>();
    }
    __syncthreads();
    const bool load_next = kCopy && it >= 1 && it + 1 < ntiles;
    const uint16_t* kv = s_kv + (it % kStages) * kKeysPerTile * kSmemStride;
    if constexpr (kMath) {
      float acc[2][2][4] = {};
#pragma unroll
      for (int ks = 0; ks < kKSteps; ++ks) {
        s_kstep(acc, qf, kv, tl, ks);
        if (ks == kCopyStep1 && load_next) issue(it + 1, next_src, 0, kCopyCut1);  // split-v1's copy schedule
        if (ks == kCopyStep2 && load_next) issue(it + 1, next_src, kCopyCut1, kCopyCut2);
      }
      if (kSoftmax || tl.dq == 0) store_partial(s_x, acc, tl);  // without the softmax one partial is kept
    } else {
      if (load_next) issue(it + 1, next_src, 0, kCopyCut2);
    }
    if constexpr (kSoftmax) {
      __syncthreads();
      float sc[4];
      sum_partials(sc, s_x, tl);
      // Any positive scale gives the same timing; this one is `vattn bench`'s (0.1446796),
      // in log2 units as the kernel uses it.
#pragma unroll
      for (int e = 0; e < 4; ++e) sc[e] *= 0.1446796f * 1.4426950408889634f;
      online_softmax(sc, m_run, l_run, s_p, s_corr, tl);
    }
    if (load_next) issue(it + 1, next_src, kCopyCut2, kChunks);
    if constexpr (kCopy) cp_async_commit();
    __syncthreads();
    if constexpr (kMath) {
      if constexpr (kSoftmax) rescale_o(o, s_corr, tl);
      pv_mma(o, s_p, kv, tl);
    }
    next_src = pool + static_cast<int64_t>(slot_after) * kDqk + copy_ch * 8;
  }
  float total = l_run;
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int n = 0; n < 8; ++n) total += o[mt][n][0] + o[mt][n][1] + o[mt][n][2] + o[mt][n][3];
  sink[blockIdx.x * kThreads + threadIdx.x] = total;
}

// The KV stream alone, kDepth stages: the next kDepth - 1 tiles are requested before the
// block waits for the current one (split-v1 requests tile it + 1 only after tile it has
// landed). If more stages stop helping, the stream is bandwidth-bound, not latency-bound.
// kDepth x 37 KB of shared memory: only kDepth = 2 fits sm_120's 99 KB per block.
template <int kDepth>
__global__ void __launch_bounds__(kThreads, 1)
    stream_kernel(const uint16_t* __restrict__ pool, const int32_t* __restrict__ slots, const uint16_t* __restrict__,
                  int keys, int row_groups, float* sink) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  uint16_t* s_kv = reinterpret_cast<uint16_t*>(smem_raw);
  record_sm(sink);
  const int copy_row = threadIdx.x >> 3, copy_ch = threadIdx.x & 7;
  const int32_t* req_slots = slots + static_cast<int64_t>(blockIdx.x / row_groups) * keys;
  const int ntiles = keys / kKeysPerTile;
  auto issue = [&](int tile) {
    if (tile < ntiles) {
      const uint16_t* src =
          pool + static_cast<int64_t>(__ldg(req_slots + tile * kKeysPerTile + copy_row)) * kDqk + copy_ch * 8;
      uint16_t* to = s_kv + (tile % kDepth) * kKeysPerTile * kSmemStride + copy_row * kSmemStride + copy_ch * 8;
      copy_row_chunks(to, src, true, 0, kChunksPerRow / 8);
    }
    cp_async_commit();
  };
  for (int t = 0; t < kDepth - 1; ++t) issue(t);
  float total = 0.f;
  for (int it = 0; it < ntiles; ++it) {
    issue(it + kDepth - 1);  // into the stage tile it - 1 left (every warp passed the barrier below)
    cp_async_wait<kDepth - 1>();
    __syncthreads();
    const uint16_t landed = s_kv[(it % kDepth) * kKeysPerTile * kSmemStride + threadIdx.x];
    total += __uint_as_float(static_cast<uint32_t>(landed) << 16);
    __syncthreads();
  }
  sink[blockIdx.x * kThreads + threadIdx.x] = total;
}

struct Variant {
  const char* name;
  void (*kernel)(const uint16_t*, const int32_t*, const uint16_t*, int, int, float*);
  bool math;    // false: the stream alone; the % column then says what it would allow
  int rows;     // query rows per KV byte
  size_t smem;  // dynamic shared memory the variant uses per block
  const char* what;
};
constexpr size_t kStreamSmem(int stages) { return sizeof(uint16_t) * stages * kKeysPerTile * kSmemStride; }
constexpr int kQRows = kRowsPerTile;  // rows of Q any variant reads
const Variant kVariants[] = {
    {"copy", probe_kernel<true, false, false>, false, kRowsPerTile, kSmemBytes,
     "split-v1's KV stream alone (scattered 1152 B rows, cp.async, two stages)"},
    {"math", probe_kernel<false, true, false>, true, kRowsPerTile, kSmemBytes,
     "S = Q K^T and O += P V with their ldmatrix traffic, tile resident"},
    {"copy+math", probe_kernel<true, true, false>, true, kRowsPerTile, kSmemBytes,
     "both, with the two barriers per tile the decomposition needs"},
    {"full", probe_kernel<true, true, true>, true, kRowsPerTile, kSmemBytes,
     "plus the S exchange, online softmax and rescale (split-v1's per-tile code)"},
    {"copy-x2", stream_kernel<2>, false, kRowsPerTile, kStreamSmem(2),
     "the KV stream alone, 2 stages, 2 tiles in flight"},
    {"copy-x3", stream_kernel<3>, false, kRowsPerTile, kStreamSmem(3), "3 stages, 3 tiles in flight"},
    {"copy-x4", stream_kernel<4>, false, kRowsPerTile, kStreamSmem(4), "4 stages, 4 tiles in flight"},
};

}  // namespace
}  // namespace vattn::kern

namespace vattn {
namespace {

using kern::kVariants;
using kern::Variant;

const char* kIntro =
    "usage: vattn_ceiling_probe [--keys N] [--row-groups G] [--reps R] [--only VARIANT]\n"
    "\n"
    "Runs split-v1's tile loop (32 query rows x 32-key tiles, 8 warps, two cp.async stages;\n"
    "the per-tile math is the kernel's own, kernels/split_tile.cuh) on synthetic data with\n"
    "parts of it switched off, one block per SM, and prints each variant's time per 32 keys\n"
    "and the share of the mma.sync peak (measured in the same run) that its item's mma reach\n"
    "(flops of the rows it holds, 2 x 1088 per row and key). The copy-xN lines bound every\n"
    "schedule of a 32-row item: where more stages stop helping, the stream is bandwidth-bound.\n"
    "`full` calibrates the probe against `vattn bench`; kernels/DESIGN.md has the H200 numbers.\n"
    "\n"
    "variants:\n";
const char* kOptions =
    "\n"
    "options (--opt VALUE or --opt=VALUE):\n"
    "  --keys N        keys per block, a multiple of 32 in 32..262144 (default 16384)\n"
    "  --row-groups G  blocks that read the same keys, like a request's 32-row tiles,\n"
    "                  1..64 (default 4: T=16 x H=8 rows)\n"
    "  --reps R        timed launches per variant after one warm-up, median reported,\n"
    "                  1..1000 (default 5)\n"
    "  --only VARIANT  run one variant (e.g. under ncu)\n"
    "\n"
    "exit status: 0 every variant asked for was measured; 1 a CUDA error, a variant that\n"
    "could not run here (shared memory), blocks that shared an SM (the row says NOT VALID)\n"
    "or a write past a buffer; 2 usage error or no CUDA device.\n";

void print_usage(FILE* to) {
  std::fputs(kIntro, to);
  for (const Variant& v : kVariants) std::fprintf(to, "  %-11s %s\n", v.name, v.what);
  std::fputs(kOptions, to);
}

std::string variant_names() {
  std::string all;
  for (const Variant& v : kVariants) all += (all.empty() ? "" : ", ") + std::string(v.name);
  return all;
}

bool parse_long(const std::string& s, long lo, long hi, long& out) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(s.c_str(), &end, 10);
  if (errno != 0 || end == s.c_str() || *end != '\0' || v < lo || v > hi) return false;
  out = v;
  return true;
}

struct Options {
  long keys = 16384, row_groups = 4, reps = 5;
  std::string only;
};

// 0: parsed; 1: --help printed; 2: usage error (printed). CLI11 parses; the values' ranges and
// the messages are the probe's.
int parse_options(int argc, char** argv, Options& opt) {
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      print_usage(stdout);
      return 1;
    }
  }
  for (int i = 1; i < argc; ++i) {  // "--reps=": CLI11 would take the next argument as the value
    const std::string a = argv[i];
    const bool known = a == "--keys=" || a == "--row-groups=" || a == "--reps=" || a == "--only=";
    if (known) {
      std::fprintf(stderr, "vattn_ceiling_probe: %s needs a value (--help)\n", a.substr(0, a.size() - 1).c_str());
      return 2;
    }
  }
  struct Numeric {
    const char* name;
    long* target;
    long lo, hi;
    std::string text;
  };
  Numeric numeric[] = {{"--keys", &opt.keys, kern::kKeysPerTile, kern::kMaxPrefix, ""},
                       {"--row-groups", &opt.row_groups, 1, 64, ""},
                       {"--reps", &opt.reps, 1, 1000, ""}};
  CLI::App app("vattn_ceiling_probe");
  app.set_help_flag();
  app.allow_extras();
  for (Numeric& n : numeric)
    app.add_option(n.name, n.text)
        ->expected(1)
        ->allow_extra_args(false)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--only", opt.only)
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ArgumentMismatch&) {  // an option as the last argument
    std::fprintf(stderr, "vattn_ceiling_probe: %s needs a value (--help)\n", argv[argc - 1]);
    return 2;
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "vattn_ceiling_probe: %s (--help)\n", e.what());
    return 2;
  }
  if (!app.remaining().empty()) {
    const std::string extra = app.remaining().front();
    if (extra.size() > 1 && extra[0] == '-')
      std::fprintf(stderr, "vattn_ceiling_probe: unknown option '%s' (--help lists them)\n",
                   extra.substr(0, extra.find('=')).c_str());
    else
      std::fprintf(stderr, "vattn_ceiling_probe: unexpected argument '%s' (it takes options only; --help)\n",
                   extra.c_str());
    return 2;
  }
  for (const char* name : {"--keys", "--row-groups", "--reps", "--only"}) {
    if (app.count(name) > 1) {
      std::fprintf(stderr, "vattn_ceiling_probe: %s given twice\n", name);
      return 2;
    }
  }
  for (const Numeric& n : numeric) {
    if (n.text.empty() && app.count(n.name) == 0) continue;
    if (!parse_long(n.text, n.lo, n.hi, *n.target) || (n.target == &opt.keys && opt.keys % kern::kKeysPerTile != 0)) {
      const std::string kind =
          n.target == &opt.keys ? "a multiple of " + std::to_string(kern::kKeysPerTile) : "an integer";
      std::fprintf(stderr, "vattn_ceiling_probe: %s needs %s in %ld..%ld (got '%s')\n", n.name, kind.c_str(), n.lo,
                   n.hi, n.text.c_str());
      return 2;
    }
  }
  if (app.count("--only") != 0) {
    bool known = false;
    for (const Variant& v : kVariants) known = known || opt.only == v.name;
    if (!known) {
      std::fprintf(stderr, "vattn_ceiling_probe: --only: unknown variant '%s' (variants: %s)\n", opt.only.c_str(),
                   variant_names().c_str());
      return 2;
    }
  }
  return 0;
}

int run(const Options& opt) {
  using namespace kern;
  cudaDeviceProp prop{};
  VATTN_CUDA(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  const int blocks = sms;  // one per SM: the launch asks for more than half an SM's shared memory
  const int requests = static_cast<int>((blocks + opt.row_groups - 1) / opt.row_groups);
  // 302 MB: past the L2, so each request's first pass comes from HBM. Each request's keys are
  // a random sample of the pool's rows, none twice within a request (requests overlap; their
  // scattered slots are what matters here, not which rows).
  constexpr int32_t pool_rows = 262144;
  static_assert(kMaxPrefix <= pool_rows, "--keys may ask for up to kMaxPrefix distinct rows");
  std::mt19937_64 rng(1);
  std::vector<int32_t> perm(static_cast<size_t>(pool_rows)), slots;
  slots.reserve(static_cast<size_t>(requests) * opt.keys);
  for (int r = 0; r < requests; ++r) {
    for (int32_t i = 0; i < pool_rows; ++i) perm[static_cast<size_t>(i)] = i;
    std::shuffle(perm.begin(), perm.end(), rng);
    slots.insert(slots.end(), perm.begin(), perm.begin() + opt.keys);
  }
  const size_t pool_elems = static_cast<size_t>(pool_rows) * kDqk;
  DeviceBuffer pool("kv_pool", pool_elems * 2), q("q", static_cast<size_t>(kQRows) * kDqk * 2);
  DeviceBuffer d_slots = upload_vector("slots", slots);
  // Per block: one float per thread (keeps the work alive), then the SM each block ran on.
  DeviceBuffer sink("sink", sizeof(float) * blocks * kThreads + sizeof(unsigned) * blocks);
  VATTN_CUDA(fill_bf16_random(pool.as<uint16_t>(), pool_elems, 1, 1.f, nullptr));
  VATTN_CUDA(fill_bf16_random(q.as<uint16_t>(), static_cast<size_t>(kQRows) * kDqk, 2, 1.f, nullptr));
  VATTN_CUDA(cudaDeviceSynchronize());
  const double peak = measure_mma_tflops(sms);

  cudaEvent_t e0 = nullptr, e1 = nullptr;
  VATTN_CUDA(cudaEventCreate(&e0));
  VATTN_CUDA(cudaEventCreate(&e1));
  std::printf("device %s (%d SMs); mma.sync bf16 peak measured now: %.0f TFLOP/s\n", prop.name, sms, peak);
  std::printf("%d blocks (one per SM) x %ld keys, %ld blocks per key range; median of %ld launches\n", blocks, opt.keys,
              opt.row_groups, opt.reps);
  std::printf("%-10s %5s %10s %14s %12s\n", "variant", "rows", "us", "ns/32 keys", "% mma peak");
  int failed = 0;
  const size_t half_sm = prop.sharedMemPerMultiprocessor / 2 + 1;
  for (const Variant& v : kVariants) {
    if (!opt.only.empty() && opt.only != v.name) continue;
    cudaFuncAttributes attr{};
    VATTN_CUDA(cudaFuncGetAttributes(&attr, reinterpret_cast<const void*>(v.kernel)));
    const size_t optin = prop.sharedMemPerBlockOptin - attr.sharedSizeBytes;  // dynamic bytes a launch may ask for
    if (v.smem > optin) {
      std::printf("%-10s needs %zu B of shared memory per block; this GPU allows %zu: not run\n", v.name, v.smem,
                  optin);
      ++failed;
      continue;
    }
    const size_t launch_smem = std::min(std::max(v.smem, half_sm), optin);
    VATTN_CUDA(cudaFuncSetAttribute(reinterpret_cast<const void*>(v.kernel),
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(launch_smem)));
    std::vector<float> ms;
    for (long rep = 0; rep <= opt.reps; ++rep) {  // launch 0 warms up
      VATTN_CUDA(cudaEventRecord(e0));
      v.kernel<<<blocks, kThreads, launch_smem>>>(pool.as<uint16_t>(), d_slots.as<int32_t>(), q.as<uint16_t>(),
                                                  static_cast<int>(opt.keys), static_cast<int>(opt.row_groups),
                                                  sink.as<float>());
      VATTN_CUDA(cudaGetLastError());
      VATTN_CUDA(cudaEventRecord(e1));
      VATTN_CUDA(cudaEventSynchronize(e1));
      float t = 0;
      VATTN_CUDA(cudaEventElapsedTime(&t, e0, e1));
      if (rep > 0) ms.push_back(t);
    }
    std::vector<unsigned> sm_of(static_cast<size_t>(blocks));
    VATTN_CUDA(cudaMemcpy(sm_of.data(), sink.as<unsigned char>() + sizeof(float) * blocks * kThreads,
                          sizeof(unsigned) * blocks, cudaMemcpyDeviceToHost));
    std::sort(sm_of.begin(), sm_of.end());
    const bool one_per_sm = std::adjacent_find(sm_of.begin(), sm_of.end()) == sm_of.end();
    std::sort(ms.begin(), ms.end());
    const double med = ms[ms.size() / 2];
    // The useful flops of the rows the variant's item holds (every mma it runs is useful).
    const double flops = static_cast<double>(blocks) * opt.keys * v.rows * 2.0 * (kDqk + kDv);
    const double tflops = flops / (med * 1e-3) / 1e12;
    std::printf("%-10s %5d %10.1f %14.1f %11.1f%%%s%s%s\n", v.name, v.rows, med * 1e3, med * 1e6 / (opt.keys / 32.0),
                100.0 * tflops / peak, v.math ? "" : "  (if the math were free)",
                v.smem <= 101376 ? "" : "  (over sm_120's 101376 B of shared memory)",
                one_per_sm ? "" : "  NOT VALID: two blocks shared an SM");
    failed += one_per_sm ? 0 : 1;
    std::fflush(stdout);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  for (const DeviceBuffer* b : {&pool, &q, &d_slots, &sink}) {
    const std::string damage = b->check_guards();
    if (!damage.empty()) {
      std::fprintf(stderr, "vattn_ceiling_probe: a kernel wrote outside its buffer: %s\n", damage.c_str());
      ++failed;
    }
  }
  return failed == 0 ? 0 : 1;
}

}  // namespace
}  // namespace vattn

int main(int argc, char** argv) {
  vattn::Options opt;
  const int parsed = vattn::parse_options(argc, argv, opt);
  if (parsed != 0) return parsed == 1 ? 0 : 2;
  if (vattn::cuda_device_count() == 0) {
    std::fprintf(stderr, "vattn_ceiling_probe: no CUDA device visible: nothing to measure\n");
    return 2;
  }
  try {
    return vattn::run(opt);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vattn_ceiling_probe: %s\n", e.what());
    return 1;
  }
}
