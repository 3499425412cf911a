// SPDX-License-Identifier: Apache-2.0
#include "vattn/gpu/bench_kernels.h"

#include <vector>

#include "vattn/gpu/cuda_check.h"

namespace vattn {
namespace {

__global__ void fill_kernel(uint16_t* dst, size_t count, uint64_t seed, float amp) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    uint64_t z = seed + 0x9e3779b97f4a7c15ull * (i + 1);  // splitmix64
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    const float u = static_cast<float>(z >> 40) * (1.0f / 16777216.0f);  // [0,1)
    const float v = (2.f * u - 1.f) * amp;
    dst[i] = static_cast<uint16_t>(__float_as_uint(v) >> 16);
  }
}

constexpr int kChains = 8;  // independent accumulators per warp: enough to hide mma latency

__global__ void mma_peak_kernel(int iters, float* sink) {
  uint32_t a[4], b[2];
  for (int i = 0; i < 4; ++i) a[i] = 0x3c003c00u + threadIdx.x + i;  // small normal bf16 pairs
  b[0] = 0x3c003c00u ^ threadIdx.x;
  b[1] = 0x3c003c01u;
  float d[kChains][4] = {};
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int c = 0; c < kChains; ++c)
      asm volatile(
          "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
          "{%0,%1,%2,%3};\n"
          : "+f"(d[c][0]), "+f"(d[c][1]), "+f"(d[c][2]), "+f"(d[c][3])
          : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
  float s = 0.f;
  for (int c = 0; c < kChains; ++c) s += d[c][0] + d[c][1] + d[c][2] + d[c][3];
  if (s == 12345.678f) *sink = s;  // keeps the loop alive; never true in practice
}

float time_ms(cudaEvent_t a, cudaEvent_t b) {
  float ms = 0.f;
  VATTN_CUDA(cudaEventElapsedTime(&ms, a, b));
  return ms;
}

}  // namespace

cudaError_t fill_bf16_random(uint16_t* dst, size_t count, uint64_t seed, float amp, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  fill_kernel<<<1024, 256, 0, stream>>>(dst, count, seed, amp);
  return cudaGetLastError();
}

double measure_mma_tflops(int sms) {
  float* sink = nullptr;
  VATTN_CUDA(cudaMalloc(&sink, sizeof(float)));
  cudaEvent_t e0, e1;
  VATTN_CUDA(cudaEventCreate(&e0));
  VATTN_CUDA(cudaEventCreate(&e1));
  const int blocks = sms * 4, threads = 256, iters = 20000;
  mma_peak_kernel<<<blocks, threads>>>(100, sink);  // warm-up
  VATTN_CUDA(cudaGetLastError());
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    VATTN_CUDA(cudaEventRecord(e0));
    mma_peak_kernel<<<blocks, threads>>>(iters, sink);
    VATTN_CUDA(cudaEventRecord(e1));
    VATTN_CUDA(cudaEventSynchronize(e1));
    const double flops = 4096.0 * kChains * iters * (static_cast<double>(blocks) * threads / 32);
    const double t = flops / (time_ms(e0, e1) * 1e-3) / 1e12;
    best = t > best ? t : best;
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaFree(sink);
  return best;
}

double measure_copy_gbps(size_t bytes) {
  void *src = nullptr, *dst = nullptr;
  VATTN_CUDA(cudaMalloc(&src, bytes));
  VATTN_CUDA(cudaMalloc(&dst, bytes));
  VATTN_CUDA(cudaMemset(src, 1, bytes));
  cudaEvent_t e0, e1;
  VATTN_CUDA(cudaEventCreate(&e0));
  VATTN_CUDA(cudaEventCreate(&e1));
  VATTN_CUDA(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice));
  std::vector<float> ms;
  for (int rep = 0; rep < 5; ++rep) {
    VATTN_CUDA(cudaEventRecord(e0));
    VATTN_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice));
    VATTN_CUDA(cudaEventRecord(e1));
    VATTN_CUDA(cudaEventSynchronize(e1));
    ms.push_back(time_ms(e0, e1));
  }
  float best = ms[0];
  for (float m : ms) best = m < best ? m : best;
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaFree(src);
  cudaFree(dst);
  return 2.0 * static_cast<double>(bytes) / (best * 1e-3) / 1e9;
}

}  // namespace vattn
