// SPDX-License-Identifier: Apache-2.0
// Draft-tree shapes. Every builder assigns node indices in creation order, so a parent always
// has a smaller index than its children (the contract's rule), and the mask follows from the
// parent links alone.
#include <algorithm>
#include <queue>

#include "vattn/gen/gen_rng.h"
#include "vattn/gen/generate.h"
#include "vattn/recipe/vocab.h"

namespace vattn {

namespace {

constexpr uint64_t kTreeStream = 0x7472656573ull;  // "trees"

std::vector<int32_t> random_tree(int t, gen::Rng& rng) {
  std::vector<int32_t> p(static_cast<size_t>(t), -1);
  for (int i = 1; i < t; ++i) p[static_cast<size_t>(i)] = static_cast<int32_t>(rng.below(static_cast<uint64_t>(i)));
  return p;
}

// Best-first growth as in DDTree / EAGLE-2 dynamic trees: each node offers its top-k next
// tokens with the draft model's probabilities; the tree repeatedly takes the candidate with
// the highest path probability. Probabilities are products (no logs: bit-reproducible), ties
// go to the older candidate.
std::vector<int32_t> ddtree(int t, gen::Rng& rng) {
  constexpr int kTopK = 8;
  struct Candidate {
    double path_prob;
    uint64_t order;
    int32_t parent;
  };
  const auto worse = [](const Candidate& a, const Candidate& b) {
    return a.path_prob != b.path_prob ? a.path_prob < b.path_prob : a.order > b.order;
  };
  std::priority_queue<Candidate, std::vector<Candidate>, decltype(worse)> frontier(worse);
  uint64_t order = 0;
  const auto offer_children = [&](int32_t node, double node_prob) {
    // A peaked next-token distribution: weights u^6 put most mass on the first one or two.
    double w[kTopK], sum = 0;
    for (double& x : w) {
      const double u = rng.uniform01();
      x = u * u * u * u * u * u;
      sum += x;
    }
    if (sum <= 0) return;
    std::sort(w, w + kTopK, [](double a, double b) { return a > b; });
    for (double x : w) frontier.push({node_prob * (x / sum), order++, node});
  };
  std::vector<int32_t> p{-1};
  offer_children(0, 1.0);
  while (static_cast<int>(p.size()) < t) {
    if (frontier.empty()) {  // every candidate had zero weight (only with absurd draws): attach to the root
      p.push_back(0);
      continue;
    }
    const Candidate best = frontier.top();
    frontier.pop();
    const auto node = static_cast<int32_t>(p.size());
    p.push_back(best.parent);
    offer_children(node, best.path_prob);
  }
  return p;
}

}  // namespace

std::vector<int32_t> make_tree(const std::string& kind, int t, uint64_t seed) {
  if (!vocab::is_tree_kind(kind))
    throw InputError("", "", "tree", "unknown tree kind '" + kind + "' (" + vocab::kTreeKinds + ")");
  if (t < 1) throw InputError("", "", "T", "a draft tree needs at least 1 node, got " + std::to_string(t));
  gen::Rng rng(seed, kTreeStream);
  const auto n = static_cast<size_t>(t);
  std::vector<int32_t> p(n, -1);
  if (kind == "chain") {
    for (size_t i = 1; i < n; ++i) p[i] = static_cast<int32_t>(i - 1);
  } else if (kind == "random") {
    p = random_tree(t, rng);
  } else if (kind == "star") {
    for (size_t i = 1; i < n; ++i) p[i] = 0;
  } else if (kind == "ddtree") {
    p = ddtree(t, rng);
  } else if (kind == "deep") {
    // Long chains: each node extends the newest one, except one in twelve, which forks off
    // 1-4 levels above the tip (a second guess a few tokens back) and becomes the new tip.
    for (size_t i = 1; i < n; ++i) {
      auto parent = static_cast<int32_t>(i - 1);
      if (rng.chance(1.0 / 12)) {
        for (uint64_t up = 1 + rng.below(4); up > 0 && p[static_cast<size_t>(parent)] >= 0; --up) {
          parent = p[static_cast<size_t>(parent)];
        }
      }
      p[i] = parent;
    }
  } else if (kind == "wide") {
    // Three levels: about sqrt(t) children of the root, everyone else a child of one of them.
    size_t width = 1;
    while ((width + 1) * (width + 1) <= n) ++width;
    for (size_t i = 1; i < n; ++i) p[i] = i <= width ? 0 : static_cast<int32_t>(1 + rng.below(width));
  } else {  // padded: a real random tree, then graph-padding nodes that see nothing
    const int pads = t >= 2 ? 1 + static_cast<int>(rng.below(static_cast<uint64_t>(t / 2))) : 0;
    p = random_tree(t - pads, rng);
    p.resize(n, kPaddedNode);
  }
  return p;
}

}  // namespace vattn
