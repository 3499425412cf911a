// Step 2 of 3: partial attention. One work item = (request, row tile of 32 query rows, KV
// split). The block streams the split's keys through shared memory once, 32 keys per stage,
// and every one of its 32 rows (all heads of the drafts in the tile: the MLA saving) uses
// each tile. 8 warps: warp (rg, qtr) owns rows rg*16..+16; for S = Q K^T it covers the
// d_qk quarter qtr (144 dims) and the four partial S tiles are summed through shared memory
// in a fixed order (so all four warps hold bitwise the same S and agree on the softmax);
// for O = P V it owns output columns qtr*128..+128.
#pragma once

#include <cmath>

#include "mma_sm80.cuh"
#include "split_plan.cuh"

namespace vattn::kern {

constexpr int kQuarterDims = kDqk / 4;  // 144 = 9 k-steps of 16
constexpr int kKSteps = kQuarterDims / 16;
constexpr int kChunksPerRow = kDqk / 8;  // 16-byte chunks per KV row
static_assert(kQuarterDims % 16 == 0, "d_qk quarter must be whole mma k-steps");

struct RowInfo {
  bool valid;   // inside the request's T_b * H rows
  int draft;    // draft index i of the row (row / H)
};

__device__ __forceinline__ bool mask_bit(const vattn_args& a, int64_t mask_base, int words_per_row, int i, int j) {
#ifdef VATTN_PLANT_MASK_OVERREAD
  // Planted bug: reads the mask of the next draft row (one row past the right one).
  i += 1;
#endif
  const uint32_t w = a.mask_bits[mask_base + static_cast<int64_t>(i) * words_per_row + (j >> 5)];
  return (w >> (j & 31)) & 1u;
}

// Rows of a work item's tile, as draft indices: [first, last]. A draft key no row of the tile
// may see is never loaded (zeros), so whatever its KV holds (a padded node's NaN, say) can
// neither reach P.V nor change which path the tile takes.
struct TileDrafts {
  int first, last;
  int64_t mask_base;
  int words_per_row;
};

__device__ __forceinline__ bool tile_sees_draft(const vattn_args& a, const TileDrafts& td, int j) {
  for (int i = td.first; i <= td.last; ++i)
    if (mask_bit(a, td.mask_base, td.words_per_row, i, j)) return true;
  return false;
}

// The pool slot of request-relative key k, loaded without acting on it: the load stays in
// flight while the block computes, and resolve_key() consumes it a tile later.
__device__ __forceinline__ int32_t prefetch_slot(const vattn_args& a, const RequestPlan& r, int kv_base, int k,
                                                 int kend) {
  return (k < kend && k < r.prefix) ? __ldg(a.kv_indices + kv_base + k) : -1;
}

// Source row of request-relative key k of a split ending at kend; null = not read (zeros).
__device__ __forceinline__ const uint16_t* resolve_key(const vattn_args& a, const RequestPlan& r, int qo_base, int k,
                                                       int kend, int32_t slot, const TileDrafts& td, bool& bad_index) {
#ifdef VATTN_PLANT_DROP_LAST_KEY
  // Planted bug: the last key of every split is never loaded.
  if (k == kend - 1) return nullptr;
#endif
  if (k >= kend) return nullptr;
  if (k < r.prefix) {
    if (slot < 0 || slot >= a.n_slots) {
      bad_index = true;
      return nullptr;
    }
    return a.kv_pool + static_cast<int64_t>(slot) * kDqk;
  }
  if (!tile_sees_draft(a, td, k - r.prefix)) return nullptr;
  return a.kv_draft + (static_cast<int64_t>(qo_base) + (k - r.prefix)) * kDqk;
}

__global__ void __launch_bounds__(kThreads, 1) split_partial_kernel(const __grid_constant__ SplitParams p) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  uint16_t* s_kv = reinterpret_cast<uint16_t*>(smem_raw);        // [kStages][kKeysPerTile][kSmemStride]
  float* s_x = reinterpret_cast<float*>(smem_raw + kSmemKv);     // [warp][16 regs][32 lanes]
  __shared__ const uint16_t* s_src[3][kKeysPerTile];             // row sources, two tiles ahead
  __shared__ int s_bad;

  const vattn_args& a = p.a;
  const int H = a.num_heads;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int rg = warp & 1, qtr = warp >> 1;
  const int g = lane >> 2, t4 = lane & 3;
  const int mat = lane >> 3, mrow = lane & 7;  // ldmatrix: which 8x8 matrix / row this lane addresses
  const float scale2 = a.sm_scale * 1.4426950408889634f;  // logits in log2 units: exp2 in the loop
  const int total = p.header->total_work;
  float* my_x = s_x + warp * 16 * 32;

#ifdef VATTN_UNSAFE_HOST_GRID
  // Unsafe variant: one item per block, so the grid (sized on the host) must cover them all.
  const int item_stride = total + 1;
#else
  const int item_stride = gridDim.x;  // persistent: any grid covers every item
#endif
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
    const TileDrafts td{rt * kRowsPerTile / H, (min(rows_b, (rt + 1) * kRowsPerTile) - 1) / H, mask_base, words_per_row};

    RowInfo ri[2];
    for (int h = 0; h < 2; ++h) {
      const int tr = rt * kRowsPerTile + rg * 16 + g + h * 8;
      ri[h].valid = tr < rows_b;
      ri[h].draft = tr / H;
    }

    // Q fragments for this warp's 16 rows and d_qk quarter stay in registers for the item.
    uint32_t qf[kKSteps][4];
    {
      const uint32_t* q_lo = reinterpret_cast<const uint32_t*>(a.q + (row0 + rg * 16 + g) * kDqk);
      const uint32_t* q_hi = q_lo + 8 * kDqk / 2;
#pragma unroll
      for (int ks = 0; ks < kKSteps; ++ks) {
        const int w = (qtr * kQuarterDims + ks * 16 + 2 * t4) >> 1;
        qf[ks][0] = ri[0].valid ? __ldg(q_lo + w) : 0u;
        qf[ks][1] = ri[1].valid ? __ldg(q_hi + w) : 0u;
        qf[ks][2] = ri[0].valid ? __ldg(q_lo + w + 4) : 0u;
        qf[ks][3] = ri[1].valid ? __ldg(q_hi + w + 4) : 0u;
      }
    }

    float o[16][4];
#pragma unroll
    for (int n = 0; n < 16; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};

    if (threadIdx.x == 0) s_bad = 0;
    bool bad = false;
    if (warp == 0) {
      for (int j = 0; j < 2 && j < ntiles; ++j) {
        const int k = kbeg + j * kKeysPerTile + lane;
        s_src[j][lane] = resolve_key(a, r, qo_base, k, kend, prefetch_slot(a, r, kv_base, k, kend), td, bad);
      }
    }
    __syncthreads();

    auto issue_tile = [&](int j) {
      uint16_t* dst = s_kv + (j % kStages) * kKeysPerTile * kSmemStride;
      for (int c = threadIdx.x; c < kKeysPerTile * kChunksPerRow; c += kThreads) {
        const int row = c / kChunksPerRow, ch = c % kChunksPerRow;
        const uint16_t* src = s_src[j % 3][row];
        cp_async_16(dst + row * kSmemStride + ch * 8, src ? src + ch * 8 : a.kv_pool, src != nullptr);
      }
      cp_async_commit();
    };
    if (ntiles > 0) issue_tile(0);

    for (int it = 0; it < ntiles; ++it) {
      const int next_k = kbeg + (it + 2) * kKeysPerTile + lane;
      // Loaded now, used after this tile's math: the index fetch never stalls the block.
      const int32_t next_slot = (warp == 0 && it + 2 < ntiles) ? prefetch_slot(a, r, kv_base, next_k, kend) : -1;
      if (it + 1 < ntiles) {
        issue_tile(it + 1);
        cp_async_wait<1>();
      } else {
        cp_async_wait<0>();
      }
      __syncthreads();
      const uint16_t* kv = s_kv + (it % kStages) * kKeysPerTile * kSmemStride;
      const int tile_k0 = kbeg + it * kKeysPerTile;
      const bool has_drafts = tile_k0 + kKeysPerTile > r.prefix;

      // ---- S partial over this warp's d_qk quarter ----
      float acc[4][4];
#pragma unroll
      for (int n = 0; n < 4; ++n) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.f;
#pragma unroll
      for (int ks = 0; ks < kKSteps; ++ks) {
        const int d0 = qtr * kQuarterDims + ks * 16;
#pragma unroll
        for (int np = 0; np < 2; ++np) {
          uint32_t bk[4];
          ldmatrix_x4(bk, kv + (np * 16 + (mat >> 1) * 8 + mrow) * kSmemStride + d0 + (mat & 1) * 8);
          mma_bf16_16816(acc[2 * np], qf[ks], bk[0], bk[1]);
          mma_bf16_16816(acc[2 * np + 1], qf[ks], bk[2], bk[3]);
        }
      }
#pragma unroll
      for (int n = 0; n < 4; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) my_x[(n * 4 + e) * 32 + lane] = acc[n][e];
      // V may hold NaN/Inf only in draft rows some row of the tile sees (prefix rows are
      // visible to every row; keys past the split and drafts no row sees are zero-filled).
      // A draft seen by row i but masked for row i' must not reach i' as 0 * NaN in P.V.
      bool v_nonfinite = false;
      if (has_drafts) {
        for (int c = threadIdx.x; c < kKeysPerTile * (kDv / 8); c += kThreads) {
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

      // ---- full S (fixed summation order), mask, online softmax ----
      float s[4][4];
#pragma unroll
      for (int n = 0; n < 4; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int reg = (n * 4 + e) * 32 + lane;
          s[n][e] = ((s_x[(0 * 2 + rg) * 512 + reg] + s_x[(1 * 2 + rg) * 512 + reg]) + s_x[(2 * 2 + rg) * 512 + reg]) +
                    s_x[(3 * 2 + rg) * 512 + reg];
        }
      if (!has_drafts && tile_k0 + kKeysPerTile <= kend && ri[0].valid && ri[1].valid) {
        // The common tile: prefix keys only, all inside the split, both rows real: all visible.
#pragma unroll
        for (int n = 0; n < 4; ++n)
#pragma unroll
          for (int e = 0; e < 4; ++e) s[n][e] *= scale2;
      } else {
#pragma unroll
        for (int n = 0; n < 4; ++n)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int k = tile_k0 + n * 8 + 2 * t4 + (e & 1);
            const RowInfo& rw = ri[e >> 1];
            bool vis = rw.valid && k < kend;
            if (vis && k >= r.prefix) vis = mask_bit(a, mask_base, words_per_row, rw.draft, k - r.prefix);
            s[n][e] = vis ? s[n][e] * scale2 : -INFINITY;
          }
      }
      float p[4][4];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float mx = -INFINITY;
#pragma unroll
        for (int n = 0; n < 4; ++n) mx = fmaxf(mx, fmaxf(s[n][2 * h], s[n][2 * h + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        const float m_new = fmaxf(m[h], mx);
        const float m_use = m_new == -INFINITY ? 0.f : m_new;  // all masked so far: avoid -inf - -inf
#ifdef VATTN_PLANT_SKIP_RESCALE
        const float corr = 1.f;  // Planted bug: the running max moves but old terms are not rescaled.
#else
        const float corr = exp2f(m[h] - m_use);
#endif
        float rowsum = 0.f;
#pragma unroll
        for (int n = 0; n < 4; ++n) {
          p[n][2 * h] = exp2f(s[n][2 * h] - m_use);
          p[n][2 * h + 1] = exp2f(s[n][2 * h + 1] - m_use);
          rowsum += p[n][2 * h] + p[n][2 * h + 1];
        }
        l[h] = l[h] * corr + rowsum;
        m[h] = m_new;
        // Deep in a long prefix the running max rarely moves: corr is exactly 1 and the
        // rescale would change no bit, so the warp skips it when no lane needs it.
        if (__any_sync(0xffffffffu, corr != 1.f)) {
#pragma unroll
          for (int n = 0; n < 16; ++n) {
            o[n][2 * h] *= corr;
            o[n][2 * h + 1] *= corr;
          }
        }
      }

      // ---- O += P V over this warp's 128 output columns ----
      if (!v_nonfinite) {
        uint32_t pa[2][4];
#pragma unroll
        for (int kk = 0; kk < 2; ++kk) {
          pa[kk][0] = pack_bf16x2(p[2 * kk][0], p[2 * kk][1]);
          pa[kk][1] = pack_bf16x2(p[2 * kk][2], p[2 * kk][3]);
          pa[kk][2] = pack_bf16x2(p[2 * kk + 1][0], p[2 * kk + 1][1]);
          pa[kk][3] = pack_bf16x2(p[2 * kk + 1][2], p[2 * kk + 1][3]);
        }
#pragma unroll
        for (int kk = 0; kk < 2; ++kk)
#pragma unroll
          for (int np = 0; np < 8; ++np) {
            uint32_t bv[4];
            ldmatrix_x4_trans(bv, kv + (kk * 16 + (mat & 1) * 8 + mrow) * kSmemStride + qtr * 128 + np * 16 +
                                      (mat >> 1) * 8);
            mma_bf16_16816(o[2 * np], pa[kk], bv[0], bv[1]);
            mma_bf16_16816(o[2 * np + 1], pa[kk], bv[2], bv[3]);
          }
      } else {
        // Rare path: skip zero probabilities explicitly so masked non-finite V never counts.
        __syncthreads();  // every warp is done reading the S exchange
#pragma unroll
        for (int n = 0; n < 4; ++n)
#pragma unroll
          for (int e = 0; e < 4; ++e)
            my_x[(g + (e >> 1) * 8) * 32 + n * 8 + 2 * t4 + (e & 1)] = bf16_lo(pack_bf16x2(p[n][e], 0.f));
        __syncwarp();
        for (int k = 0; k < kKeysPerTile; ++k) {
          const float p0 = my_x[g * 32 + k], p1 = my_x[(g + 8) * 32 + k];
          const uint16_t* vrow = kv + k * kSmemStride + qtr * 128 + 2 * t4;
#pragma unroll
          for (int n = 0; n < 16; ++n) {
            const uint32_t vv = *reinterpret_cast<const uint32_t*>(vrow + n * 8);
            const float v0 = bf16_lo(vv), v1 = bf16_hi(vv);
            if (p0 != 0.f) { o[n][0] += p0 * v0; o[n][1] += p0 * v1; }
            if (p1 != 0.f) { o[n][2] += p1 * v0; o[n][3] += p1 * v1; }
          }
        }
      }
      if (warp == 0 && it + 2 < ntiles)
        s_src[(it + 2) % 3][lane] = resolve_key(a, r, qo_base, next_k, kend, next_slot, td, bad);
      __syncthreads();  // stage and exchange buffers are free for the next tile
    }

    // ---- finalize: every quarter warp holds the same m and l ----
    if (bad) atomicOr(&s_bad, 1);
    __syncthreads();
    const bool poisoned = s_bad != 0;
    if (poisoned && threadIdx.x == 0) atomicOr(&p.header->error, VATTN_DEVERR_KV_INDEX);
    float inv[2], lse2[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float lt = l[h];
      lt += __shfl_xor_sync(0xffffffffu, lt, 1);
      lt += __shfl_xor_sync(0xffffffffu, lt, 2);
      inv[h] = lt == 0.f ? 0.f : 1.f / lt;
      lse2[h] = lt == 0.f ? -INFINITY : (m[h] == -INFINITY ? 0.f : m[h]) + log2f(lt);
      if (poisoned) inv[h] = lse2[h] = NAN;
#ifdef VATTN_PLANT_EMPTY_SPLIT_NAN
      if (ntiles == 0) lse2[h] = NAN;  // Planted bug: an empty split hands NaN to the merge.
#endif
    }
    const bool direct = r.splits == 1;
    const int64_t slot = static_cast<int64_t>(r.partial_begin) + static_cast<int64_t>(rt) * r.splits + split;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int tr = rg * 16 + g + h * 8;  // row within the tile
      if (direct && !ri[h].valid) continue;
      const float lse_nat = lse2[h] * 0.6931471805599453f;
      if (direct) {
        uint32_t* dst = reinterpret_cast<uint32_t*>(a.out + (row0 + tr) * kDv + qtr * 128 + 2 * t4);
#pragma unroll
        for (int n = 0; n < 16; ++n) dst[n * 4] = pack_bf16x2(o[n][2 * h] * inv[h], o[n][2 * h + 1] * inv[h]);
        if (qtr == 0 && t4 == 0) a.lse[row0 + tr] = lse_nat;
      } else {
        float2* dst = reinterpret_cast<float2*>(p.partial_out + (slot * kRowsPerTile + tr) * kDv + qtr * 128 + 2 * t4);
#pragma unroll
        for (int n = 0; n < 16; ++n) dst[n * 4] = make_float2(o[n][2 * h] * inv[h], o[n][2 * h + 1] * inv[h]);
        if (qtr == 0 && t4 == 0) p.partial_lse[slot * kRowsPerTile + tr] = lse_nat;
      }
    }
    __syncthreads();  // the next item reuses s_src and s_bad
  }
}

}  // namespace vattn::kern
