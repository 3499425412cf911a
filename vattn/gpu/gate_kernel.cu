// SPDX-License-Identifier: Apache-2.0
#include "vattn/gpu/gate_kernel.h"

#include <cuda_runtime.h>

namespace vattn {

namespace {

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void gate_kernel(unsigned long long ns) {
  const unsigned long long start = global_ns();
  while (global_ns() - start < ns) __nanosleep(10000);  // sleep: leave the SM's issue slots to others
}

}  // namespace

cudaError_t launch_gate(cudaStream_t stream, unsigned long long microseconds) {
  gate_kernel<<<1, 1, 0, stream>>>(microseconds * 1000ull);
  return cudaGetLastError();
}

}  // namespace vattn
