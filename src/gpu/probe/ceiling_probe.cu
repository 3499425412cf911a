// vattn_ceiling_probe: how fast could split-v1's work item (32 query rows x 32-key tiles,
// 8 warps, two cp.async stages, 99 KB of shared memory) go if parts of its tile loop were
// free? The probe runs the item's tile loop on synthetic data with parts switched off:
//   copy         the two-stage cp.async stream of scattered KV rows, no math;
//   math         S = Q K^T and O += P V with their ldmatrix traffic, on a resident tile;
//   copy+math    both, with the two block barriers the decomposition cannot drop (P needs
//                every warp's S partial; a stage is refilled only after every warp used it);
//   full         copy+math plus what split-v1 adds per tile: the S exchange through shared
//                memory, the online softmax and the rescale (no masks, no guards);
//   copy-xN      the stream alone with N stages (N - 1 tiles in flight): where it stops
//                getting faster, the stream is bandwidth-bound, and no schedule of a
//                32-row item can beat that line;
//   w48*         a first, untuned probe of a wider item (48 rows, 16-key tiles), below.
// `full` calibrates the probe against `vattn bench`. Timing only: nothing is checked.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "bench_kernels.h"
#include "mma_sm80.cuh"
#include "split_params.h"
#include "split_tile.cuh"

namespace vattn::kern {
namespace {

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

  const TileLane l = tile_lane();
  const int copy_row = threadIdx.x >> 3, copy_ch = threadIdx.x & 7;
  const int32_t* req_slots = slots + static_cast<int64_t>(blockIdx.x / row_groups) * keys;
  const int ntiles = keys / kKeysPerTile;

  uint32_t qf[2][kKSteps][4];
  const bool all_rows[2][2] = {{true, true}, {true, true}};
  load_q(qf, q, 0, all_rows, l);
  float o[2][8][4] = {};
  float m_run = -INFINITY, l_run = 0.f;
  if (!kSoftmax)  // a fixed P: the P.V traffic and mma without a softmax to produce it
    for (int i = threadIdx.x; i < kRowsPerTile * kPStride; i += kThreads) s_p[i] = 0x3d00;  // bf16 1/32
  if (!kCopy)  // the math alone works on zeros, not on whatever the shared memory held
    for (int i = threadIdx.x; i < kStages * kKeysPerTile * kSmemStride; i += kThreads) s_kv[i] = 0;

  auto source = [&](int tile) {
    return pool + static_cast<int64_t>(__ldg(req_slots + tile * kKeysPerTile + copy_row)) * kDqk + copy_ch * 8;
  };
  auto issue = [&](int tile, const uint16_t* src, int i0, int i1) {
    uint16_t* to = s_kv + (tile % kStages) * kKeysPerTile * kSmemStride + copy_row * kSmemStride + copy_ch * 8;
#pragma unroll
    for (int i = 0; i < kChunksPerRow / 8; ++i)
      if (i >= i0 && i < i1) cp_async_16(to + 64 * i, src + 64 * i, true);
  };
  if (kCopy) {
    issue(0, source(0), 0, 9);
    cp_async_commit();
    if (ntiles > 1) issue(1, source(1), 0, 9);
    cp_async_commit();
  }
  const uint16_t* next_src = pool;  // the row of tile it + 1, issued during tile it >= 1

  for (int it = 0; it < ntiles; ++it) {
    // Loaded a tile ahead of its use, as split-v1 does with its kv_indices.
    const int32_t slot_after = kCopy && it + 2 < ntiles ? __ldg(req_slots + (it + 2) * kKeysPerTile + copy_row) : 0;
    if (kCopy) {
      if (it < 2)
        cp_async_wait<1>();
      else
        cp_async_wait<0>();
    }
    __syncthreads();
    const bool load_next = kCopy && it >= 1 && it + 1 < ntiles;
    const uint16_t* kv = s_kv + (it % kStages) * kKeysPerTile * kSmemStride;
    if (kMath) {
      float acc[2][2][4] = {};
#pragma unroll
      for (int ks = 0; ks < kKSteps; ++ks) {
        s_kstep(acc, qf, kv, l, ks);
        if (ks == 0 && load_next) issue(it + 1, next_src, 0, 2);  // where split-v1 puts its copies
        if (ks == 4 && load_next) issue(it + 1, next_src, 2, 5);
      }
      if (kSoftmax || l.dq == 0) store_partial(s_x, acc, l);  // without the softmax one partial is kept
    } else if (load_next) {
      issue(it + 1, next_src, 0, 5);
    }
    if (kSoftmax) {
      __syncthreads();
      float sc[4];
      sum_partials(sc, s_x, l);
#pragma unroll
      for (int e = 0; e < 4; ++e) sc[e] *= 0.0601f;  // the kernel's sm_scale * log2(e) for d_qk 576
      online_softmax(sc, m_run, l_run, s_p, s_corr, l);
    }
    if (load_next) issue(it + 1, next_src, 5, 9);
    if (kCopy) cp_async_commit();
    __syncthreads();
    if (kMath) {
      if (kSoftmax) rescale_o(o, s_corr, l);
      pv_mma(o, s_p, kv, l);
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
  const int copy_row = threadIdx.x >> 3, copy_ch = threadIdx.x & 7;
  const int32_t* req_slots = slots + static_cast<int64_t>(blockIdx.x / row_groups) * keys;
  const int ntiles = keys / kKeysPerTile;
  auto issue = [&](int tile) {
    if (tile < ntiles) {
      const uint16_t* src =
          pool + static_cast<int64_t>(__ldg(req_slots + tile * kKeysPerTile + copy_row)) * kDqk + copy_ch * 8;
      uint16_t* to = s_kv + (tile % kDepth) * kKeysPerTile * kSmemStride + copy_row * kSmemStride + copy_ch * 8;
#pragma unroll
      for (int i = 0; i < kChunksPerRow / 8; ++i) cp_async_16(to + 64 * i, src + 64 * i, true);
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

// A wider item, for comparison: 48 query rows (3 mma row blocks) per KV byte, 16-key tiles,
// kSt stages (kSt - 1 tiles in flight). Every warp keeps Q for all 48 rows over its own
// share of d_qk (k-steps 5,5,5,5,4,4,4,4: Q is held once, not twice as in split-v1) and O
// for 64 output columns of all 48 rows. kExchange: all eight S partials go through shared memory and are summed into P
// (no exp: a lower bound on the softmax's cost); otherwise P is fixed and one partial is kept.
constexpr int kWideRows = 48, kWideKeys = 16, kWideMaxSteps = 5;
constexpr int kWideXStride = kWideKeys + 4, kWidePStride = kWideKeys + 8;
constexpr size_t kWideSmem(int stages) {
  return sizeof(uint16_t) * stages * kWideKeys * kSmemStride + sizeof(float) * 8 * kWideRows * kWideXStride +
         sizeof(uint16_t) * kWideRows * kWidePStride;
}
static_assert(kWideSmem(3) <= 101376, "the wide item must fit sm_120's shared memory");

template <int kSt, bool kCopy, bool kMath, bool kExchange>
__global__ void __launch_bounds__(kThreads, 1)
    wide_kernel(const uint16_t* __restrict__ pool, const int32_t* __restrict__ slots, const uint16_t* __restrict__ q,
                int keys, int row_groups, float* sink) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  uint16_t* s_kv = reinterpret_cast<uint16_t*>(smem_raw);
  float* s_x = reinterpret_cast<float*>(smem_raw + sizeof(uint16_t) * kSt * kWideKeys * kSmemStride);
  uint16_t* s_p = reinterpret_cast<uint16_t*>(s_x + 8 * kWideRows * kWideXStride);
  constexpr int kAhead = kSt - 1;  // tiles in flight while one is computed
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, t4 = lane & 3, mat = lane >> 3, mrow = lane & 7;
  const int step0 = warp < 4 ? warp * 5 : 20 + (warp - 4) * 4, nsteps = warp < 4 ? 5 : 4;
  const int copy_row = threadIdx.x >> 4, copy_ch = threadIdx.x & 15;  // 16 threads per row, 4-5 chunks each
  const int32_t* req_slots = slots + static_cast<int64_t>(blockIdx.x / row_groups) * keys;
  const int ntiles = keys / kWideKeys;

  uint32_t qf[3][kWideMaxSteps][4];
#pragma unroll
  for (int mt = 0; mt < 3; ++mt)
#pragma unroll
    for (int j = 0; j < kWideMaxSteps; ++j) {
      const uint32_t* lo = reinterpret_cast<const uint32_t*>(q + (mt * 16 + g) * kDqk);
      const uint32_t* hi = lo + 8 * kDqk / 2;
      const int w = ((step0 + (j < nsteps ? j : 0)) * 16 + 2 * t4) >> 1;
      qf[mt][j][0] = __ldg(lo + w);
      qf[mt][j][1] = __ldg(hi + w);
      qf[mt][j][2] = __ldg(lo + w + 4);
      qf[mt][j][3] = __ldg(hi + w + 4);
    }
  float o[3][8][4] = {};
  for (int i = threadIdx.x; i < kWideRows * kWidePStride; i += kThreads) s_p[i] = 0x3d00;  // bf16 1/32
  if (!kCopy)
    for (int i = threadIdx.x; i < kSt * kWideKeys * kSmemStride; i += kThreads) s_kv[i] = 0;

  // Pool slots are loaded a tile before their copies are issued (as split-v1 does).
  auto slot_of_row = [&](int tile) {
    return kCopy && tile < ntiles ? __ldg(req_slots + tile * kWideKeys + copy_row) : 0;
  };
  // Chunks [i0, i1) of this thread's five (the fifth only for copy_ch < 8) of a tile.
  auto issue = [&](int tile, int32_t slot, int i0, int i1) {
    if (kCopy && tile < ntiles) {
      const uint16_t* src = pool + static_cast<int64_t>(slot) * kDqk + copy_ch * 8;
      uint16_t* to = s_kv + (tile % kSt) * kWideKeys * kSmemStride + copy_row * kSmemStride + copy_ch * 8;
#pragma unroll
      for (int i = 0; i < 5; ++i)
        if (i >= i0 && i < i1 && copy_ch + 16 * i < kChunksPerRow) cp_async_16(to + 128 * i, src + 128 * i, true);
    }
  };
  for (int t = 0; t < kAhead; ++t) {
    issue(t, slot_of_row(t), 0, 5);
    if (kCopy) cp_async_commit();
  }
  int32_t slot_next = slot_of_row(kAhead);
  for (int it = 0; it < ntiles; ++it) {
    const int32_t slot_after = slot_of_row(it + kAhead + 1);
    if (kCopy) cp_async_wait<kAhead - 1>();
    __syncthreads();  // tile it is in; every warp is past tile it - 1, whose stage tile it + kAhead takes
    const uint16_t* kv = s_kv + (it % kSt) * kWideKeys * kSmemStride;
    if (!kMath) {
      issue(it + kAhead, slot_next, 0, 5);
      cp_async_commit();
      slot_next = slot_after;
      __syncthreads();
      continue;
    }
    float acc[3][2][4] = {};
#pragma unroll
    for (int j = 0; j < kWideMaxSteps; ++j) {
      if (j < nsteps) {
        uint32_t bk[4];
        ldmatrix_x4(bk, kv + ((mat >> 1) * 8 + mrow) * kSmemStride + (step0 + j) * 16 + (mat & 1) * 8);
#pragma unroll
        for (int mt = 0; mt < 3; ++mt) {
          mma_bf16_16816(acc[mt][0], qf[mt][j], bk[0], bk[1]);
          mma_bf16_16816(acc[mt][1], qf[mt][j], bk[2], bk[3]);
        }
      }
      if (j < 4) issue(it + kAhead, slot_next, j, j + 1);  // spread over the S steps, as split-v1 does
    }
    issue(it + kAhead, slot_next, 4, 5);
    if (kCopy) cp_async_commit();
    slot_next = slot_after;
    if (kExchange || warp == 0) {
      float* x = s_x + warp * kWideRows * kWideXStride;
#pragma unroll
      for (int mt = 0; mt < 3; ++mt)
#pragma unroll
        for (int n = 0; n < 2; ++n)
#pragma unroll
          for (int h = 0; h < 2; ++h)
            *reinterpret_cast<float2*>(x + (mt * 16 + g + 8 * h) * kWideXStride + n * 8 + 2 * t4) =
                make_float2(acc[mt][n][2 * h], acc[mt][n][2 * h + 1]);
    }
    if (kExchange) {
      __syncthreads();
      for (int e = threadIdx.x; e < kWideRows * kWideKeys / 2; e += kThreads) {  // two keys per thread and step
        const int row = e / (kWideKeys / 2), key = (e % (kWideKeys / 2)) * 2;
        float2 sum = make_float2(0.f, 0.f);
#pragma unroll
        for (int w = 0; w < 8; ++w) {
          const float2 v = *reinterpret_cast<const float2*>(s_x + (w * kWideRows + row) * kWideXStride + key);
          sum.x += v.x;
          sum.y += v.y;
        }
        *reinterpret_cast<uint32_t*>(s_p + row * kWidePStride + key) = pack_bf16x2(sum.x * 1e-3f, sum.y * 1e-3f);
      }
    }
    __syncthreads();  // P is in
    uint32_t pa[3][4];
#pragma unroll
    for (int mt = 0; mt < 3; ++mt)
      ldmatrix_x4(pa[mt], s_p + (mt * 16 + (mat & 1) * 8 + mrow) * kWidePStride + (mat >> 1) * 8);
#pragma unroll
    for (int np = 0; np < 4; ++np) {
      uint32_t bv[4];
      ldmatrix_x4_trans(bv, kv + ((mat & 1) * 8 + mrow) * kSmemStride + warp * 64 + np * 16 + (mat >> 1) * 8);
#pragma unroll
      for (int mt = 0; mt < 3; ++mt) {
        mma_bf16_16816(o[mt][2 * np], pa[mt], bv[0], bv[1]);
        mma_bf16_16816(o[mt][2 * np + 1], pa[mt], bv[2], bv[3]);
      }
    }
  }
  float total = 0.f;
#pragma unroll
  for (int mt = 0; mt < 3; ++mt)
#pragma unroll
    for (int n = 0; n < 8; ++n) total += o[mt][n][0] + o[mt][n][1] + o[mt][n][2] + o[mt][n][3];
  sink[blockIdx.x * kThreads + threadIdx.x] = total;
}

struct Variant {
  const char* name;
  void (*kernel)(const uint16_t*, const int32_t*, const uint16_t*, int, int, float*);
  bool math;    // false: the stream alone; the % column then says what it would allow
  int rows;     // query rows per KV byte
  size_t smem;  // dynamic shared memory per block
};
constexpr size_t kStreamSmem(int stages) { return sizeof(uint16_t) * stages * kKeysPerTile * kSmemStride; }
const Variant kVariants[] = {
    {"copy", probe_kernel<true, false, false>, false, kRowsPerTile, kSmemBytes},
    {"math", probe_kernel<false, true, false>, true, kRowsPerTile, kSmemBytes},
    {"copy+math", probe_kernel<true, true, false>, true, kRowsPerTile, kSmemBytes},
    {"full", probe_kernel<true, true, true>, true, kRowsPerTile, kSmemBytes},
    {"copy-x2", stream_kernel<2>, false, kRowsPerTile, kStreamSmem(2)},
    {"copy-x3", stream_kernel<3>, false, kRowsPerTile, kStreamSmem(3)},
    {"copy-x4", stream_kernel<4>, false, kRowsPerTile, kStreamSmem(4)},
    {"w48:copy", wide_kernel<3, true, false, false>, false, kWideRows, kWideSmem(3)},
    {"w48:math", wide_kernel<3, false, true, false>, true, kWideRows, kWideSmem(3)},
    {"w48:c+m", wide_kernel<3, true, true, false>, true, kWideRows, kWideSmem(3)},
    {"w48:c+m+x", wide_kernel<3, true, true, true>, true, kWideRows, kWideSmem(3)},
    {"w48s2:copy", wide_kernel<2, true, false, false>, false, kWideRows, kWideSmem(2)},
    {"w48s2:c+m", wide_kernel<2, true, true, false>, true, kWideRows, kWideSmem(2)},
    {"w48s4:c+m", wide_kernel<4, true, true, false>, true, kWideRows, kWideSmem(4)},
};

bool ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "vattn_ceiling_probe: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

// splitmix64: the pool slot of key k of request r (scattered like a paged KV cache).
int32_t slot_of(uint64_t r, uint64_t k, int32_t pool_rows) {
  uint64_t z = 0x9e3779b97f4a7c15ull * (r * 1000003ull + k + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return static_cast<int32_t>((z ^ (z >> 31)) % static_cast<uint64_t>(pool_rows));
}

const char* kUsage =
    "usage: vattn_ceiling_probe [--keys N] [--row-groups G] [--reps R] [--only VARIANT]\n"
    "\n"
    "Runs split-v1's tile loop (32 query rows x 32-key tiles, 8 warps, two cp.async stages)\n"
    "on synthetic data with parts of it switched off, one block per SM, and prints each\n"
    "variant's time per 32 keys and the share of the mma.sync peak (measured in the same\n"
    "run) that its item's mma reach (flops of the rows it holds, 2 x 1088 per row and key):\n"
    "  copy       the KV stream alone (scattered 1152 B rows, cp.async, two stages)\n"
    "  math       S = Q K^T and O += P V with their ldmatrix traffic, tile resident\n"
    "  copy+math  both, with the two barriers per tile the decomposition needs\n"
    "  full       plus the S exchange, online softmax and rescale (as split-v1)\n"
    "  copy-xN    the KV stream alone, N stages, N-1 tiles in flight (N x 37 KB of\n"
    "             shared memory: N > 2 is more than sm_120 allows); where more stages\n"
    "             stop helping, the stream is bandwidth-bound: no schedule of a\n"
    "             32-row item gets past that line\n"
    "  w48*       a first, untuned probe of a 48-row item (16-key tiles; w48: three\n"
    "             stages, w48s2 / w48s4: two / four)\n"
    "full calibrates the probe against `vattn bench` (split-v1: 25-28% of the\n"
    "roofline at large P). kernels/PERF.md has the H200 numbers and what they mean.\n"
    "\n"
    "  --keys N        keys per block, a multiple of 32 (default 16384)\n"
    "  --row-groups G  blocks that read the same keys, like a request's 32-row tiles\n"
    "                  (default 4: T=16 x H=8 rows)\n"
    "  --reps R        timed launches per variant, median reported (default 5)\n"
    "  --only VARIANT  run one variant (e.g. under ncu)\n"
    "Exit status: 0 measured, 2 usage error, 1 CUDA error or no GPU.\n";

bool parse_int(const char* s, long lo, long hi, long& out) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) return false;
  out = v;
  return true;
}

int run(int argc, char** argv) {
  long keys = 16384, row_groups = 4, reps = 5;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (arg == "--only") {
      bool known = false;
      for (const Variant& v : kVariants) known = known || (i + 1 < argc && v.name == std::string(argv[i + 1]));
      if (!known) {
        std::fprintf(stderr, "vattn_ceiling_probe: --only needs a variant name (see --help)%s%s%s\n",
                     i + 1 < argc ? "; got '" : "", i + 1 < argc ? argv[i + 1] : "", i + 1 < argc ? "'" : "");
        return 2;
      }
      only = argv[++i];
      continue;
    }
    long* target = arg == "--keys" ? &keys : arg == "--row-groups" ? &row_groups : arg == "--reps" ? &reps : nullptr;
    const long hi = arg == "--keys" ? kMaxPrefix : arg == "--row-groups" ? 64 : 1000;
    if (target == nullptr) {
      std::fprintf(stderr, "vattn_ceiling_probe: unknown option '%s'\n\n%s", argv[i], kUsage);
      return 2;
    }
    if (i + 1 >= argc || !parse_int(argv[i + 1], 1, hi, *target)) {
      std::fprintf(stderr, "vattn_ceiling_probe: %s needs an integer in 1..%ld%s%s%s\n", arg.c_str(), hi,
                   i + 1 < argc ? " (got '" : "", i + 1 < argc ? argv[i + 1] : "", i + 1 < argc ? "')" : "");
      return 2;
    }
    ++i;
  }
  if (keys % kKeysPerTile != 0) {  // (the wide item's 16-key tiles divide it too)
    std::fprintf(stderr, "vattn_ceiling_probe: --keys %ld is not a multiple of %d\n", keys, kKeysPerTile);
    return 2;
  }
  int dev = 0, sms = 0;
  if (!ok(cudaGetDevice(&dev), "no usable GPU") ||
      !ok(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "device query"))
    return 1;
  cudaDeviceProp prop{};
  if (!ok(cudaGetDeviceProperties(&prop, dev), "device query")) return 1;

  const int blocks = sms;
  const int requests = static_cast<int>((blocks + row_groups - 1) / row_groups);
  const int32_t pool_rows = 262144;  // 302 MB: the stream comes from HBM, each row once per request
  std::vector<int32_t> slots(static_cast<size_t>(requests) * keys);
  for (int r = 0; r < requests; ++r)
    for (long k = 0; k < keys; ++k) slots[static_cast<size_t>(r) * keys + k] = slot_of(r, k, pool_rows);

  uint16_t *pool = nullptr, *q = nullptr;
  int32_t* d_slots = nullptr;
  float* sink = nullptr;
  const size_t pool_elems = static_cast<size_t>(pool_rows) * kDqk;
  bool good = ok(cudaMalloc(&pool, pool_elems * 2), "cudaMalloc pool") &&
              ok(cudaMalloc(&q, kRowsPerTile * kDqk * 2), "cudaMalloc q") &&
              ok(cudaMalloc(&d_slots, slots.size() * sizeof(int32_t)), "cudaMalloc slots") &&
              ok(cudaMalloc(&sink, sizeof(float) * blocks * kThreads), "cudaMalloc sink") &&
              ok(fill_bf16_random(pool, pool_elems, 1, 1.f, nullptr), "fill pool") &&
              ok(fill_bf16_random(q, kRowsPerTile * kDqk, 2, 1.f, nullptr), "fill q") &&
              ok(cudaMemcpy(d_slots, slots.data(), slots.size() * sizeof(int32_t), cudaMemcpyHostToDevice),
                 "copy slots") &&
              ok(cudaDeviceSynchronize(), "fill");
  const double peak = good ? measure_mma_tflops(sms) : 0;
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  good = good && ok(cudaEventCreate(&e0), "event") && ok(cudaEventCreate(&e1), "event");
  if (good) {
    std::printf("device %s (%d SMs); mma.sync bf16 peak measured now: %.0f TFLOP/s\n", prop.name, sms, peak);
    std::printf("%d blocks (one per SM) x %ld keys, %ld blocks per key range; median of %ld launches\n", blocks, keys,
                row_groups, reps);
    std::printf("%-10s %5s %10s %14s %12s\n", "variant", "rows", "us", "ns/32 keys", "% mma peak");
  }
  for (const Variant& v : kVariants) {
    if (!good) break;
    if (!only.empty() && only != v.name) continue;
    const size_t smem = v.smem;
    if (smem > static_cast<size_t>(prop.sharedMemPerBlockOptin)) {
      std::printf("%-10s needs %zu B of shared memory per block; this GPU allows %zu: not run\n", v.name, smem,
                  static_cast<size_t>(prop.sharedMemPerBlockOptin));
      continue;
    }
    good = ok(cudaFuncSetAttribute(reinterpret_cast<const void*>(v.kernel),
                                   cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)),
              "cudaFuncSetAttribute");
    std::vector<float> ms;
    for (long rep = 0; good && rep <= reps; ++rep) {  // launch 0 warms up
      good = ok(cudaEventRecord(e0), "event");
      v.kernel<<<blocks, kThreads, smem>>>(pool, d_slots, q, static_cast<int>(keys), static_cast<int>(row_groups),
                                                  sink);
      good = good && ok(cudaGetLastError(), v.name) && ok(cudaEventRecord(e1), "event") &&
             ok(cudaEventSynchronize(e1), v.name);
      float t = 0;
      good = good && ok(cudaEventElapsedTime(&t, e0, e1), "event");
      if (good && rep > 0) ms.push_back(t);
    }
    if (!good) break;
    std::sort(ms.begin(), ms.end());
    const double med = ms[ms.size() / 2];
    // The useful flops of the rows the variant's item holds (every mma it runs is useful).
    const double flops = static_cast<double>(blocks) * keys * v.rows * 2.0 * (kDqk + kDv);
    const double tflops = flops / (med * 1e-3) / 1e12;
    std::printf("%-10s %5d %10.1f %14.1f %11.1f%%%s%s\n", v.name, v.rows, med * 1e3, med * 1e6 / (keys / 32.0),
                100.0 * tflops / peak, v.math ? "" : "  (if the math were free)",
                smem <= 101376 ? "" : "  (over sm_120's 101376 B of shared memory)");
    std::fflush(stdout);
  }
  if (e0) cudaEventDestroy(e0);
  if (e1) cudaEventDestroy(e1);
  cudaFree(pool);
  cudaFree(q);
  cudaFree(d_slots);
  cudaFree(sink);
  return good ? 0 : 1;
}

}  // namespace
}  // namespace vattn::kern

int main(int argc, char** argv) { return vattn::kern::run(argc, argv); }
