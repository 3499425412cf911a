// SPDX-License-Identifier: Apache-2.0
#include "tests/cpu/hand_case.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "vattn/case/bf16.h"

namespace vattn::test {

std::vector<int32_t> chain_parents(int t) {
  std::vector<int32_t> p(static_cast<size_t>(t));
  for (int i = 0; i < t; ++i) p[static_cast<size_t>(i)] = i - 1;
  return p;
}

Case hand_case(const std::string& name, int H, int dqk, int dv, const std::vector<HandRequest>& reqs, uint64_t seed,
               int spare_rows, float range) {
  Case c;
  c.name = name;
  c.num_heads = H;
  c.d_qk = dqk;
  c.d_v = dv;
  c.sm_scale = 0.1446796;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> uni(-range, range);
  int total_prefix = 0, total_drafts = 0;
  for (const auto& r : reqs) {
    total_prefix += r.prefix;
    total_drafts += static_cast<int>(r.parent.size());
  }
  const int pool_rows = total_prefix + spare_rows;
  auto fill = [&](std::vector<uint16_t>& v, size_t n) {
    v.resize(n);
    for (auto& x : v) x = float_to_bf16(uni(rng));
  };
  fill(c.kv_pool, static_cast<size_t>(pool_rows) * static_cast<size_t>(dqk));
  fill(c.q, static_cast<size_t>(total_drafts) * static_cast<size_t>(H) * static_cast<size_t>(dqk));
  fill(c.kv_draft, static_cast<size_t>(total_drafts) * static_cast<size_t>(dqk));
  std::vector<int32_t> slots(static_cast<size_t>(pool_rows));
  std::iota(slots.begin(), slots.end(), 0);
  std::shuffle(slots.begin(), slots.end(), rng);
  c.kv_indptr = {0};
  c.qo_indptr = {0};
  c.draft_mask_indptr = {0};
  size_t next_slot = 0;
  for (const auto& r : reqs) {
    for (int k = 0; k < r.prefix; ++k) c.kv_indices.push_back(slots[next_slot++]);
    c.kv_indptr.push_back(c.kv_indptr.back() + r.prefix);
    c.qo_indptr.push_back(c.qo_indptr.back() + static_cast<int32_t>(r.parent.size()));
    const auto m = mask_from_parents(r.parent);
    c.draft_mask.insert(c.draft_mask.end(), m.begin(), m.end());
    c.draft_mask_indptr.push_back(c.draft_mask_indptr.back() + static_cast<int64_t>(m.size()));
  }
  validate(c);
  return c;
}

}  // namespace vattn::test
