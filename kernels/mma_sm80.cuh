// SPDX-License-Identifier: Apache-2.0
// The sm_80-class instructions the kernel is built from: mma.sync (bf16 m16n8k16, fp32
// accumulate), ldmatrix, cp.async, and the conversions and ex2 around them. Nothing newer (no
// wgmma, no TMA, no tcgen05), so the same code runs on sm_120 (RTX PRO 6000) and sm_90 (H200,
// where the tests run).
#pragma once

#include <cstdint>

#include "split_params.h"  // VATTN_KERN_NS: the revision namespace

namespace vattn::VATTN_KERN_NS {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16-byte async copy global -> shared; src_bytes == 0 writes zeros (keys past a split's end,
// or rows we refuse to read) so unreferenced memory never reaches the tensor cores.
__device__ __forceinline__ void cp_async_16(void* smem_dst, const void* gmem_src, bool read) {
  const int src_bytes = read ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(smem_dst)), "l"(gmem_src),
               "r"(src_bytes)
               : "memory");
}

// A KV row (576 bf16) copied by eight threads, nine 16-byte chunks each, 128 B apart: chunks
// [i0, i1) of this thread's nine, from global `from` to shared `to`. read == false writes
// zeros; `from` must still be a mapped address.
__device__ __forceinline__ void copy_row_chunks(uint16_t* to, const uint16_t* from, bool read, int i0, int i1) {
#pragma unroll
  for (int i = 0; i < kDqk / 64; ++i)
    if (i >= i0 && i < i1) cp_async_16(to + 64 * i, read ? from + 64 * i : from, read);
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Four 8x8 bf16 matrices; lane l supplies the row address of matrix l/8, row l%8.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* smem_row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(smem_row)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* smem_row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(smem_row)));
}

// D = A(16x16, row) * B(16x8, col) + D, bf16 inputs, fp32 accumulators.
__device__ __forceinline__ void mma_bf16_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Two floats -> packed bf16x2 (round to nearest even), low half = first.
__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

// 2^x without the fix-up for denormal results that exp2f wraps around MUFU.EX2 (a compare and
// two multiplies an exponent): a result below 2^-126 becomes 0. split-v2's softmax.
__device__ __forceinline__ float ex2_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ float bf16_lo(uint32_t v) { return __uint_as_float(v << 16); }
__device__ __forceinline__ float bf16_hi(uint32_t v) { return __uint_as_float(v & 0xffff0000u); }

}  // namespace vattn::VATTN_KERN_NS
