// SPDX-License-Identifier: Apache-2.0
// generate_case: recipe -> a valid case. Structure (lengths, trees, pool layout) first, then
// values token by token from the profile, then poison for everything outside every K(b,i).
#include "vattn/gen/generate.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "vattn/case/bf16.h"
#include "vattn/case/memory_limit.h"
#include "vattn/gen/gen_layout.h"
#include "vattn/gen/gen_rng.h"
#include "vattn/gen/gen_values.h"
#include "vattn/recipe/vocab.h"

namespace vattn {

namespace {

constexpr uint64_t kTreeSeedStream = 0x74726565ull;
// The generator holds the whole case in memory; past this the request is a mistake, not a case.
constexpr double kMaxCaseBytes = 16.0 * (1ull << 30);

// NaN, +Inf, -Inf and negative NaN in turn, so a kernel cannot get lucky with one kind.
void poison_row(uint16_t* row, size_t n, uint64_t salt) {
  static constexpr uint16_t kPattern[4] = {kBf16QuietNaN, kBf16PosInf, kBf16NegInf, 0xffc0};
  for (size_t d = 0; d < n; ++d) row[d] = kPattern[(d + salt) % 4];
}

void check_recipe(const Recipe& r) {
  if (r.prefix.empty()) throw InputError("", "", "P", "no requests (empty prefix list)");
  if (r.prefix.size() != r.drafts.size()) {
    throw InputError(
        "", "", "T",
        std::to_string(r.drafts.size()) + " draft counts for " + std::to_string(r.prefix.size()) + " prefix lengths");
  }
  if (r.heads < 1) throw InputError("", "", "H", "must be >= 1");
  for (size_t b = 0; b < r.prefix.size(); ++b) {
    if (r.prefix[b] < 0) throw InputError("", "", "P", "request " + std::to_string(b) + " has a negative prefix");
    if (r.drafts[b] < 1 || r.drafts[b] > vocab::kMaxDrafts) {
      throw InputError("", "", "T",
                       "request " + std::to_string(b) + " needs 1.." + std::to_string(vocab::kMaxDrafts) +
                           " drafts, got " + std::to_string(r.drafts[b]));
    }
  }
  int64_t total = 0;
  for (int p : r.prefix) total += p;
  if (total > std::numeric_limits<int32_t>::max())
    throw InputError("", "", "P", "total prefix length exceeds int32 (kv_indptr)");
  if (!vocab::is_tree_kind(r.tree)) throw InputError("", "", "tree", "unknown tree kind '" + r.tree + "'");
  if (!vocab::is_profile(r.profile)) throw InputError("", "", "profile", "unknown profile '" + r.profile + "'");
  if (!vocab::is_layout(r.layout)) throw InputError("", "", "layout", "unknown layout '" + r.layout + "'");
  if (!(r.sm_scale > 0) || !std::isfinite(r.sm_scale)) throw InputError("", "", "scale", "must be finite and > 0");
}

// The most pool rows the recipe's layout may give: a sparse pool holds 4x the prefix tokens, the
// others the tokens and a few unreferenced rows (gen_layout.cpp).
double pool_rows_bound(const Recipe& r) {
  double tokens = 0;
  for (int p : r.prefix) tokens += p;
  const double B = static_cast<double>(r.prefix.size());
  return r.layout == "sparse" ? 4 * tokens + 16 : tokens * 1.125 + 3.0 * (B + 1) + 2;
}

// Depth of each node (roots and padded nodes 0): drafts sit at positions P_b + depth.
std::vector<int> depths(const std::vector<int32_t>& parent) {
  std::vector<int> d(parent.size(), 0);
  for (size_t i = 0; i < parent.size(); ++i) d[i] = parent[i] >= 0 ? d[static_cast<size_t>(parent[i])] + 1 : 0;
  return d;
}

}  // namespace

namespace {

struct RecipeShapes {
  int64_t keys = 0, n_q = 0, mask = 0, rows = 0;
};

RecipeShapes shapes_of(const Recipe& r) {
  RecipeShapes s;
  for (size_t b = 0; b < r.prefix.size() && b < r.drafts.size(); ++b) {
    s.keys += r.prefix[b];
    s.n_q += r.drafts[b];
    s.mask += int64_t{r.drafts[b]} * r.drafts[b];
  }
  s.rows = static_cast<int64_t>(std::min(pool_rows_bound(r), 9e18));
  return s;
}

uint64_t add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

}  // namespace

uint64_t recipe_case_bytes(const Recipe& r) {
  const RecipeShapes s = shapes_of(r);
  // The layout's index arrays (a few bytes a row) are made beside the pool.
  return add(case_tensor_bytes(s.n_q, r.heads, vocab::kRowDims, vocab::kLatentDims, s.rows, s.keys, s.mask, 1),
             24 * static_cast<uint64_t>(s.rows));
}

uint64_t recipe_memory_estimate(const Recipe& r) {
  return add(recipe_case_bytes(r), oracle_scratch_bytes(shapes_of(r).n_q, r.heads, vocab::kLatentDims));
}

Case generate_case(const Recipe& r, const std::string& name) {
  check_recipe(r);
  Case c;
  c.name = name;
  c.recipe = r.to_line();
  c.num_heads = r.heads;
  c.d_qk = vocab::kRowDims;
  c.d_v = vocab::kLatentDims;
  c.sm_scale = r.sm_scale;
  const int B = static_cast<int>(r.prefix.size());
  const size_t dqk = static_cast<size_t>(c.d_qk), H = static_cast<size_t>(r.heads);
  const bool poison = r.poison || r.profile == "adversarial";

  // Checked before anything is allocated: the tensors against the generator's own cap, then
  // everything the case and its check will take against the memory limit (--max-memory).
  double n_q = 0, mask_bytes = 0;
  for (int b = 0; b < B; ++b) {
    n_q += r.drafts[static_cast<size_t>(b)];
    mask_bytes += static_cast<double>(r.drafts[static_cast<size_t>(b)]) * r.drafts[static_cast<size_t>(b)];
  }
  const double bytes = 2.0 * (pool_rows_bound(r) * dqk + n_q * (H + 1) * dqk) + mask_bytes;
  if (bytes > kMaxCaseBytes) {
    throw InputError("", "", "P",
                     "the case would hold " + std::to_string(bytes / (1ull << 30)) +
                         " GiB of tensors; the generator's limit is 16 GiB");
  }
  if (const std::string why = case_memory_problem(recipe_memory_estimate(r), "generated and checked"); !why.empty())
    throw InputError("", name, "", why);

  c.qo_indptr.assign(1, 0);
  c.kv_indptr.assign(1, 0);
  c.draft_mask_indptr.assign(1, 0);
  std::vector<std::vector<int32_t>> parents;
  bool any_padded = false;
  for (int b = 0; b < B; ++b) {
    const int t = r.drafts[static_cast<size_t>(b)];
    parents.push_back(make_tree(r.tree, t, gen::sub_seed(r.seed, kTreeSeedStream, static_cast<uint64_t>(b))));
    const auto mask = mask_from_parents(parents.back());
    c.draft_mask.insert(c.draft_mask.end(), mask.begin(), mask.end());
    for (int32_t p : parents.back()) any_padded = any_padded || p == kPaddedNode;
    c.qo_indptr.push_back(c.qo_indptr.back() + t);
    c.kv_indptr.push_back(c.kv_indptr.back() + r.prefix[static_cast<size_t>(b)]);
    c.draft_mask_indptr.push_back(c.draft_mask_indptr.back() + static_cast<int64_t>(t) * t);
  }
  if (!any_padded) {  // files store parents only when they can express the mask (no padding)
    for (const auto& p : parents) c.draft_parent.insert(c.draft_parent.end(), p.begin(), p.end());
  }

  const auto layout = gen::make_layout(r.layout, r.prefix, poison, r.seed);
  c.kv_indices = layout.row_of_token;
  c.kv_slot_ids = layout.slot_ids;
  c.kv_pool.assign(static_cast<size_t>(layout.n_rows) * dqk, 0);
  c.kv_draft.assign(static_cast<size_t>(c.n_q()) * dqk, 0);
  c.q.assign(static_cast<size_t>(c.n_q()) * H * dqk, 0);

  auto profile = gen::make_profile(r);
  size_t token = 0;
  for (int b = 0; b < B; ++b) {
    for (int p = 0; p < c.prefix_len(b); ++p, ++token) {
      profile->prefix_row(b, p, &c.kv_pool[static_cast<size_t>(layout.row_of_token[token]) * dqk]);
    }
  }
  for (int b = 0; b < B; ++b) {
    const auto depth = depths(parents[static_cast<size_t>(b)]);
    for (int i = 0; i < c.drafts(b); ++i) {
      const size_t row = static_cast<size_t>(c.qo_indptr[b]) + static_cast<size_t>(i);
      const int pos = c.prefix_len(b) + depth[static_cast<size_t>(i)];
      profile->draft_row(b, i, pos, &c.kv_draft[row * dqk]);
      for (size_t h = 0; h < H; ++h) profile->query_row(b, i, pos, static_cast<int>(h), &c.q[(row * H + h) * dqk]);
    }
  }
  for (int64_t row = 0; row < layout.n_rows; ++row) {
    if (layout.referenced[static_cast<size_t>(row)]) continue;
    uint16_t* dst = &c.kv_pool[static_cast<size_t>(row) * dqk];
    if (poison) {
      poison_row(dst, dqk, static_cast<uint64_t>(row));
    } else {
      profile->filler_row(dst);
    }
  }
  profile->finish(c, layout);

  if (poison) {
    // Padded nodes: nobody attends their KV rows. Their queries still attend the prefix when
    // there is one (the prefix is always visible), so only a prefix-less padded row's query is
    // truly unused and may be garbage.
    for (int b = 0; b < B; ++b) {
      for (int i = 0; i < c.drafts(b); ++i) {
        if (parents[static_cast<size_t>(b)][static_cast<size_t>(i)] != kPaddedNode) continue;
        const size_t row = static_cast<size_t>(c.qo_indptr[b]) + static_cast<size_t>(i);
        poison_row(&c.kv_draft[row * dqk], dqk, row);
        if (c.prefix_len(b) == 0) poison_row(&c.q[row * H * dqk], H * dqk, row + 1);
      }
    }
  }
  validate(c);
  return c;
}

}  // namespace vattn
