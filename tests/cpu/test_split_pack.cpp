// SPDX-License-Identifier: Apache-2.0
// split-v2's packed remainders (kernels/split_pack.h): the plan choose() makes and where the
// partial kernel's grid-stride loop then runs each item. Checked for every small shape and for
// the shapes of `vattn bench` on the H200's 132 SMs.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "kernels/split_pack.h"

using vattn::split_pack::Choice;
using vattn::split_pack::choose;
using vattn::split_pack::kLaterItemTiles;
using vattn::split_pack::kMinGainTiles;
using vattn::split_pack::rotated;

namespace {

// The unpacked plan of one request alone on `blocks` blocks, as split_plan.cuh makes it: the
// whole grid is its share, ceil(tiles / share) tiles a split (at least 2, split-v2's minimum),
// then the count from the rounded cut.
Choice unpacked(int tiles, int row_tiles, int blocks, int max_splits) {
  int share = std::min(std::max(blocks / row_tiles, 1), max_splits);
  const int per_split = std::max((tiles + share - 1) / share, 2);
  return Choice{(tiles + per_split - 1) / per_split, per_split, 0, false};
}

// Why the plan `c` of `tiles` x `row_tiles` on `blocks` blocks is wrong, or "". Walks the
// kernel's loop (block b: items b, b + blocks, ...) through the rotation: every (split, row
// tile) exactly once; tiles per split as the kernel cuts them (chunk, clamped to the keys); a
// packed plan puts no second item on a block with a full split, its longest block is below
// the unpacked one, and a block of remainders stays within a full split by the cost model.
std::string plan_fault(const Choice& c, int tiles, int row_tiles, int blocks, const Choice& base) {
  const int n = row_tiles * c.splits;
  if (c.rotate < 0 || (n > 0 && c.rotate >= n))
    return "rotate " + std::to_string(c.rotate) + " outside [0, " + std::to_string(n) + ")";
  std::vector<int> seen(n, 0);
  int longest = 0, longest_full_block = 0;
  for (int b = 0; b < blocks; ++b) {
    int cost = 0, items = 0;
    bool full_here = false;
    for (int i = b; i < n; i += blocks) {
      const int num = rotated(i, c.rotate, n);
      if (num < 0 || num >= n) return "item " + std::to_string(i) + " -> " + std::to_string(num);
      ++seen[num];
      const int split = num / row_tiles;
      const int len = std::max(0, std::min(tiles, (split + 1) * c.per_split) - split * c.per_split);
      full_here |= len == c.per_split;
      cost += len + (items > 0 ? kLaterItemTiles : 0);
      ++items;
    }
    if (c.packed && full_here && items > 1) return "block " + std::to_string(b) + " runs a full split and more";
    longest = std::max(longest, cost);
    if (full_here) longest_full_block = std::max(longest_full_block, cost);
  }
  for (int k = 0; k < n; ++k)
    if (seen[k] != 1) return "number " + std::to_string(k) + " runs " + std::to_string(seen[k]) + " times";
  if (c.splits != (tiles + c.per_split - 1) / c.per_split) return "split count does not match the cut";
  if (c.packed) {
    if (longest > longest_full_block) return "a block of remainders is the longest (" + std::to_string(longest) + ")";
    if (longest > base.per_split - kMinGainTiles) return "gain below kMinGainTiles";
  }
  return "";
}

}  // namespace

TEST_CASE("a packed plan runs each item once, full splits alone, and shortens the longest block", "[split_pack]") {
  int packed = 0, checked = 0;
  // max_splits 12: the limit, not the grid, caps the full splits of many of these plans.
  for (const int max_splits : {128, 12})
    for (int blocks = 1; blocks <= 140; blocks += (blocks < 40 ? 1 : 7))
      for (int row_tiles = 1; row_tiles <= 12; ++row_tiles)
        for (int tiles = 1; tiles <= 700; tiles += (tiles < 100 ? 1 : 13)) {
          const Choice base = unpacked(tiles, row_tiles, blocks, max_splits);
          const Choice c = choose(tiles, row_tiles, blocks, base.splits, base.per_split, max_splits);
          ++checked;
          packed += c.packed ? 1 : 0;
          if (!c.packed) {  // unchanged, not rotated
            if (c.splits != base.splits || c.per_split != base.per_split || c.rotate != 0) {
              INFO("blocks " << blocks << " row tiles " << row_tiles << " tiles " << tiles << " max splits "
                             << max_splits);
              FAIL("an unpacked choice changed the plan");
            }
            continue;
          }
          const std::string fault =
              c.splits > max_splits ? "more splits than max_splits" : plan_fault(c, tiles, row_tiles, blocks, base);
          if (!fault.empty()) {
            INFO("blocks " << blocks << " row tiles " << row_tiles << " tiles " << tiles << " max splits " << max_splits
                           << ": " << c.splits << " splits of " << c.per_split << ", rotate " << c.rotate);
            FAIL(fault);
          }
        }
  INFO(packed << " of " << checked << " plans packed");
  CHECK(packed > 100);  // the sweep reaches the packed branch, not only the unpacked one
}

TEST_CASE("the split limit and the bounds keep the unpacked plan", "[split_pack]") {
  // 16 splits of 129 tiles at B=1 T=64 P=65536 would pack on 132 blocks (next test), but not
  // when a 17th split is past max_splits, nor for one row tile or an empty request.
  CHECK_FALSE(choose(2050, 8, 132, 16, 129, 16).packed);
  CHECK_FALSE(choose(2050, 1, 132, 16, 129, 128).packed);
  CHECK_FALSE(choose(0, 8, 132, 16, 129, 128).packed);
  CHECK_FALSE(choose(1 << 15, 8, 132, 16, 2048, 128).packed);
  // No idle block (8 x 16 = 128 on 128 blocks), or too few for two remainders a block (8 x 16
  // on 131: 3 idle, 5 blocks would need a second item).
  CHECK_FALSE(choose(2050, 8, 128, 16, 129, 128).packed);
  CHECK_FALSE(choose(2050, 8, 131, 16, 129, 128).packed);
  // B=1 T=64 P=4096 (130 tiles) packs as 16 full splits and a remainder (next test), but with
  // max_splits 16 only 15 full splits fit, 12 blocks idle: no block would take two remainders,
  // and a rotation by the grid would run past the 128 items.
  CHECK(choose(130, 8, 132, 15, 9, 128).packed);
  CHECK_FALSE(choose(130, 8, 132, 15, 9, 16).packed);
  CHECK(choose(130, 8, 132, 15, 9, 17).splits == 17);
}

TEST_CASE("on 132 SMs the bench shapes with B=1 pack only at T=64", "[split_pack]") {
  struct Shape {
    int drafts, prefix;
    bool packed;
    int splits, per_split;
  };
  // H=8: T=16 has 2 row tiles of 64 rows, T=64 has 8. Tiles: ceil((P + T) / 32). At P=4096 the
  // whole-tile cut uses 15 splits of 9 tiles; packed, 16 full splits of 8 and the two draft tiles
  // as remainders, two to each of the 4 blocks left.
  for (const Shape& s :
       {Shape{16, 4096, false, 0, 0}, Shape{16, 131072, false, 0, 0}, Shape{64, 4096, true, 17, 8},
        Shape{64, 16384, true, 17, 32}, Shape{64, 65536, true, 17, 125}, Shape{64, 91000, true, 17, 173},
        Shape{64, 131072, true, 17, 249}, Shape{1, 131072, false, 0, 0}}) {
    const int tiles = (s.prefix + s.drafts + 31) / 32, row_tiles = (s.drafts * 8 + 63) / 64;
    const Choice base = unpacked(tiles, row_tiles, 132, 128);
    const Choice c = choose(tiles, row_tiles, 132, base.splits, base.per_split, 128);
    INFO("T " << s.drafts << " P " << s.prefix << ": " << base.splits << " splits of " << base.per_split << " -> "
              << c.splits << " of " << c.per_split);
    CHECK(c.packed == s.packed);
    if (s.packed) {
      CHECK(c.splits == s.splits);
      CHECK(c.per_split == s.per_split);
      CHECK(c.rotate == 132);
      const std::string fault = plan_fault(c, tiles, row_tiles, 132, base);
      INFO("plan fault: " << fault);
      CHECK(fault.empty());
    }
  }
}
