// SPDX-License-Identifier: Apache-2.0
// split-v2's packed remainders: the plan of a request that has the GPU to itself (B = 1) when
// its row tiles leave blocks idle.
//
// B=1 T=64 H=8 has 8 row tiles of 64 rows for 132 blocks: 16 splits a row tile use 128 blocks,
// and every item is ceil(tiles / 16) tiles long (at P=4096 the whole-tile cut even leaves 12
// blocks idle: 15 splits of 9 tiles). Cut the keys a few tiles finer and each row tile gets 16
// full splits and a short 17th; the 8 short ones run two to a block on the 4 blocks the full ones
// leave, and the longest block is 1-8 tiles shorter at P = 4096-131072. No block that runs a full
// split runs anything else.
//
// The partial kernel's loop stays grid-stride (block b runs items b, b + grid, ...). The plan
// only rotates the request's item numbering, so that the items landing on blocks with two are
// the short ones: local item i is number (i + rotate) mod (row_tiles x splits) of the request's
// split-major order (split = number / row_tiles, row tile = number % row_tiles). An item order
// inside the kernel got the same placement, and that kernel's tile loop became
// 1-3% slower wherever nothing was packed.
//
// Host and device: the planner (split_plan.cuh) calls choose(); tests/cpu/test_split_pack.cpp
// checks it and the placement it implies.
#pragma once

#ifdef __CUDACC__
#define VATTN_PACK_FN __host__ __device__ __forceinline__
#else
#define VATTN_PACK_FN inline
#endif

namespace vattn::split_pack {

// The cost model, in 32-key tiles (2.17 us each on the H200). A block's second item costs about
// 7 us besides its tiles (`vattn timeline`: Q 2.8 us, tile 0 0.5, the partial store
// 3.4), three tiles; four keeps a margin. Its partial store, Q and first tiles cannot overlap
// under the shared-memory limit. When it cost 13-16 us it was priced at six tiles; at four,
// B=1 T=64 P=4096 packs (17 splits of 8 tiles, the 8 remainders its two draft tiles), which pays
// only since masked tiles are cheap (split_v2_partial.cuh's s_vis): before, a T=64 draft tile
// took 4.9 us and that plan was 10% slower.
constexpr int kLaterItemTiles = 4;
// A packed plan must shorten the longest block by this much. One tile is enough since the reduce
// takes a 17th split in the same round of loads as the first 16 (split_reduce.cuh): B=1 T=64
// P=16384, 17 splits of 32 tiles instead of 16 of 33, became 0.8-1.6% faster on the H200; with a
// second round it had gained nothing (and an item order inside the kernel lost 1-16%).
constexpr int kMinGainTiles = 1;

struct Choice {
  int splits;     // splits a row tile
  int per_split;  // tiles a split; when packed, each row tile's last split has the rest
  int rotate;     // the item numbering's rotation (0: none)
  bool packed;
};

// One request on a partial grid of `blocks` blocks: `tiles` key tiles for each of `row_tiles`
// row tiles, for which the planner chose `splits` splits of `per_split` tiles. With `full`, the
// most full splits a row tile the grid holds (blocks / row_tiles, below max_splits; the planner's
// whole-tile cut may use fewer: B=1 T=64 P=4096 has 15 splits of 9 tiles where 16 fit), packed
// when:
// - the full items leave `idle` blocks, 0 < idle < row_tiles: one more split a row tile gives
//   row_tiles - idle blocks a second item, and 2 idle >= row_tiles lets each of those take two
//   remainders and no full item;
// - a block with two remainders of r tiles each, 2 r + kLaterItemTiles, fits in a full split of
//   L tiles, with r = tiles - full L >= 1 (the smallest such L);
// - L is at least kMinGainTiles below per_split.
// Then: full + 1 splits of L tiles (the last short), the numbering rotated by `blocks`. Items
// i in [0, blocks) run first, on block i; numbers (i + blocks) mod n put the full items on blocks
// row_tiles - idle.. and remainders on the rest. O(1): it runs in one thread of every call's
// planner, on the critical path (a scan over every cut cost 2 us there).
VATTN_PACK_FN Choice choose(int tiles, int row_tiles, int blocks, int splits, int per_split, int max_splits) {
  const Choice keep{splits, per_split, 0, false};
  // 32-bit arithmetic within bounds far above the kernel's (kMaxPrefix: 8225 tiles; 1025 drafts
  // x 128 heads: 2050 row tiles).
  if (tiles < 1 || tiles > (1 << 14) || row_tiles < 2 || row_tiles > (1 << 12) || blocks < 1 || blocks > (1 << 16) ||
      splits < 1 || splits >= max_splits)
    return keep;
  const int full = blocks / row_tiles < max_splits - 1 ? blocks / row_tiles : max_splits - 1;
  if (full < splits) return keep;
  const int idle = blocks - row_tiles * full;
  if (idle < 1 || idle >= row_tiles || 2 * idle < row_tiles) return keep;   // idle >= row_tiles: max_splits capped full
  const int L = (2 * tiles + kLaterItemTiles + 2 * full) / (2 * full + 1);  // ceil((2 tiles + K) / (2 full + 1))
  const int r = tiles - full * L;
  if (r < 1 || per_split - L < kMinGainTiles) return keep;
  return Choice{full + 1, L, blocks, true};
}

// The request-local number of local item i (0 <= i < n = row_tiles x splits, 0 <= rotate < n).
VATTN_PACK_FN int rotated(int i, int rotate, int n) {
  const int j = i + rotate;
  return j >= n ? j - n : j;
}

}  // namespace vattn::split_pack
