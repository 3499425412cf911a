// SPDX-License-Identifier: Apache-2.0
// split-v2's partial kernel (built with -DVATTN_SPLIT_V2; split-v1's is split_partial.cuh).
// One work item = (request, row tile of 64 query rows, KV split): twice split-v1's rows for
// every K/V byte streamed from L2, in 16-key stages, three of them, so that two tiles are in
// flight while the third is used. Sixteen warps; every Q and O element lives in exactly one
// thread's registers (Q 36, O 64 registers per thread), so 64 rows fit beside 84 KB of
// shared memory. Per tile, between block barriers:
//  1. S partial: warp (rb, dq) = (warp & 3, warp >> 2) multiplies rows 16rb.. over d_qk quarter
//     dq by all 16 keys;
//  2. softmax: warp w owns rows 4w..4w+3 (lane & 3), two keys per lane; the four quarter
//     partials are summed in split-v1's fixed order, then masked, then the online softmax;
//  3. O = O * corr + P V: warp (rb, cq) = (warp & 3, warp >> 2), rows 16rb.., columns 128cq...
// The work-item decode and the scan of a tile's V are written out here as in split_partial.cuh:
// a helper shared by both kernels changed split-v1's SASS and made it 1.4-2.4% slower at
// P=131072 on the H200 (PERF.md), so each kernel keeps its own copy.
#pragma once

#include <cmath>

#include "mma_sm80.cuh"
#include "pdl.cuh"
#include "split_keys.cuh"
#include "split_plan.cuh"

namespace vattn::VATTN_KERN_NS {

static_assert(kRowsPerTile == 64 && kKeysPerTile == 16 && kStages == 3 && kPartialThreads == 512,
              "split_v2_partial.cuh is written for 64 rows x 16 keys, 3 stages, 16 warps");
constexpr int kV2QuarterDims = kDqk / 4;  // 144 = 9 k-steps of 16
constexpr int kV2KSteps = kV2QuarterDims / 16;
constexpr int kV2ChunksPerRow = kDqk / 8;  // 16-byte chunks per KV row: 72 = 32 + 32 + 8
constexpr int kV2SrcRing = 4;              // row-source tables: tiles it .. it + 3
static_assert(kV2QuarterDims % 16 == 0 && kV2ChunksPerRow == 72, "v2 tile arithmetic");

__global__ void __launch_bounds__(kPartialThreads, 1) split_partial_kernel(const __grid_constant__ SplitParams p) {
  pdl_wait();  // the planner has completed: its plan and header are visible
  pdl_launch_dependents();  // the reduce kernel's blocks may get ready; they wait for this grid
  extern __shared__ __align__(16) unsigned char smem_raw[];
  uint16_t* s_kv = reinterpret_cast<uint16_t*>(smem_raw);                    // [kStages][kKeysPerTile][kSmemStride]
  float* s_x = reinterpret_cast<float*>(smem_raw + kSmemKv);                 // [dq][row][kXStride]
  uint16_t* s_p = reinterpret_cast<uint16_t*>(smem_raw + kSmemKv + kSmemExchange);  // [row][kPStride] bf16
  float* s_corr = reinterpret_cast<float*>(smem_raw + kSmemKv + kSmemExchange + kSmemP);  // [row]
  float* s_inv = s_corr + kRowsPerTile;                                      // [row] 1 / l at the end
  float* s_lse = s_inv + kRowsPerTile;                                       // [row] natural-log LSE
  __shared__ const uint16_t* s_src[kV2SrcRing][kKeysPerTile];                // row sources, up to three tiles ahead
  __shared__ int s_bad;
  // What only the resolving lanes and the final store need, kept out of the registers of the
  // tile loop (16 warps leave 128 registers a thread, and Q and O take 100 of them).
  __shared__ RequestPlan s_r;
  __shared__ TileDrafts s_td;
  __shared__ int s_qo_base, s_kv_base, s_rt;
  __shared__ int s_rowdraft[kRowsPerTile];  // each tile row's draft, -1 past the request's rows
  // Each softmax row's running max (log2 units) and sum, also out of the registers.
  __shared__ float s_m[kRowsPerTile], s_l[kRowsPerTile];
  // The last of each thread's nine Q k-steps (4 registers): read back once per tile.
  __shared__ uint4 s_qlast[kPartialThreads];

  const vattn_args& a = p.a;
  const int H = a.num_heads;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int rb = warp & 3, q4 = warp >> 2;  // row block; d_qk quarter (S) and column quarter (P.V)
  const int g = lane >> 2, t4 = lane & 3;   // mma fragment coordinates
  const int mat = lane >> 3, mrow = lane & 7;  // ldmatrix: which 8x8 matrix / row this lane addresses
  const int srow = warp * 4 + (lane & 3), skey = (lane >> 2) * 2;  // softmax: row and two keys
  const float scale2 = a.sm_scale * 1.4426950408889634f;  // logits in log2 units: exp2 in the loop
  const int total = p.header->total_work;

#ifdef VATTN_UNSAFE_HOST_GRID
  const int item_stride = total + 1;  // unsafe variant: one item per block (see split_partial.cuh)
#else
  const int item_stride = gridDim.x;  // persistent: any grid covers every item
#endif
  for (int item = blockIdx.x; item < total; item += item_stride) {
    const int b = find_request(a.num_requests, item, [&](int i) { return p.requests[i].work_begin; });
    const RequestPlan r = p.requests[b];
#ifdef VATTN_PLANT_CRASH
    if (r.drafts == 17) *reinterpret_cast<volatile float*>(static_cast<uintptr_t>(0x10)) = 0.f;  // see split_partial.cuh
#endif
#ifdef VATTN_PLANT_HANG
    if (r.prefix == 77) {  // see split_partial.cuh
      const volatile int32_t* prefix_word = &p.requests[b].prefix;
      while (*prefix_word == 77) __nanosleep(1000);
    }
#endif
    const int local = item - r.work_begin;
    const int split = local / r.row_tiles, rt = local % r.row_tiles;
    const int keys = r.prefix + r.drafts;
    const int kbeg = split * r.chunk;
    const int kend = min(keys, kbeg + r.chunk);
    const int ntiles = kend > kbeg ? (kend - kbeg + kKeysPerTile - 1) / kKeysPerTile : 0;
    const int qo_base = a.qo_indptr[b], kv_base = a.kv_indptr[b];  // (resolver: s_qo_base, s_kv_base)
    const int rows_b = r.drafts * H;
    const int64_t row0 = static_cast<int64_t>(qo_base) * H + static_cast<int64_t>(rt) * kRowsPerTile;
    const int64_t mask_base = a.mask_word_indptr[b];
    const int words_per_row = (r.drafts + 31) >> 5;
    if (threadIdx.x == 0) {
      s_r = r;
      s_td = TileDrafts{rt * kRowsPerTile / H, (min(rows_b, (rt + 1) * kRowsPerTile) - 1) / H, mask_base, words_per_row};
      s_qo_base = qo_base;
      s_kv_base = kv_base;
      s_rt = rt;
    }
    if (threadIdx.x < kRowsPerTile) {
      const int tr = rt * kRowsPerTile + static_cast<int>(threadIdx.x);
      s_rowdraft[threadIdx.x] = tr < rows_b ? tr / H : -1;
    }
    __syncthreads();

    // The two fragment rows of this thread (S and P.V): tile rows 16rb + g + 8h.
    bool valid[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) valid[h] = rt * kRowsPerTile + 16 * rb + g + 8 * h < rows_b;

    // Q fragments of rows 16rb.. over d_qk quarter q4, held for the whole item: k-steps 0-7 in
    // registers, k-step 8 in s_qlast.
    uint32_t qf[kV2KSteps - 1][4];
    {
      const uint32_t* q_lo = reinterpret_cast<const uint32_t*>(a.q + (row0 + 16 * rb + g) * kDqk);
      const uint32_t* q_hi = q_lo + 8 * kDqk / 2;
#pragma unroll
      for (int ks = 0; ks < kV2KSteps; ++ks) {
        const int w = (q4 * kV2QuarterDims + ks * 16 + 2 * t4) >> 1;
        const uint32_t f0 = valid[0] ? __ldg(q_lo + w) : 0u, f1 = valid[1] ? __ldg(q_hi + w) : 0u;
        const uint32_t f2 = valid[0] ? __ldg(q_lo + w + 4) : 0u, f3 = valid[1] ? __ldg(q_hi + w + 4) : 0u;
        if (ks < kV2KSteps - 1) {
          qf[ks][0] = f0;
          qf[ks][1] = f1;
          qf[ks][2] = f2;
          qf[ks][3] = f3;
        } else {
          s_qlast[threadIdx.x] = make_uint4(f0, f1, f2, f3);  // read only by this thread
        }
      }
    }
    float o[16][4];
#pragma unroll
    for (int n = 0; n < 16; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
    if (lane < 4) {
      s_m[srow] = -INFINITY;
      s_l[srow] = 0.f;
    }

    if (threadIdx.x == 0) s_bad = 0;
    bool bad = false;
    const bool resolver = warp == 0 && lane < kKeysPerTile;  // resolves one key of each tile
    if (resolver) {  // the first three tiles' index loads in flight before any is resolved
      const int k0 = kbeg + lane;
      const int32_t slot0 = prefetch_slot(a, r, kv_base, k0, kend);
      const int32_t slot1 = prefetch_slot(a, r, kv_base, k0 + kKeysPerTile, kend);
      const int32_t slot2 = prefetch_slot(a, r, kv_base, k0 + 2 * kKeysPerTile, kend);
      s_src[0][lane] = resolve_key(a, r, qo_base, k0, kend, slot0, s_td, bad);
      if (ntiles > 1) s_src[1][lane] = resolve_key(a, r, qo_base, k0 + kKeysPerTile, kend, slot1, s_td, bad);
      if (ntiles > 2) s_src[2][lane] = resolve_key(a, r, qo_base, k0 + 2 * kKeysPerTile, kend, slot2, s_td, bad);
    }
    __syncthreads();

    // A tile's copies: a warp per KV row (lane l: chunks l, l + 32 and, for l < 8, l + 64 of
    // the row's 72), so each instruction reads 512 contiguous bytes.
    auto issue_tile = [&](int j) {
      uint16_t* dst = s_kv + (j % kStages) * kKeysPerTile * kSmemStride + warp * kSmemStride;
      const uint16_t* src = s_src[j % kV2SrcRing][warp];
      const bool read = src != nullptr;
      const uint16_t* from = read ? src : a.kv_pool;  // unread rows (zero fill) still name a mapped address
#pragma unroll
      for (int i = 0; i < 3; ++i) {
        const int c = lane + 32 * i;
        if (c < kV2ChunksPerRow) cp_async_16(dst + c * 8, read ? from + c * 8 : from, read);
      }
    };
    static_assert(kPartialThreads / 32 == kKeysPerTile, "issue_tile: one warp per KV row");
    if (ntiles > 0) issue_tile(0);
    cp_async_commit();
    if (ntiles > 1) issue_tile(1);
    cp_async_commit();

    for (int it = 0; it < ntiles; ++it) {
      const int next_k = kbeg + (it + 3) * kKeysPerTile + lane;
      // Loaded now, resolved after this tile's math: the index fetch never stalls the block.
      const int32_t next_slot = (resolver && it + 3 < ntiles) ? prefetch_slot(a, s_r, s_kv_base, next_k, kend) : -1;
      // Groups so far: tiles 0 and 1, then tile i + 2 for each finished iteration i: tile it is
      // complete when at most the newest group is pending.
      cp_async_wait<1>();
      __syncthreads();  // tile `it` is in; every warp is past the previous tile's P.V
      if (it + 2 < ntiles) issue_tile(it + 2);  // into the stage tile it - 1 has left
      cp_async_commit();
      const uint16_t* kv = s_kv + (it % kStages) * kKeysPerTile * kSmemStride;
      const int tile_k0 = kbeg + it * kKeysPerTile;
      const bool has_drafts = tile_k0 + kKeysPerTile > r.prefix;

      // ---- phase 1: S partial of rows 16rb.. over d_qk quarter q4, all 16 keys ----
      {
        float acc[2][4];
#pragma unroll
        for (int n = 0; n < 2; ++n) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.f;
#pragma unroll
        for (int ks = 0; ks < kV2KSteps; ++ks) {
          uint32_t bk[4];
          ldmatrix_x4(bk, kv + ((mat >> 1) * 8 + mrow) * kSmemStride + q4 * kV2QuarterDims + ks * 16 + (mat & 1) * 8);
          if (ks < kV2KSteps - 1) {
            mma_bf16_16816(acc[0], qf[ks], bk[0], bk[1]);
            mma_bf16_16816(acc[1], qf[ks], bk[2], bk[3]);
          } else {
            const uint4 f = s_qlast[threadIdx.x];
            const uint32_t ql[4] = {f.x, f.y, f.z, f.w};
            mma_bf16_16816(acc[0], ql, bk[0], bk[1]);
            mma_bf16_16816(acc[1], ql, bk[2], bk[3]);
          }
        }
        float* x = s_x + q4 * kRowsPerTile * kXStride;
#pragma unroll
        for (int n = 0; n < 2; ++n)
#pragma unroll
          for (int h = 0; h < 2; ++h)
            *reinterpret_cast<float2*>(x + (16 * rb + g + 8 * h) * kXStride + n * 8 + 2 * t4) =
                make_float2(acc[n][2 * h], acc[n][2 * h + 1]);
      }
      // Non-finite V in a draft row some rows see and others do not: see split_partial.cuh.
      bool v_nonfinite = false;
      if (kGuardNonfiniteV && has_drafts) {
        for (int c = threadIdx.x; c < kKeysPerTile * (kDv / 8); c += kPartialThreads) {
          const int row = c / (kDv / 8), ch = c % (kDv / 8);
          const uint4 v = *reinterpret_cast<const uint4*>(kv + row * kSmemStride + ch * 8);
          const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
          for (int x = 0; x < 4; ++x)
            v_nonfinite |= ((w[x] & 0x7f80u) == 0x7f80u) || ((w[x] & 0x7f800000u) == 0x7f800000u);
        }
        v_nonfinite = __syncthreads_or(v_nonfinite);
      } else {
        __syncthreads();
      }

      // ---- phase 2: full S (fixed summation order), mask, online softmax; row srow ----
      {
        const float* x = s_x + srow * kXStride + skey;
        const float2 x0 = *reinterpret_cast<const float2*>(x);
        const float2 x1 = *reinterpret_cast<const float2*>(x + 1 * kRowsPerTile * kXStride);
        const float2 x2 = *reinterpret_cast<const float2*>(x + 2 * kRowsPerTile * kXStride);
        const float2 x3 = *reinterpret_cast<const float2*>(x + 3 * kRowsPerTile * kXStride);
        float s[2] = {((x0.x + x1.x) + x2.x) + x3.x, ((x0.y + x1.y) + x2.y) + x3.y};
        if (!has_drafts && tile_k0 + kKeysPerTile <= kend) {
          // The common tile: prefix keys only, all inside the split. Rows past the request's
          // (zero Q) take it too: nothing reads them back (no output row, the reduce skips
          // them), and a row's softmax touches only that row.
          s[0] *= scale2;
          s[1] *= scale2;
        } else {
          const int s_draft = s_rowdraft[srow];
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const int k = tile_k0 + skey + e;
            bool vis = s_draft >= 0 && k < kend;
            if (vis && k >= r.prefix) vis = mask_bit(a, s_td.mask_base, s_td.words_per_row, s_draft, k - r.prefix);
            s[e] = vis ? s[e] * scale2 : -INFINITY;
          }
        }
        // The row's eight lanes are lane & 3 + 4i.
        float mx = fmaxf(s[0], s[1]);
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 4));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 8));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 16));
        const float m_run = s_m[srow];
        const float m_new = fmaxf(m_run, mx);
        const float m_use = m_new == -INFINITY ? 0.f : m_new;  // all masked so far: avoid -inf - -inf
#ifdef VATTN_PLANT_SKIP_RESCALE
        const float corr = 1.f;  // Planted bug: the running max moves but old terms are not rescaled.
#else
        const float corr = exp2f(m_run - m_use);
#endif
        const float pe0 = exp2f(s[0] - m_use), pe1 = exp2f(s[1] - m_use);
        float ls = pe0 + pe1;  // the row's tile sum, in a fixed order over its eight lanes
        ls += __shfl_xor_sync(0xffffffffu, ls, 4);
        ls += __shfl_xor_sync(0xffffffffu, ls, 8);
        ls += __shfl_xor_sync(0xffffffffu, ls, 16);
        *reinterpret_cast<uint32_t*>(s_p + srow * kPStride + skey) = pack_bf16x2(pe0, pe1);
        __syncwarp();  // every lane of the row has read s_m before lanes 0-3 move it
        if (lane < 4) {
          s_corr[srow] = corr;
          s_m[srow] = m_new;
          s_l[srow] = s_l[srow] * corr + ls;
        }
      }
      __syncthreads();  // P and the rescale factors are in

      // ---- phase 3: O = O * corr + P V, rows 16rb.., columns 128cq.. ----
      {
        const float c0 = s_corr[16 * rb + g], c1 = s_corr[16 * rb + g + 8];
        if (__any_sync(0xffffffffu, c0 != 1.f || c1 != 1.f)) {  // deep in a prefix the max rarely moves
#pragma unroll
          for (int n = 0; n < 16; ++n) {
            o[n][0] *= c0;
            o[n][1] *= c0;
            o[n][2] *= c1;
            o[n][3] *= c1;
          }
        }
        if (!v_nonfinite) {
          uint32_t pa[4];
          ldmatrix_x4(pa, s_p + (16 * rb + (mat & 1) * 8 + mrow) * kPStride + (mat >> 1) * 8);
#pragma unroll
          for (int np = 0; np < 8; ++np) {
            uint32_t bv[4];
            ldmatrix_x4_trans(bv, kv + ((mat & 1) * 8 + mrow) * kSmemStride + q4 * 128 + np * 16 + (mat >> 1) * 8);
            mma_bf16_16816(o[2 * np], pa, bv[0], bv[1]);
            mma_bf16_16816(o[2 * np + 1], pa, bv[2], bv[3]);
          }
        } else {
          // Rare path: skip zero probabilities explicitly so masked non-finite V never counts.
          for (int k = 0; k < kKeysPerTile; ++k) {
            const float p0 = bf16_lo(s_p[(16 * rb + g) * kPStride + k]);
            const float p1 = bf16_lo(s_p[(16 * rb + g + 8) * kPStride + k]);
            const uint16_t* vrow = kv + k * kSmemStride + q4 * 128 + 2 * t4;
#pragma unroll
            for (int n = 0; n < 16; ++n) {
              const uint32_t vv = *reinterpret_cast<const uint32_t*>(vrow + n * 8);
              const float v0 = bf16_lo(vv), v1 = bf16_hi(vv);
              if (p0 != 0.f) { o[n][0] += p0 * v0; o[n][1] += p0 * v1; }
              if (p1 != 0.f) { o[n][2] += p1 * v0; o[n][3] += p1 * v1; }
            }
          }
        }
      }
      if (resolver && it + 3 < ntiles)
        s_src[(it + 3) % kV2SrcRing][lane] = resolve_key(a, s_r, s_qo_base, next_k, kend, next_slot, s_td, bad);
    }

    // ---- finalize: softmax lanes publish 1/l and the LSE of their rows ----
    if (bad) atomicOr(&s_bad, 1);
    {
      if (lane < 4) {
        const float lt = s_l[srow], m_run = s_m[srow];
        float lse2 = lt == 0.f ? -INFINITY : (m_run == -INFINITY ? 0.f : m_run) + log2f(lt);
#ifdef VATTN_PLANT_EMPTY_SPLIT_NAN
        if (ntiles == 0) lse2 = NAN;  // Planted bug: an empty split hands NaN to the merge.
#endif
        s_inv[srow] = lt == 0.f ? 0.f : 1.f / lt;
        s_lse[srow] = lse2 * 0.6931471805599453f;
      }
    }
    __syncthreads();
    const bool poisoned = s_bad != 0;
    if (poisoned && threadIdx.x == 0) atomicOr(&p.header->error, VATTN_DEVERR_KV_INDEX);
    // Re-read from shared memory: holding them through the tile loop would cost registers.
    const bool direct = s_r.splits == 1;
    const int rt_end = s_rt, rows_end = s_r.drafts * H;
    const int64_t slot = static_cast<int64_t>(s_r.partial_begin) + static_cast<int64_t>(rt_end) * s_r.splits + split;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int tr = 16 * rb + g + 8 * h;  // row within the tile
      if (direct && rt_end * kRowsPerTile + tr >= rows_end) continue;
      const float inv = poisoned ? NAN : s_inv[tr];
      const float lse_nat = poisoned ? NAN : s_lse[tr];
      if (direct) {
        uint32_t* dst = reinterpret_cast<uint32_t*>(a.out + (row0 + tr) * kDv + q4 * 128 + 2 * t4);
#pragma unroll
        for (int n = 0; n < 16; ++n) dst[n * 4] = pack_bf16x2(o[n][2 * h] * inv, o[n][2 * h + 1] * inv);
        if (q4 == 0 && t4 == 0) a.lse[row0 + tr] = lse_nat;
      } else {
        float2* dst = reinterpret_cast<float2*>(p.partial_out + (slot * kRowsPerTile + tr) * kDv + q4 * 128 + 2 * t4);
#pragma unroll
        for (int n = 0; n < 16; ++n) {
#ifdef VATTN_PLANT_BF16_PARTIALS
          const uint32_t v = pack_bf16x2(o[n][2 * h] * inv, o[n][2 * h + 1] * inv);  // Planted bug: see split_partial.cuh
          dst[n * 4] = make_float2(bf16_lo(v), bf16_hi(v));
#else
          dst[n * 4] = make_float2(o[n][2 * h] * inv, o[n][2 * h + 1] * inv);
#endif
        }
        if (q4 == 0 && t4 == 0) p.partial_lse[slot * kRowsPerTile + tr] = lse_nat;
      }
    }
    __syncthreads();  // the next item reuses s_src, s_bad, s_r and the row statistics
  }
}

}  // namespace vattn::VATTN_KERN_NS
