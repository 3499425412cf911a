// SPDX-License-Identifier: Apache-2.0
// Step 2 of 3: partial attention. One work item = (request, row tile of 32 query rows, KV
// split). The block streams the split's keys through shared memory once, 32 keys per stage,
// and every one of its 32 rows (all heads of the drafts in the tile: the MLA saving) uses
// each tile. Each warp works on all 32 rows, so every K/V fragment read from shared memory
// feeds two mma row blocks. Per tile, the three phases of split_tile.cuh (S partial by d_qk
// quarter and key half; fixed-order sum, mask and online softmax by row; O += P V by output
// columns) run between block barriers.
#pragma once

#include <cmath>

#include "mma_sm80.cuh"
#include "pdl.cuh"
#include "split_keys.cuh"
#include "split_plan.cuh"
#include "split_tile.cuh"

namespace vattn::VATTN_KERN_NS {

__global__ void __launch_bounds__(kPartialThreads, 1) split_partial_kernel(const __grid_constant__ SplitParams p) {
  pdl_wait();               // the planner has completed: its plan and header are visible
  pdl_launch_dependents();  // the reduce kernel's blocks may get ready; they wait for this grid
  extern __shared__ __align__(16) unsigned char smem_raw[];
  uint16_t* s_kv = reinterpret_cast<uint16_t*>(smem_raw);     // [kStages][kKeysPerTile][kSmemStride]
  float* s_x = reinterpret_cast<float*>(smem_raw + kSmemKv);  // [dq][row][kXStride]
  uint16_t* s_p = reinterpret_cast<uint16_t*>(smem_raw + kSmemKv + kSmemExchange);        // [row][kPStride] bf16
  float* s_corr = reinterpret_cast<float*>(smem_raw + kSmemKv + kSmemExchange + kSmemP);  // [row]
  float* s_inv = s_corr + kRowsPerTile;                                                   // [row] 1 / l at the end
  float* s_lse = s_inv + kRowsPerTile;                                                    // [row] natural-log LSE
  __shared__ const uint16_t* s_src[3][kKeysPerTile];  // row sources, two tiles ahead
  __shared__ int s_bad;

  const vattn_args& a = p.a;
  const int H = a.num_heads;
  const TileLane tl = tile_lane();
  const int warp = tl.warp, lane = tl.lane, g = tl.g, t4 = tl.t4, srow = tl.srow, skey = tl.skey;
  const float scale2 = a.sm_scale * 1.4426950408889634f;  // logits in log2 units: exp2 in the loop
  const int total = p.header->total_work;

  const int item_stride = gridDim.x;  // persistent: any grid covers every item
  for (int item = blockIdx.x; item < total; item += item_stride) {
    const int b = find_request(a.num_requests, item, [&](int i) { return p.requests[i].work_begin; });
    const RequestPlan r = p.requests[b];
    const int local = item - r.work_begin;
    const int split = local / r.row_tiles, rt = local % r.row_tiles;
    const int keys = r.prefix + r.drafts;
    const int kbeg = split * r.chunk;
    const int kend = min(keys, kbeg + r.chunk);
    const int ntiles = kend > kbeg ? (kend - kbeg + kKeysPerTile - 1) / kKeysPerTile : 0;
    const int qo_base = a.qo_indptr[b], kv_base = a.kv_indptr[b];
    const int rows_b = r.drafts * H;
    const int64_t row0 = static_cast<int64_t>(qo_base) * H + static_cast<int64_t>(rt) * kRowsPerTile;
    const int64_t mask_base = a.mask_word_indptr[b];
    const int words_per_row = (r.drafts + 31) >> 5;
    const TileDrafts td{rt * kRowsPerTile / H, (min(rows_b, (rt + 1) * kRowsPerTile) - 1) / H, mask_base,
                        words_per_row};

    // Rows of the mma fragments this thread holds: tile rows mt*16 + g + 8*h.
    bool valid[2][2];
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) valid[mt][h] = rt * kRowsPerTile + mt * 16 + g + h * 8 < rows_b;
    // The softmax row of this lane.
    const int s_tr = rt * kRowsPerTile + srow;
    const bool s_valid = s_tr < rows_b;
    const int s_draft = s_tr / H;

    // Q fragments of all 32 rows over this warp's d_qk quarter stay in registers for the item.
    uint32_t qf[2][kKSteps][4];
    load_q(qf, a.q, row0, valid, tl);

    float o[2][8][4];
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int n = 0; n < 8; ++n) o[mt][n][0] = o[mt][n][1] = o[mt][n][2] = o[mt][n][3] = 0.f;
    float m_run = -INFINITY, l_run = 0.f;  // softmax row srow: running max (log2 units), this lane's sum

    if (threadIdx.x == 0) s_bad = 0;
    bool bad = false;
    if (warp == 0) {  // both tiles' index loads in flight before either is resolved
      const int k0 = kbeg + lane, k1 = k0 + kKeysPerTile;
      const int32_t slot0 = prefetch_slot(a, r, kv_base, k0, kend), slot1 = prefetch_slot(a, r, kv_base, k1, kend);
      s_src[0][lane] = resolve_key(a, r, qo_base, k0, kend, slot0, td, bad);
      if (ntiles > 1) s_src[1][lane] = resolve_key(a, r, qo_base, k1, kend, slot1, td, bad);
    }
    __syncthreads();

    // 8 threads per KV row, 9 chunks of 16 B each, one row pointer per thread and tile. A
    // tile's copies are issued in three parts spread over the previous tile's work (the
    // kCopy* schedule of split_tile.cuh): issued all at once they stall the warps for ~850
    // cycles (the memory system takes a tile's requests only so fast) with no math to overlap.
    auto issue_part = [&](int j, int i0, int i1) {
      uint16_t* dst = s_kv + (j % kStages) * kKeysPerTile * kSmemStride;
      const int row = threadIdx.x >> 3, ch0 = threadIdx.x & 7;
      const uint16_t* src = s_src[j % 3][row];
      const bool read = src != nullptr;
      // Unread rows (zero fill) still name a mapped address: the start of the pool.
      const uint16_t* from = (read ? src : a.kv_pool) + ch0 * 8;
      copy_row_chunks(dst + row * kSmemStride + ch0 * 8, from, read, i0, i1);
    };
    static_assert(kPartialThreads == 8 * kKeysPerTile && kChunksPerRow == 72,
                  "issue_part: 8 threads x 9 chunks per KV row");
    // Both stages are free: tiles 0 and 1 load together (one commit group each). Then, during
    // tile it >= 1, tile it + 1 goes into the stage tile it - 1 has left.
    if (ntiles > 0) issue_part(0, 0, 9);
    cp_async_commit();
    if (ntiles > 1) issue_part(1, 0, 9);
    cp_async_commit();

    for (int it = 0; it < ntiles; ++it) {
      const int next_k = kbeg + (it + 2) * kKeysPerTile + lane;
      // Loaded now, used after this tile's math: the index fetch never stalls the block.
      const int32_t next_slot = (warp == 0 && it + 2 < ntiles) ? prefetch_slot(a, r, kv_base, next_k, kend) : -1;
      // Groups so far: tile 0, tile 1, then one per finished iteration (empty for iteration 0,
      // tile it for iteration it - 1 >= 1): tile it is complete when at most the newest is
      // pending (it < 2) or none is.
      if (it < 2)
        cp_async_wait<1>();
      else
        cp_async_wait<0>();
      __syncthreads();  // tile `it` is in; every warp is past the previous tile's P.V
      const bool load_next = it >= 1 && it + 1 < ntiles;
      const uint16_t* kv = s_kv + (it % kStages) * kKeysPerTile * kSmemStride;
      const int tile_k0 = kbeg + it * kKeysPerTile;
      const bool has_drafts = tile_k0 + kKeysPerTile > r.prefix;

      // ---- phase 1: S partial, d_qk quarter dq x key half kh, all 32 rows ----
      {
        float acc[2][2][4];
#pragma unroll
        for (int mt = 0; mt < 2; ++mt)
#pragma unroll
          for (int n = 0; n < 2; ++n) acc[mt][n][0] = acc[mt][n][1] = acc[mt][n][2] = acc[mt][n][3] = 0.f;
#pragma unroll
        for (int ks = 0; ks < kKSteps; ++ks) {
          s_kstep(acc, qf, kv, tl, ks);
          if (ks == kCopyStep1 && load_next) issue_part(it + 1, 0, kCopyCut1);
          if (ks == kCopyStep2 && load_next) issue_part(it + 1, kCopyCut1, kCopyCut2);
        }
        store_partial(s_x, acc, tl);
      }
      // V may hold NaN/Inf only in draft rows some row of the tile sees (prefix rows are
      // visible to every row; keys past the split and drafts no row sees are zero-filled).
      // A draft seen by row i but masked for row i' must not reach i' as 0 * NaN in P.V.
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
        float s[4];
        sum_partials(s, s_x, tl);
        if (!has_drafts && tile_k0 + kKeysPerTile <= kend && s_valid) {
          // The common tile: prefix keys only, all inside the split, a real row: all visible.
#pragma unroll
          for (int e = 0; e < 4; ++e) s[e] *= scale2;
        } else {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int k = tile_k0 + skey + e;
            bool vis = s_valid && k < kend;
            if (vis && k >= r.prefix) vis = mask_bit(a, mask_base, words_per_row, s_draft, k - r.prefix);
            s[e] = vis ? s[e] * scale2 : -INFINITY;
          }
        }
        online_softmax(s, m_run, l_run, s_p, s_corr, tl);
      }
      if (load_next) issue_part(it + 1, kCopyCut2, kChunksPerRow / 8);
      cp_async_commit();
      __syncthreads();  // P and the rescale factors are in

      // ---- phase 3: O = O * corr + P V over output columns 64*warp.. of all 32 rows ----
      {
        rescale_o(o, s_corr, tl);
        if (!v_nonfinite) {
          pv_mma(o, s_p, kv, tl);
        } else {
          // Rare path: skip zero probabilities explicitly so masked non-finite V never counts.
          for (int k = 0; k < kKeysPerTile; ++k) {
            float pk[2][2];
#pragma unroll
            for (int mt = 0; mt < 2; ++mt)
#pragma unroll
              for (int h = 0; h < 2; ++h) pk[mt][h] = bf16_lo(s_p[(mt * 16 + g + 8 * h) * kPStride + k]);
            const uint16_t* vrow = kv + k * kSmemStride + warp * 64 + 2 * t4;
#pragma unroll
            for (int n = 0; n < 8; ++n) {
              const uint32_t vv = *reinterpret_cast<const uint32_t*>(vrow + n * 8);
              const float v0 = bf16_lo(vv), v1 = bf16_hi(vv);
#pragma unroll
              for (int mt = 0; mt < 2; ++mt) {
                if (pk[mt][0] != 0.f) {
                  o[mt][n][0] += pk[mt][0] * v0;
                  o[mt][n][1] += pk[mt][0] * v1;
                }
                if (pk[mt][1] != 0.f) {
                  o[mt][n][2] += pk[mt][1] * v0;
                  o[mt][n][3] += pk[mt][1] * v1;
                }
              }
            }
          }
        }
      }
      if (warp == 0 && it + 2 < ntiles)
        s_src[(it + 2) % 3][lane] = resolve_key(a, r, qo_base, next_k, kend, next_slot, td, bad);
    }

    // ---- finalize: softmax lanes publish 1/l and the LSE of their rows ----
    if (bad) atomicOr(&s_bad, 1);
    {
      float lt = l_run;
      lt += __shfl_xor_sync(0xffffffffu, lt, 1);
      lt += __shfl_xor_sync(0xffffffffu, lt, 2);
      lt += __shfl_xor_sync(0xffffffffu, lt, 4);
      if ((lane & 7) == 0) {
        float lse2 = lt == 0.f ? -INFINITY : (m_run == -INFINITY ? 0.f : m_run) + log2f(lt);
        s_inv[srow] = lt == 0.f ? 0.f : 1.f / lt;
        s_lse[srow] = lse2 * 0.6931471805599453f;
      }
    }
    __syncthreads();
    const bool poisoned = s_bad != 0;
    if (poisoned && threadIdx.x == 0) atomicOr(&p.header->error, VATTN_DEVERR_KV_INDEX);
    const bool direct = r.splits == 1;
    const int64_t slot = static_cast<int64_t>(r.partial_begin) + static_cast<int64_t>(rt) * r.splits + split;
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int tr = mt * 16 + g + h * 8;  // row within the tile
        if (direct && !valid[mt][h]) continue;
        const float inv = poisoned ? NAN : s_inv[tr];
        const float lse_nat = poisoned ? NAN : s_lse[tr];
        if (direct) {
          uint32_t* dst = reinterpret_cast<uint32_t*>(a.out + (row0 + tr) * kDv + warp * 64 + 2 * t4);
#pragma unroll
          for (int n = 0; n < 8; ++n) dst[n * 4] = pack_bf16x2(o[mt][n][2 * h] * inv, o[mt][n][2 * h + 1] * inv);
          if (warp == 0 && t4 == 0) a.lse[row0 + tr] = lse_nat;
        } else {
          float2* dst =
              reinterpret_cast<float2*>(p.partial_out + (slot * kRowsPerTile + tr) * kDv + warp * 64 + 2 * t4);
#pragma unroll
          for (int n = 0; n < 8; ++n) dst[n * 4] = make_float2(o[mt][n][2 * h] * inv, o[mt][n][2 * h + 1] * inv);
          if (warp == 0 && t4 == 0) p.partial_lse[slot * kRowsPerTile + tr] = lse_nat;
        }
      }
    __syncthreads();  // the next item reuses s_src, s_bad and the row statistics
  }
}

}  // namespace vattn::VATTN_KERN_NS
