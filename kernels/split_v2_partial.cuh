// SPDX-License-Identifier: Apache-2.0
// split-v2's partial kernel (split_revision_v2.cu; split-v1's is split_partial.cuh).
// One work item = (request, row tile of 64 query rows, KV split): twice split-v1's rows for
// every K/V byte streamed from L2, through split-v1's two 32-key stages (one tile in flight
// while the other is used). Eight warps; warp w = (row block rb = w >> 1, half hh = w & 1)
// keeps, for the whole item, Q of rows 16rb.. over its half of d_qk (k-steps 2hh and 2hh + 1 of
// every four: v2_kstep; 64 registers, two k-steps in shared memory) and O of the same
// rows over output columns 256hh.. (128 registers). The K/V stages hold unpadded, swizzled rows
// (v2_chunk).
// Q comes in through the K/V stages as whole rows (16-byte copies), not fragment by fragment
// (fragment loads cost up to 3.6 us an item on the H200). The fp32 partial goes out in two
// parts: group A's rows straight from their fragments while group B runs its last P.V, then B's
// through the stages.
// Per tile:
//  1. S partial: rows 16rb.. x all 32 keys over the warp's half of d_qk (18 k-steps);
//  2. the two warps of a row block swap their partials through shared memory (a named barrier
//     of the 64 threads, not the block's) and add them: both now hold the same full scores;
//  3. mask and online softmax in registers: both warps compute the same P, which never leaves
//     the registers (the accumulator layout of S is the A-operand layout of P.V);
//  4. O = O * corr + P V over columns 256hh...
// Ping-pong: row blocks 0-1 (warps 0-3, group A) and 2-3 (warps 4-7, group B) run these steps
// half a tile apart, B doing its P.V of a tile after the next block barrier. Each scheduler
// (warp % 4) holds one warp of each group, so one group's swap and softmax, which issue no
// mma, meet the other group's mma (2-4.5% faster on the H200 at P >= 16384).
// One block barrier per tile (the stage is in, the other stage is free), against split-v1's
// three, and no shared-memory round trip for P or the row statistics.
// The work-item decode and the scan of a tile's V are written out here as in split_partial.cuh:
// a helper shared by both kernels changed split-v1's SASS and made it 1.4-2.4% slower at
// P=131072 on the H200, so each kernel keeps its own copy.
#pragma once

#include <cmath>
#include <type_traits>

#include "mma_sm80.cuh"
#include "pdl.cuh"
#include "split_keys.cuh"
#include "split_plan.cuh"
#include "timeline.cuh"

namespace vattn::VATTN_KERN_NS {

static_assert(kRowsPerTile == 64 && kKeysPerTile == 32 && kStages == 2 && kPartialThreads == 256,
              "split_v2_partial.cuh is written for 64 rows x 32 keys, 2 stages, 8 warps");
constexpr int kV2HalfDims = kDqk / 2;  // 288 = 18 k-steps of 16
constexpr int kV2KSteps = kV2HalfDims / 16;
// Where group B issues the next tile's copies (eighteen 16 B chunks per thread): six after each
// of these S k-steps, all even (issued at once they stall the warps).
constexpr int kV2CopyStep0 = 0, kV2CopyStep1 = 6, kV2CopyStep2 = 12;
static_assert(kV2HalfDims % 16 == 0 && kV2CopyStep2 < kV2KSteps && kV2CopyStep0 % 2 == 0 && kV2CopyStep1 % 2 == 0 &&
                  kV2CopyStep2 % 2 == 0,
              "v2 tile arithmetic");

// The block's named barriers (0 is __syncthreads): 1-4, the 64 threads of row block rb (warps 2rb
// and 2rb + 1); 5, group B's 128 threads; 6, group A's; 7, A's arrival and B's wait after the
// tile loop.
__device__ __forceinline__ void row_block_barrier(int rb) {
  asm volatile("bar.sync %0, 64;\n" ::"r"(1 + rb) : "memory");
}
constexpr int kBarGroupB = 5, kBarGroupA = 6, kBarAToB = 7;
template <int Id, int Threads>
__device__ __forceinline__ void named_barrier_sync() {
  asm volatile("bar.sync %0, %1;\n" ::"n"(Id), "n"(Threads) : "memory");
}
template <int Id, int Threads>
__device__ __forceinline__ void named_barrier_arrive() {
  asm volatile("bar.arrive %0, %1;\n" ::"n"(Id), "n"(Threads) : "memory");
}

// Where the 16-byte chunk c (0-71) of row `row` of the K/V stages (or of Q, which comes in
// through them) sits within that row: in the same 128 B line, its low three bits crossed with
// the row's. A row is nine whole lines (kSmemStride, no padding), so the eight chunks a quarter
// warp copies fill one line, one shared-memory wavefront; padded 1168 B rows cost the copies
// 10.5 wavefronts an instruction against 4 (ncu). The eight rows an
// ldmatrix reads (consecutive, one chunk) still land on eight distinct bank groups.
__device__ __forceinline__ int v2_chunk(int row, int c) { return c ^ (row & 7); }
// The global d_qk k-step (16 dims) of warp-local S k-step ks of half hh: two of every four, so
// that the chunks a thread reads for a k-step are one of two swizzled offsets plus a constant.
__host__ __device__ constexpr int v2_kstep(int hh, int ks) { return 4 * (ks >> 1) + 2 * hh + (ks & 1); }
// Q k-step ks's slot in a thread's registers, or -1: k-steps 15 and 17, the second of the last
// two lines, stay in shared memory (s_qlast). One of each line's two, so that no S step needs
// more than one k-step's four registers beyond those it holds.
__host__ __device__ constexpr int v2_qslot(int ks) {
  return ks == kV2KSteps - 3 || ks == kV2KSteps - 1 ? -1 : ks < kV2KSteps - 3 ? ks : ks - 1;
}
// Lazy rescaling: a row keeps its reference max until a tile's score beats it by more than 2^8
// (log2 units), so O and the row sum are rescaled on a few tiles of an item instead of on most
// (with 16 rows a warp, some row's max moves on most of the first tiles). The result is the
// same: probabilities are exp2(s - m) <= 256 against that reference, bf16 rounding of P is
// relative, and the LSE is m + log2(l) for whichever m was used.
constexpr float kV2LazyRescale = 8.f;
static_assert(kSmemStride * 2 % 128 == 0 && v2_kstep(1, kV2KSteps - 1) == kDqk / 16 - 1 && kV2KSteps % 2 == 0,
              "v2's K/V rows are whole 128 B lines; the two halves' k-steps cover d_qk");

// Warp-wide, for the masked tile of keys [k0, k0 + 32) of an item whose split ends at kend:
// each of the 64 rows' visibility word (tile_visibility; 0 for a row past the request's, whose
// draft draft_of(row) is < 0) into vis[row], lanes taking rows lane and lane + 32. Returns their
// OR in every lane: bit x is set when some row sees key k0 + x, which decides whether a draft's
// KV is loaded (resolve_key_by). The loads are in flight together, where testing a tile's draft
// rows one after another (tile_sees_draft) takes a round trip each.
// The draft of row `row` of row tile rt (rows of a request are draft-major: row = draft * H +
// head), or -1 past the request's rows_b rows.
__device__ __forceinline__ int v2_row_draft(int rt, int row, int rows_b, int H) {
  const int tr = rt * kRowsPerTile + row;
  return tr < rows_b ? tr / H : -1;
}

template <class DraftOf>
__device__ __forceinline__ uint32_t v2_tile_rows_visibility(const vattn_args& a, const TileDrafts& td, int k0, int kend,
                                                            int prefix, int lane, DraftOf draft_of, uint32_t* vis) {
  uint32_t seen = 0;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int row = lane + 32 * h, d = draft_of(row);
    const uint32_t v = d < 0 ? 0u : tile_visibility(a, td.mask_base, td.words_per_row, d, k0, kend - k0, prefix);
    vis[row] = v;
    seen |= v;
  }
  return __reduce_or_sync(0xffffffffu, seen);
}

// Warp 0, in flight with Q (global -> shared): the row sources of tiles 0 and 1 (s_src) and the
// visibility words of the item's first two masked tiles (s_vis, s_visend). When tiles 0 and 1
// are among those, which drafts to load follows from the words too, in one round trip instead
// of one a draft row (0.7 us a T=64 draft tile). Both tiles' index loads are in flight before
// either is resolved.
__device__ __forceinline__ void resolve_first_tiles(const vattn_args& a, const RequestPlan& r, const TileDrafts& td,
                                                    int qo_base, int kv_base, int kbeg, int kend, int ntiles,
                                                    int n_plain, int rt, int rows_b, int H, int lane,
                                                    const uint16_t* (&s_src)[3][kKeysPerTile],
                                                    uint32_t (&s_vis)[3][kRowsPerTile], int& s_visend, bool& bad) {
  const int k0 = kbeg + lane, k1 = k0 + kKeysPerTile;
  const int32_t slot0 = prefetch_slot(a, r, kv_base, k0, kend), slot1 = prefetch_slot(a, r, kv_base, k1, kend);
  uint32_t seen0 = ~0u, seen1 = ~0u;
  if (lane == 0) s_visend = n_plain + 2;
#pragma unroll
  for (int u = 0; u < 2; ++u) {
    const int t = n_plain + u;
    if (t >= ntiles) break;
    const uint32_t seen = v2_tile_rows_visibility(
        a, td, kbeg + t * kKeysPerTile, kend, r.prefix, lane, [&](int row) { return v2_row_draft(rt, row, rows_b, H); },
        s_vis[t % 3]);
    if (t == 0) seen0 = seen;
    if (t == 1) seen1 = seen;
  }
  s_src[0][lane] =
      resolve_key_by(a, r, qo_base, k0, kend, slot0, bad, [&](int) { return ((seen0 >> lane) & 1u) != 0; });
  if (ntiles > 1)
    s_src[1][lane] =
        resolve_key_by(a, r, qo_base, k1, kend, slot1, bad, [&](int) { return ((seen1 >> lane) & 1u) != 0; });
}

// Q of the item's 64 rows into the K/V stages (global -> shared tile), as whole rows in 16-byte
// copies, four threads a row, each every fourth chunk of it (18 of the 72); rows past the
// request's (row `tile_row0 + row` >= rows_b) are zeros. One commit group.
__device__ __forceinline__ void load_q_rows_to_stages(const vattn_args& a, uint16_t* s_kv, int64_t row0, int tile_row0,
                                                      int rows_b) {
  static_assert(kPartialThreads == 4 * kRowsPerTile && (kDqk / 8) % 4 == 0, "Q copy: 4 threads a row");
  const int qrow = threadIdx.x >> 2;
  const bool ok = tile_row0 + qrow < rows_b;
  const uint16_t* qsrc = ok ? a.q + (row0 + qrow) * kDqk + (threadIdx.x & 3) * 8 : a.q;
  uint16_t* qdst = s_kv + qrow * kSmemStride;
#pragma unroll
  for (int i = 0; i < kDqk / 32; ++i)
    cp_async_16(qdst + 8 * v2_chunk(qrow, (threadIdx.x & 3) + 4 * i), ok ? qsrc + 32 * i : qsrc, ok);
  cp_async_commit();
}

// The warp's Q fragments (shared tile -> registers): rows 16rb.. over its half hh of d_qk, by
// ldmatrix into the mma layout; k-step ks at qf[v2_qslot(ks)], but k-steps 15 and 17, which the
// registers cannot hold, to this thread's slots of s_qlast.
__device__ __forceinline__ void load_q_fragments(uint32_t (&qf)[kV2KSteps - 2][4], const uint16_t* s_kv, uint4* s_qlast,
                                                 int rb, int hh, int lane) {
#pragma unroll
  for (int ks = 0; ks < kV2KSteps; ++ks) {
    uint32_t f[4];
    const int qr = 16 * rb + (lane & 15);
    ldmatrix_x4(f, s_kv + qr * kSmemStride + 8 * v2_chunk(qr, 2 * v2_kstep(hh, ks) + (lane >> 4)));
    if (v2_qslot(ks) >= 0) {
      qf[v2_qslot(ks)][0] = f[0];
      qf[v2_qslot(ks)][1] = f[1];
      qf[v2_qslot(ks)][2] = f[2];
      qf[v2_qslot(ks)][3] = f[3];
    } else {
      s_qlast[(ks == kV2KSteps - 1) * kPartialThreads + threadIdx.x] = make_uint4(f[0], f[1], f[2], f[3]);
    }
  }
}

// Each row's softmax sum over its quad, then (registers) 1/l and the natural-log LSE of rows
// g and g + 8; an empty row (l = 0) gets 1/l = 0 and LSE -inf.
__device__ __forceinline__ void finalize_row_stats(const float (&m_run)[2], const float (&l_run)[2], float (&inv)[2],
                                                   float (&lse_nat)[2]) {
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    float lt = l_run[i];
    lt += __shfl_xor_sync(0xffffffffu, lt, 1);
    lt += __shfl_xor_sync(0xffffffffu, lt, 2);
    float lse2 = lt == 0.f ? -INFINITY : (m_run[i] == -INFINITY ? 0.f : m_run[i]) + log2f(lt);
    inv[i] = lt == 0.f ? 0.f : 1.f / lt;
    lse_nat[i] = lse2 * 0.6931471805599453f;
  }
}

// A single-split item's result (registers -> global): O / l of the warp's rows 16rb + g (+ 8)
// over columns 256hh.. as bf16 into out, and their LSE; rows past the request's are skipped,
// and a poisoned item (bad KV index) writes NaN.
__device__ __forceinline__ void write_o_direct(const vattn_args& a, const float (&o)[32][4], const float (&inv)[2],
                                               const float (&lse_nat)[2], bool poisoned, int64_t row0, int tile_row0,
                                               int rows_end, int rb, int hh, int g, int t4) {
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int tr = 16 * rb + g + 8 * i;  // row within the tile
    if (tile_row0 + tr >= rows_end) continue;
    const float inv_i = poisoned ? NAN : inv[i];
    uint32_t* dst = reinterpret_cast<uint32_t*>(a.out + (row0 + tr) * kDv + hh * 256 + 2 * t4);
#pragma unroll
    for (int n = 0; n < 32; ++n) dst[n * 4] = pack_bf16x2(o[n][2 * i] * inv_i, o[n][2 * i + 1] * inv_i);
    if (hh == 0 && t4 == 0) a.lse[row0 + tr] = poisoned ? NAN : lse_nat[i];
  }
}

// Chunks [i0, i1) of this thread's nine in row `row` of tile j (global -> shared K/V stage
// j % 2; 8 threads per KV row, 16 B each) from its row source s_src[j % 3][row]: the prologue's
// copies (every thread, one row) and group B's (two rows a thread).
__device__ __forceinline__ void load_kv_row_chunks(const vattn_args& a, uint16_t* s_kv,
                                                   const uint16_t* const (&s_src)[3][kKeysPerTile], int j, int row,
                                                   int ch0, int i0, int i1) {
  uint16_t* dst = s_kv + (j % kStages) * kKeysPerTile * kSmemStride;
  const uint16_t* src = s_src[j % 3][row];
  const bool read = src != nullptr;
  // Unread rows (zero fill) still name a mapped address: the start of the pool.
  const uint16_t* from = (read ? src : a.kv_pool) + ch0 * 8;
  copy_row_chunks(dst + row * kSmemStride + v2_chunk(row, ch0) * 8, from, read, i0, i1);  // chunk i: next line
}
// Every thread's copies of tile j (global -> shared K/V stage): one KV row each.
__device__ __forceinline__ void load_kv_tile(const vattn_args& a, uint16_t* s_kv,
                                             const uint16_t* const (&s_src)[3][kKeysPerTile], int j, int i0, int i1) {
  static_assert(kPartialThreads == 8 * kKeysPerTile && kDqk == 576, "load_kv_tile: 8 threads x 9 chunks per KV row");
  load_kv_row_chunks(a, s_kv, s_src, j, threadIdx.x >> 3, threadIdx.x & 7, i0, i1);
}
// Group B's copies of tile j (global -> shared K/V stage): 128 threads, two KV rows each (r and r + 16).
__device__ __forceinline__ void load_kv_tile_b(const vattn_args& a, uint16_t* s_kv,
                                               const uint16_t* const (&s_src)[3][kKeysPerTile], int j, int i0, int i1) {
  const int lt = threadIdx.x - 128;
#pragma unroll
  for (int h2 = 0; h2 < 2; ++h2) load_kv_row_chunks(a, s_kv, s_src, j, (lt >> 3) + 16 * h2, lt & 7, i0, i1);
}

// P.V of one tile (shared K/V stage x register P -> register O): O += P V over rows 16rb..,
// columns 256hh.. (O already rescaled); nothing for a row block without rows (`active`).
__device__ __forceinline__ void compute_pv(float (&o)[32][4], const uint32_t (&pa)[2][4], const uint16_t* kvt,
                                           bool active, int hh, int mat, int mrow, int vsw8) {
  if (active) {
    // Position j of every line first: one swizzled offset live at a time (four at once spilled).
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const uint16_t* vj = kvt + ((mat & 1) * 8 + mrow) * kSmemStride + 64 * 4 * hh + (vsw8 ^ (16 * j));
#pragma unroll
      for (int kk = 0; kk < 2; ++kk)
#pragma unroll
        for (int line = 0; line < 4; ++line) {
          const int np = 4 * line + j;  // columns 256hh + 16np..
          uint32_t bv[4];
          ldmatrix_x4_trans(bv, vj + kk * 16 * kSmemStride + 64 * line);
          mma_bf16_16816(o[2 * np], pa[kk], bv[0], bv[1]);
          mma_bf16_16816(o[2 * np + 1], pa[kk], bv[2], bv[3]);
        }
    }
  }
}

// The rare P.V, for a tile whose V holds NaN/Inf in a row some row of the tile sees: P in row
// order through this row block's exchange slot (register -> shared tile), zero probabilities
// skipped, so a masked non-finite V never counts. Both groups take it in the tile's own interval
// (B does not defer).
__device__ __forceinline__ void compute_pv_rare(float (&o)[32][4], const uint32_t (&pa)[2][4], const uint16_t* kvt,
                                                float4* s_xf, int rb, int hh, int g, int t4) {
  uint16_t* s_prb = reinterpret_cast<uint16_t*>(s_xf + (2 * rb) * 4 * 32);  // [16][kPStride]
  row_block_barrier(rb);                                                    // the partner has read this slot's partial
  uint16_t* prow = s_prb + g * kPStride + 2 * t4;
  if (hh == 0) {
#pragma unroll
    for (int kk = 0; kk < 2; ++kk)
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        *reinterpret_cast<uint32_t*>(prow + 8 * i * kPStride + 16 * kk) = pa[kk][i];
        *reinterpret_cast<uint32_t*>(prow + 8 * i * kPStride + 16 * kk + 8) = pa[kk][2 + i];
      }
  }
  row_block_barrier(rb);
#pragma unroll
  for (int i = 0; i < 2; ++i)  // one row at a time: fewer live values than both at once
#pragma unroll 1
    for (int k = 0; k < kKeysPerTile; ++k) {
      const float p = bf16_lo(s_prb[(g + 8 * i) * kPStride + k]);
      if (p == 0.f) continue;
      const uint16_t* vrow = kvt + k * kSmemStride + 2 * t4;
#pragma unroll
      for (int n = 0; n < 32; ++n) {
        const uint32_t vv = *reinterpret_cast<const uint32_t*>(vrow + 8 * v2_chunk(k, 32 * hh + n));
        o[n][2 * i] += p * bf16_lo(vv);
        o[n][2 * i + 1] += p * bf16_hi(vv);
      }
    }
  row_block_barrier(rb);  // both have read P before the slot takes a partial again
}

// What a tile step reads of the block and the item (shared tiles, the item's row sources and
// keys) and the thread's place in the block (fragment coordinates), built once an item. The
// static __shared__ variables stay declared in the __global__: their layout is the kernel's.
struct V2TileCtx {
  const vattn_args& a;
  uint16_t* s_kv;                             // [kStages][kKeysPerTile][kSmemStride]: K/V stages
  float4* s_xf;                               // [warp][n-tile][lane]: S partials
  const uint4* s_qlast;                       // [k-step 15, 17][thread]: Q
  const uint16_t* (&s_src)[3][kKeysPerTile];  // row sources, two tiles ahead
  const uint32_t (&s_vis)[3][kRowsPerTile];   // the first two masked tiles' visibility words
  const int& s_visend;                        // masked tiles below it have their words in s_vis
  const int (&s_rowdraft)[kRowsPerTile];      // each tile row's draft, -1 past the request's
  const RequestPlan& s_r;
  const TileDrafts& s_td;
  const int& s_qo_base;
  const int& s_kv_base;
  int kbeg, kend, ntiles;  // the item's keys [kbeg, kend) in ntiles tiles
  int warp, lane, rb, hh, g, t4, mat, mrow, vsw8, ksw;
  float scale2;        // logits to log2 units
  bool grp_b, active;  // group B (warps 4-7); the row block has rows
};

// S partial (shared K stage x register Q -> register S): rows 16rb.. x the tile's 32 keys over
// the warp's half of d_qk. With load_next, group B issues tile it + 1's copies between its
// k-steps (kV2CopyStep*), or all at once in a row block without rows, which skips the mma.
__device__ __forceinline__ void compute_qk_partial(const V2TileCtx& c, const uint32_t (&qf)[kV2KSteps - 2][4],
                                                   const uint16_t* kv, bool load_next, int it, float (&s)[4][4]) {
#pragma unroll
  for (int n = 0; n < 4; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
  if (c.active) {
    // Line q of each K row holds this warp's k-steps 2q and 2q + 1 (four chunks): one
    // ldmatrix per 8 keys reads both, at one swizzled offset per thread (ksw).
#pragma unroll
    for (int q = 0; q < kV2KSteps / 2; ++q) {
#pragma unroll
      for (int n = 0; n < 4; ++n) {
        uint32_t bk[4];  // k-step 2q: bk[0..1]; 2q + 1: bk[2..3]
        ldmatrix_x4(bk, kv + (8 * n + c.mrow) * kSmemStride + 64 * q + 8 * c.ksw);
        if (v2_qslot(2 * q + 1) >= 0) {
          mma_bf16_16816(s[n], qf[v2_qslot(2 * q)], bk[0], bk[1]);
          mma_bf16_16816(s[n], qf[v2_qslot(2 * q + 1)], bk[2], bk[3]);
        } else {  // the line's second k-step from shared memory: 4 registers at a time, as before
          const uint4 f = c.s_qlast[(2 * q + 1 == kV2KSteps - 1) * kPartialThreads + threadIdx.x];
          const uint32_t ql[4] = {f.x, f.y, f.z, f.w};
          mma_bf16_16816(s[n], qf[v2_qslot(2 * q)], bk[0], bk[1]);
          mma_bf16_16816(s[n], ql, bk[2], bk[3]);
        }
      }
      if (2 * q == kV2CopyStep0 && load_next) load_kv_tile_b(c.a, c.s_kv, c.s_src, it + 1, 0, 3);
      if (2 * q == kV2CopyStep1 && load_next) load_kv_tile_b(c.a, c.s_kv, c.s_src, it + 1, 3, 6);
      if (2 * q == kV2CopyStep2 && load_next) load_kv_tile_b(c.a, c.s_kv, c.s_src, it + 1, 6, 9);
    }
  } else if (load_next) {
    load_kv_tile_b(c.a, c.s_kv, c.s_src, it + 1, 0, 9);
  }
}

// The two warps of a row block swap their S partials through the exchange (register -> shared
// tile -> register, a 64-thread barrier) and both add them: a + b == b + a in IEEE arithmetic,
// so both warps get bitwise the same scores.
__device__ __forceinline__ void exchange_s_partials(const V2TileCtx& c, float (&s)[4][4]) {
  {
    float4* mine = c.s_xf + c.warp * 4 * 32 + c.lane;
#pragma unroll
    for (int n = 0; n < 4; ++n) mine[n * 32] = make_float4(s[n][0], s[n][1], s[n][2], s[n][3]);
  }
  row_block_barrier(c.rb);
  {
    const float4* other = c.s_xf + (c.warp ^ 1) * 4 * 32 + c.lane;
#pragma unroll
    for (int n = 0; n < 4; ++n) {
      const float4 x = other[n * 32];
      s[n][0] += x.x;
      s[n][1] += x.y;
      s[n][2] += x.z;
      s[n][3] += x.w;
    }
  }
}

// The mask on the tile's scores (registers): element (n, e) is row g + 8(e >> 1), key
// tile_k0 + 8n + 2t4 + (e & 1); a key the row does not see gets -inf. The first two masked
// tiles: each row's visibility word (s_vis), the element its bit 8n + 2t4 + (e & 1). Later ones
// (drafts or the split's end in the tile): a mask load an element. Plain tiles: nothing.
template <bool kPlain>
__device__ __forceinline__ void mask_s(const V2TileCtx& c, float (&s)[4][4], int it, int tile_k0, int prefix,
                                       bool has_drafts) {
  if (!kPlain && it < c.s_visend) {
    const uint32_t vv[2] = {c.s_vis[it % 3][16 * c.rb + c.g], c.s_vis[it % 3][16 * c.rb + c.g + 8]};
#pragma unroll
    for (int n = 0; n < 4; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[n][e] = (vv[e >> 1] >> (8 * n + 2 * c.t4 + (e & 1))) & 1u ? s[n][e] : -INFINITY;
  } else if (!kPlain && (has_drafts || tile_k0 + kKeysPerTile > c.kend)) {
    const int draft[2] = {c.s_rowdraft[16 * c.rb + c.g], c.s_rowdraft[16 * c.rb + c.g + 8]};
#pragma unroll
    for (int n = 0; n < 4; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int k = tile_k0 + 8 * n + 2 * c.t4 + (e & 1);
        const int d = draft[e >> 1];
        bool vis = d >= 0 && k < c.kend;
        if (vis && k >= prefix) vis = mask_bit(c.a, c.s_td.mask_base, c.s_td.words_per_row, d, k - prefix);
        s[n][e] = vis ? s[n][e] : -INFINITY;
      }
  }
}

// Online softmax of the tile's masked scores (registers): each row's reference max m_run (lazy:
// kV2LazyRescale), its running sum l_run, O's correction factor corr and P, as bf16 in the
// A-operand layout of P.V (pa). The scores stay unscaled: the scale (> 0, run() refuses any
// other) goes into the row max and into each exponent's FFMA, 16 multiplies a tile fewer (0.4%
// faster).
__device__ __forceinline__ void update_softmax(float scale2, const float (&s)[4][4], float (&m_run)[2],
                                               float (&l_run)[2], uint32_t (&pa)[2][4], float (&corr)[2]) {
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    float mx = fmaxf(fmaxf(fmaxf(s[0][2 * i], s[0][2 * i + 1]), fmaxf(s[1][2 * i], s[1][2 * i + 1])),
                     fmaxf(fmaxf(s[2][2 * i], s[2][2 * i + 1]), fmaxf(s[3][2 * i], s[3][2 * i + 1])));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    mx *= scale2;                                                        // the max of the scaled scores: scale2 > 0
    const float m_new = mx > m_run[i] + kV2LazyRescale ? mx : m_run[i];  // NaN mx: keeps m_run, as fmaxf did
    const float m_use = m_new == -INFINITY ? 0.f : m_new;                // all masked so far: avoid -inf - -inf
    corr[i] = ex2_ftz(m_run[i] - m_use);
    m_run[i] = m_new;
    float pe[4][2];
#pragma unroll
    for (int n = 0; n < 4; ++n) {
      pe[n][0] = ex2_ftz(fmaf(s[n][2 * i], scale2, -m_use));
      pe[n][1] = ex2_ftz(fmaf(s[n][2 * i + 1], scale2, -m_use));
    }
    l_run[i] = l_run[i] * corr[i] +
               (((pe[0][0] + pe[0][1]) + (pe[1][0] + pe[1][1])) + ((pe[2][0] + pe[2][1]) + (pe[3][0] + pe[3][1])));
#pragma unroll
    for (int kk = 0; kk < 2; ++kk) {
      pa[kk][i] = pack_bf16x2(pe[2 * kk][0], pe[2 * kk][1]);
      pa[kk][2 + i] = pack_bf16x2(pe[2 * kk + 1][0], pe[2 * kk + 1][1]);
    }
  }
}

// O *= corr (registers), rows g and g + 8; skipped when no row of the warp moved its max.
__device__ __forceinline__ void rescale_o(float (&o)[32][4], const float (&corr)[2]) {
  if (__any_sync(0xffffffffu, corr[0] != 1.f || corr[1] != 1.f)) {
#pragma unroll
    for (int n = 0; n < 32; ++n) {
      o[n][0] *= corr[0];
      o[n][1] *= corr[0];
      o[n][2] *= corr[1];
      o[n][3] *= corr[1];
    }
  }
}

// The thread's registers a tile step carries to the next (held for the whole item): Q's
// fragments, O, the row statistics, P for group B's deferred P.V, and two flags.
struct V2TileRegs {
  uint32_t (&qf)[kV2KSteps - 2][4];  // Q k-step ks at qf[v2_qslot(ks)]
  float (&o)[32][4];                 // O of rows 16rb + g (+ 8), columns 256hh..
  float (&m_run)[2];                 // rows g, g + 8: reference max (log2 units)
  float (&l_run)[2];                 // and this lane's running sum
  uint32_t (&pa)[2][4];              // P as the A operand of P.V
  bool& pend;                        // B: P.V of the previous tile still to do
  bool& bad;                         // warp 0: a row source had a bad KV index
};

// The tile loop's body in two instantiations: kPlain for the leading tiles wholly inside the
// prefix and the split (no mask, no scan of V, no partial tile), the general one for the
// rest (drafts, the split's last tile, B's last P.V). With one body for both, the rare code
// made ptxas schedule the common path worse: the plain loop is 3-7% faster at P >= 65536 on
// the H200, and every tile's arithmetic is the same.
template <bool kPlain>
__device__ __forceinline__ void tile_step(const V2TileCtx& c, V2TileRegs& r, const int it) {
  const bool tile = kPlain || it < c.ntiles;
  const int next_k = c.kbeg + (it + 2) * kKeysPerTile + c.lane;
  // Loaded now, used after this tile's math: the index fetch never stalls the block.
  const int32_t next_slot =
      (c.warp == 0 && it + 2 < c.ntiles) ? prefetch_slot(c.a, c.s_r, c.s_kv_base, next_k, c.kend) : -1;
  // Groups: tiles 0 and 1 (every thread), then B's one per interval (tile it + 1 in interval it).
  if (it == 0)
    cp_async_wait<1>();
  else
    cp_async_wait<0>();
  __syncthreads();  // tile `it` is in; A is past P.V(it - 1), B past S(it - 1)
  const uint16_t* kv = c.s_kv + (it % kStages) * kKeysPerTile * kSmemStride;
  const uint16_t* kv_prev = c.s_kv + ((it + 1) % kStages) * kKeysPerTile * kSmemStride;
  const int tile_k0 = c.kbeg + it * kKeysPerTile;
  const int prefix = c.s_r.prefix;
  const bool has_drafts = !kPlain && tile && tile_k0 + kKeysPerTile > prefix;
  // V may hold NaN/Inf only in draft rows some row of the tile sees (prefix rows are
  // visible to every row; keys past the split and drafts no row sees are zero-filled).
  // A draft seen by row i but masked for row i' must not reach i' as 0 * NaN in P.V.
  bool vnf = false;
  if (kGuardNonfiniteV && has_drafts) {
    // Chunks 0-63 of a row are V's (the swizzle keeps chunks within their 128 B line).
    for (int x16 = threadIdx.x; x16 < kKeysPerTile * (kDv / 8); x16 += kPartialThreads) {
      const int row = x16 / (kDv / 8), ch = x16 % (kDv / 8);
      const uint4 v = *reinterpret_cast<const uint4*>(kv + row * kSmemStride + ch * 8);
      const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int x = 0; x < 4; ++x) vnf |= ((w[x] & 0x7f80u) == 0x7f80u) || ((w[x] & 0x7f800000u) == 0x7f800000u);
    }
    vnf = __syncthreads_or(vnf);
  }
  if (r.pend) compute_pv(r.o, r.pa, kv_prev, c.active, c.hh, c.mat, c.mrow, c.vsw8);  // B: the previous tile's P.V
  const bool load_next = c.grp_b && it >= 1 && it + 1 < c.ntiles;
  // Every B warp is past P.V(it - 1) before any of them copies over that stage.
  if (load_next) named_barrier_sync<kBarGroupB, 128>();

  if (tile) {
    float s[4][4];  // n-tile n: keys 8n.. of the tile
    compute_qk_partial(c, r.qf, kv, load_next, it, s);
    cp_async_commit();

    exchange_s_partials(c, s);
    mask_s<kPlain>(c, s, it, tile_k0, prefix, has_drafts);
    float corr[2];
    update_softmax(c.scale2, s, r.m_run, r.l_run, r.pa, corr);
    rescale_o(r.o, corr);  // before the P.V that uses this P (B runs it next interval)
    // A: this tile's P.V. B defers it to the next interval, except on the rare path.
    if (vnf)
      compute_pv_rare(r.o, r.pa, kv, c.s_xf, c.rb, c.hh, c.g, c.t4);
    else if (!c.grp_b)
      compute_pv(r.o, r.pa, kv, c.active, c.hh, c.mat, c.mrow, c.vsw8);
  }
  r.pend = c.grp_b && tile && !vnf;
  if (c.warp == 0 && it + 2 < c.ntiles)
    c.s_src[(it + 2) % 3][c.lane] = resolve_key(c.a, c.s_r, c.s_qo_base, next_k, c.kend, next_slot, c.s_td, r.bad);
}

// What a split's partial holds for two of O's elements (registers): O / l, in fp32.
__device__ __forceinline__ float2 partial_value(float x, float y, float f) { return make_float2(x * f, y * f); }

// A split item's result (registers -> global fp32 workspace): O / l of the tile's first
// live_rows rows (the request's) into partial slot `slot`, and their LSE. Group A, during B's
// last P.V: straight from the fragments. Group B, after it: its 32 rows through the K/V stages
// (shared tile), then whole rows out. A poisoned item (bad KV index) writes NaN.
__device__ __forceinline__ void write_o_partial(const SplitParams& p, uint16_t* s_kv, const float (&o)[32][4],
                                                const float (&inv)[2], const float (&lse_nat)[2], bool poisoned,
                                                int64_t slot, int live_rows, bool grp_b, int rb, int hh, int g,
                                                int t4) {
  float* dst0 = p.partial_out + slot * kRowsPerTile * kDv;
  if (!grp_b) {
    // A: each row's four lanes write 32 B.
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int tr = 16 * rb + g + 8 * i;
      if (tr >= live_rows) continue;
      const float f = poisoned ? NAN : inv[i];
      float* row = dst0 + tr * kDv + hh * 256 + 2 * t4;
#pragma unroll
      for (int n = 0; n < 32; ++n)
        *reinterpret_cast<float2*>(row + 8 * n) = partial_value(o[n][2 * i], o[n][2 * i + 1], f);
    }
  } else if (live_rows > 32) {
    // B: its 32 rows x 512 through the K/V stages (free: no copy is in flight, and A reads no
    // stage), then whole rows out in 16-byte stores by B's 128 threads. Not when the request has
    // none of them (decode, T = 1: 8 rows of 64): staging rows nobody reads made B=1 decode calls
    // 3-5% slower.
    constexpr int kOStride = kDv + 8;  // floats a staged row: the fragment stores are conflict-free
    static_assert(sizeof(float) * 32 * kOStride <= kSmemKv, "B's staged rows fit the K/V stages");
    float* s_o = reinterpret_cast<float*>(s_kv);
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const float f = poisoned ? NAN : inv[i];
      float* row = s_o + (16 * (rb - 2) + g + 8 * i) * kOStride + hh * 256 + 2 * t4;
#pragma unroll
      for (int n = 0; n < 32; ++n)
        *reinterpret_cast<float2*>(row + 8 * n) = partial_value(o[n][2 * i], o[n][2 * i + 1], f);
    }
    named_barrier_sync<kBarGroupB, 128>();
    static_assert(kDv / 4 == 128, "B's 128 threads: one float4 column of its rows each");
    const int c4 = threadIdx.x - 128;
    const int b_rows = live_rows - 32;  // rows 32.. of the tile, >= 1
#pragma unroll 4
    for (int row = 0; row < b_rows; ++row)
      *reinterpret_cast<float4*>(dst0 + (32 + row) * kDv + 4 * c4) =
          *reinterpret_cast<const float4*>(s_o + row * kOStride + 4 * c4);
  }
#pragma unroll
  for (int i = 0; i < 2; ++i)
    if (hh == 0 && t4 == 0 && 16 * rb + g + 8 * i < live_rows)
      p.partial_lse[slot * kRowsPerTile + 16 * rb + g + 8 * i] = poisoned ? NAN : lse_nat[i];
}

__global__ void __launch_bounds__(kPartialThreads, 1) split_partial_kernel(const __grid_constant__ SplitParams p) {
  tl_partial(0);  // timing probe builds only (timeline.cuh)
  pdl_wait();     // the planner has completed: its plan and header are visible
  tl_partial(1);
  pdl_launch_dependents();  // the reduce kernel's blocks may get ready; they wait for this grid
  extern __shared__ __align__(16) unsigned char smem_raw[];
  uint16_t* s_kv = reinterpret_cast<uint16_t*>(smem_raw);        // [kStages][kKeysPerTile][kSmemStride]
  float4* s_xf = reinterpret_cast<float4*>(smem_raw + kSmemKv);  // [warp][n-tile][lane]: S partials
  // Two of each thread's 18 Q k-steps (15 and 17: v2_qslot; 4 registers each), read back every tile.
  uint4* s_qlast = reinterpret_cast<uint4*>(smem_raw + kSmemKv + kSmemExchange);  // [k-step 15, 17][thread]
  __shared__ const uint16_t* s_src[3][kKeysPerTile];                              // row sources, two tiles ahead
  __shared__ int s_bad;
  __shared__ int s_rowdraft[kRowsPerTile];  // each tile row's draft, -1 past the request's rows
  // The first two masked tiles' rows' visibility words (v2_tile_rows_visibility), tile t at
  // s_vis[t % 3], set by warp 0 in the prologue: the general step masks them with a shift an
  // element, where a mask load an element cost a T=64 draft tile 1.3 us on the H200.
  // Later masked tiles (T > 64, or a prefix end inside a tile) load as before.
  // Moving that work to the general step's own tail spilled on sm_90a or reordered the plain
  // step's instructions in ways that made every shape 7-9% slower on the H200 (not
  // every reordering costs that; time a reordered build rather than assume).
  __shared__ uint32_t s_vis[3][kRowsPerTile];
  __shared__ int s_visend;  // masked tiles below it have their words in s_vis
  // What only the resolving lanes, the masked tiles and the final store need, kept out of the
  // registers of the tile loop (Q and O take 200 of a thread's 255).
  __shared__ RequestPlan s_r;
  __shared__ TileDrafts s_td;
  __shared__ int s_qo_base, s_kv_base, s_rt, s_split;

  const vattn_args& a = p.a;
  const int H = a.num_heads;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  // Row block; d_qk half (S) and column half (P.V). The two warps of a row block, which meet
  // twice a tile, sit on two schedulers (warp % 4): up to 3.5% faster on the H200 than on one.
  const int rb = warp >> 1, hh = warp & 1;
  const int g = lane >> 2, t4 = lane & 3;                 // mma fragment coordinates: rows g, g + 8
  const int mat = lane >> 3, mrow = lane & 7;             // ldmatrix: which 8x8 matrix / row this lane addresses
  const float scale2 = a.sm_scale * 1.4426950408889634f;  // logits in log2 units: exp2 in the loop
  const int total = p.header->total_work;

  const int item_stride = gridDim.x;  // persistent: any grid covers every item
  for (int item = blockIdx.x; item < total; item += item_stride) {
    tl_item(item, 0);
    const int b = find_request(a.num_requests, item, [&](int i) { return p.requests[i].work_begin; });
    const RequestPlan r = p.requests[b];
    // Packed plans (split_pack.h) rotate the request's numbering; the loop stays grid-stride.
    const int local = split_pack::rotated(item - r.work_begin, r.rotate, r.row_tiles * r.splits);
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
    if (threadIdx.x == 0) {
      s_r = r;
      s_td = td;
      s_qo_base = qo_base;
      s_kv_base = kv_base;
      s_rt = rt;
      s_split = split;
    }
    if (threadIdx.x < kRowsPerTile)
      s_rowdraft[threadIdx.x] = v2_row_draft(rt, static_cast<int>(threadIdx.x), rows_b, H);

    // A row block without a row of the request (T * H not a multiple of 64; decode: T = 1)
    // skips its S and P.V mma, which would compute rows nobody reads, so the row blocks that
    // have rows get the shared memory and the tensor cores to themselves. Its copies, barriers,
    // exchange and softmax (on zeros) still run: skipping those too made ptxas spill.
    const bool active = rt * kRowsPerTile + 16 * rb < rows_b;

    // Q of the item's 64 rows through the K/V stages, free until tile 0's copies: whole rows in
    // 16-byte copies (rows past the request's: zeros), in flight with the index loads below, then
    // ldmatrix into the mma layout, k-steps 15 and 17 to s_qlast (v2_qslot), the rest to registers. Loading the
    // fragments with __ldg (four bytes a lane, eight rows an instruction) cost up to 3.6 us an
    // item on the H200; with 17 k-steps in registers ptxas spills one register in the tile loop.
    load_q_rows_to_stages(a, s_kv, row0, rt * kRowsPerTile, rows_b);
    if (threadIdx.x == 0) s_bad = 0;
    bool bad = false;
    // Tiles [0, n_plain) run the plain step: wholly inside the prefix and the split, no mask.
    const int plain_end = min(r.prefix, kend) - kbeg;
    const int n_plain = plain_end > 0 ? min(ntiles, plain_end / kKeysPerTile) : 0;
    if (warp == 0)
      resolve_first_tiles(a, r, td, qo_base, kv_base, kbeg, kend, ntiles, n_plain, rt, rows_b, H, lane, s_src, s_vis,
                          s_visend, bad);
    cp_async_wait<0>();
    __syncthreads();                // Q is in the stages; the row sources of tiles 0 and 1 are set
    uint32_t qf[kV2KSteps - 2][4];  // k-step ks at qf[v2_qslot(ks)]
    load_q_fragments(qf, s_kv, s_qlast, rb, hh, lane);
    __syncthreads();  // every warp has its Q before tile 0's copies take the stages
    tl_item(item, 1);
    float o[32][4];
#pragma unroll
    for (int n = 0; n < 32; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
    // Rows g and g + 8: reference max (log2 units, the same in both warps of the row block; lazy:
    // kV2LazyRescale) and this lane's running sum over its keys.
    float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.f, 0.f};

    // Both stages are free: tiles 0 and 1 load together. Then, during tile it >= 1, tile it + 1
    // goes into the stage tile it - 1 has left.
    if (ntiles > 0) load_kv_tile(a, s_kv, s_src, 0, 0, 9);
    cp_async_commit();
    if (ntiles > 1) load_kv_tile(a, s_kv, s_src, 1, 0, 9);
    cp_async_commit();

    // Interval it, between two block barriers (it = 0 .. ntiles; the last one is B's last P.V):
    //   A: S(it), swap, softmax(it), P.V(it);
    //   B: P.V(it - 1) with the P it kept in registers, then, once every B warp is past it, the
    //      copy of tile it + 1 into the stage tile it - 1 leaves, spread over S(it); then swap
    //      and softmax(it). O is rescaled at the softmax, before the P.V that uses its P.
    // B issues every copy after the prologue: A never writes a stage that B may still read.
    const bool grp_b = warp >= 4;
    bool pend = false;  // B: P.V of tile it - 1 still to do (with P in registers)
    // The swizzled chunk positions of this thread's ldmatrix rows (row & 7 == mrow), both equal
    // to v2_chunk: V chunk 32hh + 8 line + 2j + (mat >> 1) is at line 4hh + line, position
    // vsw8 / 8 ^ 2j; K chunk 4hh + mat of line q (k-steps 2q, 2q + 1) at position ksw.
    const int vsw8 = 8 * ((mat >> 1) ^ mrow), ksw = (4 * hh + mat) ^ mrow;
    uint32_t pa[2][4];  // P as the A operand of P.V: k-step kk = keys 16kk..
    const V2TileCtx c{a,         s_kv,      s_xf, s_qlast, s_src,  s_vis,  s_visend, s_rowdraft, s_r, s_td,
                      s_qo_base, s_kv_base, kbeg, kend,    ntiles, warp,   lane,     rb,         hh,  g,
                      t4,        mat,       mrow, vsw8,    ksw,    scale2, grp_b,    active};
    V2TileRegs regs{qf, o, m_run, l_run, pa, pend, bad};
#ifdef VATTN_TIMELINE
    // The probe's "tile 0 in" stamp, after the same wait and barrier as the first step's (which
    // then pass at once): taken inside the step, it made ptxas spill on sm_90a.
    if (ntiles > 0) {
      cp_async_wait<1>();
      __syncthreads();
    }
    tl_item(item, 2);
#endif
    {
      int it = 0;
      for (; it < n_plain; ++it) tile_step<true>(c, regs, it);
      for (; it <= ntiles; ++it) tile_step<false>(c, regs, it);
    }

    tl_item(item, 3);
    // Group A (row blocks 0-1) leaves the loop a P.V ahead of group B: the last interval runs
    // only B's P.V of the last tile. So on a split item A finalizes and stores its 32 rows while B
    // still multiplies, and B then stores its own 32 rows in one pass through the K/V stages
    // (the two halves of all 64 rows through the stages after a block barrier, as before, made
    // decode calls 2% slower and verify calls 0.35%). Warp 0, which
    // resolved every row source, first tells both groups of a bad index: A at A's barrier, B at
    // kBarAToB, which completes once A has arrived and B, past its P.V, waits there.
    if (warp == 0 && bad) s_bad = 1;
    const bool direct = s_r.splits == 1;
    if (!direct) {
      if (!grp_b) {
        named_barrier_sync<kBarGroupA, 128>();  // A: warp 0's s_bad is visible
        named_barrier_arrive<kBarAToB, 256>();  // and B may read it after its P.V
      } else {
        named_barrier_sync<kBarAToB, 256>();
      }
    }
    float inv[2], lse_nat[2];
    finalize_row_stats(m_run, l_run, inv, lse_nat);
    if (direct) __syncthreads();  // s_bad; B's last P.V is done
    const bool poisoned = s_bad != 0;
    if (poisoned && threadIdx.x == 0) atomicOr(&p.header->error, VATTN_DEVERR_KV_INDEX);
    // Re-read from shared memory: holding them through the tile loop would cost registers.
    const int rt_end = s_rt, rows_end = s_r.drafts * H;
    const int64_t row0_end = static_cast<int64_t>(s_qo_base) * H + static_cast<int64_t>(rt_end) * kRowsPerTile;
    const int64_t slot = static_cast<int64_t>(s_r.partial_begin) + static_cast<int64_t>(rt_end) * s_r.splits + s_split;
    if (direct) {
      write_o_direct(a, o, inv, lse_nat, poisoned, row0_end, rt_end * kRowsPerTile, rows_end, rb, hh, g, t4);
    } else {
      // Only the rows the request has go out: the reduce reads no other. A decode item (T = 1,
      // H = 8) has 8 of its 64 rows, and writing all 64 would move eight times the bytes.
      const int live_rows = min(kRowsPerTile, rows_end - rt_end * kRowsPerTile);
      write_o_partial(p, s_kv, o, inv, lse_nat, poisoned, slot, live_rows, grp_b, rb, hh, g, t4);
    }
    __syncthreads();  // the next item reuses s_src, s_bad, s_rowdraft and the item's values
    tl_item(item, 4);
  }
}

}  // namespace vattn::VATTN_KERN_NS
