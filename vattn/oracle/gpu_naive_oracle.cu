// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <cmath>

#include "vattn/oracle/gpu_naive_oracle.h"

namespace vattn {
namespace {

constexpr int kWarpsPerBlock = 4;
constexpr int kMaxDv = 512;  // accumulators live in registers: 16 per lane

__device__ float bf16_to_f32(uint16_t b) { return __uint_as_float(static_cast<uint32_t>(b) << 16); }

__device__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Row of KV that key k of request b is, or null when row i may not see it.
__device__ const uint16_t* visible_key(const NaiveGpuArgs& a, int b, int i, int k) {
  const int P = a.kv_indptr[b + 1] - a.kv_indptr[b];
  if (k < P) return a.kv_pool + static_cast<int64_t>(a.kv_indices[a.kv_indptr[b] + k]) * a.d_qk;
  const int T = a.qo_indptr[b + 1] - a.qo_indptr[b];
  const int j = k - P;
  if (!a.mask[a.mask_indptr[b] + static_cast<int64_t>(i) * T + j]) return nullptr;
  return a.kv_draft + static_cast<int64_t>(a.qo_indptr[b] + j) * a.d_qk;
}

__device__ float logit(const NaiveGpuArgs& a, const uint16_t* qrow, const uint16_t* krow) {
  float acc = 0.f;
  for (int d = threadIdx.x % 32; d < a.d_qk; d += 32) acc += bf16_to_f32(qrow[d]) * bf16_to_f32(krow[d]);
  return warp_sum(acc) * a.sm_scale;
}

__device__ float abs_logit(const NaiveGpuArgs& a, const uint16_t* qrow, const uint16_t* krow) {
  float acc = 0.f;
  for (int d = threadIdx.x % 32; d < a.d_qk; d += 32) acc += fabsf(bf16_to_f32(qrow[d]) * bf16_to_f32(krow[d]));
  return warp_sum(acc) * a.sm_scale;
}

// One warp per (draft row, head, chunk of kChunkKeys keys): the chunk's max logit, then its
// float32 weights relative to that max summed in float64. A long row is spread over many warps
// (one warp walking 262144 keys alone is latency-bound: ~0.3 s); merge_kernel combines the chunks
// exactly in float64. Same arithmetic class as one pass over the row: float32 logits and weights,
// float64 sums.
constexpr int kChunkKeys = 2048;

struct ChunkHead {
  float m, scale_max;
  int nan_seen;
  int pad;
  double l;
};

__device__ int64_t chunk_stride(const NaiveGpuArgs& a) {
  // ChunkHead, then acc[d_v] and acc_abs[d_v] (doubles)
  return static_cast<int64_t>(sizeof(ChunkHead) / sizeof(double)) + 2 * a.d_v;
}

__global__ void chunk_kernel(const NaiveGpuArgs a, int chunks, double* scratch) {
  const int64_t warp = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (warp >= a.n_q * a.num_heads * chunks) return;
  const int64_t row = warp / chunks;  // (draft, head)
  const int chunk = static_cast<int>(warp % chunks);
  const int64_t qrow_index = row / a.num_heads;
  int b = 0;
  while (a.qo_indptr[b + 1] <= qrow_index) ++b;
  const int i = static_cast<int>(qrow_index - a.qo_indptr[b]);
  const int keys = (a.kv_indptr[b + 1] - a.kv_indptr[b]) + (a.qo_indptr[b + 1] - a.qo_indptr[b]);
  const int k0 = chunk * kChunkKeys, k1 = min(keys, k0 + kChunkKeys);
  const uint16_t* qrow = a.q + row * a.d_qk;
  const int lane = threadIdx.x % 32;

  // Pass 1: the chunk's max logit. Pass 2: weights, their sum, and the weighted V rows.
  float m = -INFINITY, scale_max = 0.f;
  bool nan_seen = false;
  for (int k = k0; k < k1; ++k) {
    const uint16_t* krow = visible_key(a, b, i, k);
    if (!krow) continue;
    const float s = logit(a, qrow, krow);
    nan_seen |= isnan(s);
    m = fmaxf(m, s);
    if (a.lse_scale) scale_max = fmaxf(scale_max, abs_logit(a, qrow, krow));
  }
  double acc[kMaxDv / 32] = {}, acc_abs[kMaxDv / 32] = {};
  double l = 0.0;  // float32 terms, float64 sums: a 262144-key row must not drift
  if (m != -INFINITY) {
    for (int k = k0; k < k1; ++k) {
      const uint16_t* krow = visible_key(a, b, i, k);
      if (!krow) continue;
      const float w = expf(logit(a, qrow, krow) - m);
      l += w;
#pragma unroll
      for (int j = 0; j < kMaxDv / 32; ++j)
        if (lane + 32 * j < a.d_v) {
          const float v = bf16_to_f32(krow[lane + 32 * j]);
          acc[j] += w * v;
          acc_abs[j] += w * fabsf(v);
        }
    }
  }
  double* part = scratch + warp * chunk_stride(a);
  if (lane == 0) {
    ChunkHead h{m, scale_max, nan_seen ? 1 : 0, 0, l};
    *reinterpret_cast<ChunkHead*>(part) = h;
  }
  double* pacc = part + sizeof(ChunkHead) / sizeof(double);
#pragma unroll
  for (int j = 0; j < kMaxDv / 32; ++j)
    if (lane + 32 * j < a.d_v) {
      pacc[lane + 32 * j] = acc[j];
      pacc[a.d_v + lane + 32 * j] = acc_abs[j];
    }
}

// One warp per (draft row, head): the chunks rescaled to the row's max and summed, in float64.
__global__ void merge_kernel(const NaiveGpuArgs a, int chunks, const double* scratch) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (row >= a.n_q * a.num_heads) return;
  const int lane = threadIdx.x % 32;
  const int64_t stride = chunk_stride(a);
  float m = -INFINITY, scale_max = 0.f;
  bool nan_seen = false;
  for (int c = 0; c < chunks; ++c) {
    const ChunkHead h = *reinterpret_cast<const ChunkHead*>(scratch + (row * chunks + c) * stride);
    m = fmaxf(m, h.m);
    scale_max = fmaxf(scale_max, h.scale_max);
    nan_seen |= h.nan_seen != 0;
  }
  float* out = a.out + row * a.d_v;
  float* abs_pv = a.abs_pv ? a.abs_pv + row * a.d_v : nullptr;
  if (lane == 0 && a.lse_scale) a.lse_scale[row] = scale_max;
  if (m == -INFINITY && !nan_seen) {  // nothing visible
    for (int c = lane; c < a.d_v; c += 32) {
      out[c] = 0.f;
      if (abs_pv) abs_pv[c] = 0.f;
    }
    if (lane == 0) a.lse[row] = -INFINITY;
    return;
  }
  double acc[kMaxDv / 32] = {}, acc_abs[kMaxDv / 32] = {};
  double l = 0.0;
  for (int c = 0; c < chunks; ++c) {
    const double* part = scratch + (row * chunks + c) * stride;
    const ChunkHead h = *reinterpret_cast<const ChunkHead*>(part);
    if (h.m == -INFINITY) continue;  // an empty chunk (or one this row sees nothing of)
    const double f = exp(static_cast<double>(h.m) - static_cast<double>(m));
    l += f * h.l;
    const double* pacc = part + sizeof(ChunkHead) / sizeof(double);
#pragma unroll
    for (int j = 0; j < kMaxDv / 32; ++j)
      if (lane + 32 * j < a.d_v) {
        acc[j] += f * pacc[lane + 32 * j];
        acc_abs[j] += f * pacc[a.d_v + lane + 32 * j];
      }
  }
#pragma unroll
  for (int j = 0; j < kMaxDv / 32; ++j)
    if (lane + 32 * j < a.d_v) {
      out[lane + 32 * j] = nan_seen ? NAN : static_cast<float>(acc[j] / l);
      if (abs_pv) abs_pv[lane + 32 * j] = static_cast<float>(acc_abs[j] / l);
    }
  if (lane == 0) a.lse[row] = nan_seen ? NAN : static_cast<float>(m + log(l));
}

}  // namespace

cudaError_t naive_gpu_attention(const NaiveGpuArgs& args, cudaStream_t stream) {
  const int64_t rows = args.n_q * args.num_heads;
  if (rows == 0) return cudaSuccess;
  if (args.d_v > kMaxDv || args.d_v > args.d_qk) return cudaErrorInvalidValue;
  const int chunks = static_cast<int>(std::max<int64_t>(1, (args.max_keys + kChunkKeys - 1) / kChunkKeys));
  const int64_t warps = rows * chunks;
  const size_t bytes = static_cast<size_t>(warps) * (sizeof(ChunkHead) + 2 * sizeof(double) * args.d_v);
  double* scratch = nullptr;
  if (cudaError_t e = cudaMallocAsync(reinterpret_cast<void**>(&scratch), bytes, stream); e != cudaSuccess) return e;
  chunk_kernel<<<static_cast<unsigned>((warps + kWarpsPerBlock - 1) / kWarpsPerBlock), 32 * kWarpsPerBlock, 0,
                 stream>>>(args, chunks, scratch);
  merge_kernel<<<static_cast<unsigned>((rows + kWarpsPerBlock - 1) / kWarpsPerBlock), 32 * kWarpsPerBlock, 0, stream>>>(
      args, chunks, scratch);
  const cudaError_t launch = cudaGetLastError();
  const cudaError_t freed = cudaFreeAsync(scratch, stream);
  return launch != cudaSuccess ? launch : freed;
}

}  // namespace vattn
