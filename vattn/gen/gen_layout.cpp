// SPDX-License-Identifier: Apache-2.0
// Pool layouts. Values are generated per token, independent of the layout, so two recipes that
// differ only in layout describe the same attention problem (the slot-permutation property).
#include "vattn/gen/gen_layout.h"

#include <numeric>
#include <utility>

#include "vattn/case/case.h"
#include "vattn/gen/gen_rng.h"
#include "vattn/recipe/vocab.h"

namespace vattn::gen {

namespace {

constexpr uint64_t kLayoutStream = 0x6c61796f7574ull;  // "layout"

// A random permutation of [0, n) (Fisher-Yates with our own generator).
std::vector<int32_t> permutation(int64_t n, Rng& rng) {
  std::vector<int32_t> p(static_cast<size_t>(n));
  std::iota(p.begin(), p.end(), 0);
  for (int64_t i = n - 1; i > 0; --i) std::swap(p[static_cast<size_t>(i)], p[rng.below(static_cast<uint64_t>(i) + 1)]);
  return p;
}

// Requests' blocks in order, with 1..3 unreferenced rows before each block and after the last
// when `gaps` (the rows a tile reading past a request's end would touch).
void blocks_in_order(const std::vector<int>& prefix, bool gaps, Rng& rng, PoolLayout& L) {
  int64_t row = 0;
  for (int p : prefix) {
    if (gaps) row += 1 + static_cast<int64_t>(rng.below(3));
    for (int k = 0; k < p; ++k) L.row_of_token.push_back(static_cast<int32_t>(row++));
  }
  if (gaps) row += 1 + static_cast<int64_t>(rng.below(3));
  L.n_rows = row;
}

}  // namespace

PoolLayout make_layout(const std::string& kind, const std::vector<int>& prefix, bool gaps, uint64_t seed) {
  if (!vocab::is_layout(kind))
    throw InputError("", "", "layout", "unknown layout '" + kind + "' (" + vocab::kLayouts + ")");
  Rng rng(seed, kLayoutStream);
  int64_t tokens = 0;
  for (int p : prefix) tokens += p;
  PoolLayout L;
  L.row_of_token.reserve(static_cast<size_t>(tokens));
  if (kind == "contiguous" || kind == "reversed") {
    blocks_in_order(prefix, gaps, rng, L);
    if (kind == "reversed") {
      for (auto& r : L.row_of_token) r = static_cast<int32_t>(L.n_rows - 1 - r);
    }
  } else if (kind == "scattered") {
    // A capture that kept only the rows it needed (plus a few strays with gaps), stored in
    // original-slot order; the slots themselves were spread over a pool twice as large.
    L.n_rows = tokens + (gaps ? tokens / 8 + 2 : 0);
    const auto perm = permutation(L.n_rows, rng);
    L.row_of_token.assign(perm.begin(), perm.begin() + tokens);
    const uint64_t range = static_cast<uint64_t>(2 * L.n_rows + 64);
    uint64_t need = static_cast<uint64_t>(L.n_rows);
    for (uint64_t slot = 0; slot < range && need > 0; ++slot) {  // Knuth's selection sampling: sorted, distinct
      if (rng.below(range - slot) < need) {
        L.slot_ids.push_back(static_cast<int64_t>(slot));
        --need;
      }
    }
  } else {  // sparse: a whole pool four times larger than needed, referenced rows anywhere in it
    L.n_rows = 4 * tokens + 16;
    const auto perm = permutation(L.n_rows, rng);
    L.row_of_token.assign(perm.begin(), perm.begin() + tokens);
    L.slot_ids.resize(static_cast<size_t>(L.n_rows));
    std::iota(L.slot_ids.begin(), L.slot_ids.end(), int64_t{0});
  }
  L.referenced.assign(static_cast<size_t>(L.n_rows), 0);
  for (int32_t r : L.row_of_token) L.referenced[static_cast<size_t>(r)] = 1;
  return L;
}

}  // namespace vattn::gen
