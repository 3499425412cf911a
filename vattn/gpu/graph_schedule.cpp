// SPDX-License-Identifier: Apache-2.0
#include "vattn/gpu/graph_schedule.h"

#include <algorithm>
#include <numeric>

#include "vattn/gen/gen_rng.h"

namespace vattn {

namespace {

constexpr uint64_t kScheduleStream = 0x6772617068ull;  // "graph"
const char* const kTrees[] = {"chain", "random", "star", "ddtree", "deep", "wide", "padded"};
const char* const kProfiles[] = {"uniform", "k26", "ties", "adversarial", "huge", "tiny"};
const char* const kLayouts[] = {"scattered", "contiguous", "sparse", "reversed"};

Recipe base(const SlotShape& shape, uint64_t seed) {
  Recipe r;
  r.heads = shape.limits.num_heads;
  r.sm_scale = shape.sm_scale;
  r.seed = seed;
  return r;
}

// Lowers the largest counts until the total fits n_q (every count stays >= 1).
void fit_total(std::vector<int>& drafts, int64_t n_q) {
  while (std::accumulate(drafts.begin(), drafts.end(), int64_t{0}) > n_q) {
    auto it = std::max_element(drafts.begin(), drafts.end());
    if (*it <= 1) break;
    --*it;
  }
}

// The same, but lowering requests picked at random, so the counts do not all end up equal.
void fit_total(std::vector<int>& drafts, int64_t n_q, gen::Rng& rng) {
  int64_t excess = std::accumulate(drafts.begin(), drafts.end(), int64_t{0}) - n_q;
  for (int guard = 0; excess > 0 && guard < 1 << 20; ++guard) {
    int& t = drafts[rng.below(drafts.size())];
    if (t <= 1) continue;
    const int cut =
        static_cast<int>(std::min<int64_t>(excess, 1 + static_cast<int64_t>(rng.below(static_cast<uint64_t>(t - 1)))));
    t -= cut;
    excess -= cut;
  }
  fit_total(drafts, n_q);
}

}  // namespace

Recipe capture_recipe(const SlotShape& shape, uint64_t seed) {
  static const int kPrefix[] = {5, 0, 17, 1};
  static const int kDrafts[] = {2, 1, 3, 1};
  Recipe r = base(shape, seed);
  const int B = shape.limits.max_requests;
  for (int b = 0; b < B; ++b) {
    r.prefix.push_back(std::min(kPrefix[b % 4], shape.max_prefix));
    r.drafts.push_back(std::min(kDrafts[b % 4], shape.limits.max_drafts_per_request));
  }
  fit_total(r.drafts, shape.limits.max_total_drafts);
  return r;
}

Recipe replay_recipe(const SlotShape& shape, uint64_t seed, int index) {
  gen::Rng rng(seed, kScheduleStream + static_cast<uint64_t>(index));
  Recipe r = base(shape, seed * 1000003ull + static_cast<uint64_t>(index));
  const int B = shape.limits.max_requests, T = shape.limits.max_drafts_per_request, P = shape.max_prefix;
  const int S = shape.limits.max_splits;
  // Tile edges (32 keys, 128-key split minimum) and the spec's favourite lengths.
  const int prefix_menu[] = {0, 1, 31, 32, 33, 77, 127, 128, 129, 4099};
  const int draft_menu[] = {1, 2, 15, 16, 17, 31, 32, 33, 63, 64, 65};
  for (int b = 0; b < B; ++b) {
    int p;
    if (index % 8 == 0) {
      p = P;
    } else if (index % 8 == 1) {
      p = 0;
    } else {
      const uint64_t pick = rng.below(13);
      p = pick < 10 ? prefix_menu[pick] : pick == 10 ? P : static_cast<int>(rng.below(static_cast<uint64_t>(P) + 1));
    }
    int t = rng.chance(0.5) ? draft_menu[rng.below(11)] : 1 + static_cast<int>(rng.below(static_cast<uint64_t>(T)));
    if (index % 8 == 2 && b == 0) t = T;
    if (index % 8 > 2 && rng.chance(0.2)) p = 0, t = 1;  // a padding request
    r.prefix.push_back(std::min(p, P));
    r.drafts.push_back(std::max(1, std::min(t, T)));
  }
  if (index % 8 == 2 && B > 1 && T + (B - 1) <= shape.limits.max_total_drafts) {
    // Keep request 0 at the per-request limit; the others share what n_q leaves.
    std::vector<int> rest(r.drafts.begin() + 1, r.drafts.end());
    fit_total(rest, shape.limits.max_total_drafts - T, rng);
    std::copy(rest.begin(), rest.end(), r.drafts.begin() + 1);
  } else {
    fit_total(r.drafts, shape.limits.max_total_drafts, rng);
  }
  r.tree = kTrees[static_cast<size_t>(index) % 7];
  r.profile = kProfiles[static_cast<size_t>(index / 2) % 6];
  r.layout = kLayouts[static_cast<size_t>(index / 3) % 4];
  r.poison = index % 2 == 1;
  // 0 = the kernel picks; otherwise forced, the largest and the smallest first.
  const int phase = index % 3, round = index / 3;
  if (phase == 0) {
    r.splits = 0;
  } else if (round % 2 == 0) {
    r.splits = phase == 1 ? S : 1;
  } else {
    r.splits = 1 + static_cast<int>(rng.below(static_cast<uint64_t>(S)));
  }
  return r;
}

Recipe limits_base_recipe(const SlotShape& shape, uint64_t seed) {
  Recipe r = base(shape, seed);
  const int B = shape.limits.max_requests;
  for (int b = 0; b < B; ++b) {
    r.prefix.push_back(std::min(shape.max_prefix, 40 + 37 * b));
    r.drafts.push_back(std::min(shape.limits.max_drafts_per_request, 1 + b % 5));
  }
  fit_total(r.drafts, shape.limits.max_total_drafts);
  r.tree = "random";
  r.profile = "uniform";
  r.layout = "scattered";
  r.poison = false;
  return r;
}

}  // namespace vattn
