// SPDX-License-Identifier: Apache-2.0
// Properties of the float64 CPU oracle over shrinkable generated cases (vattn/fuzz/gen/gen_recipe.h),
// plus the checks that the generators shrink and that the RapidCheck glue reproduces.
// The metamorphic properties need no second oracle: each transforms a generated Case and
// states what must (not) change. Sizes: VATTN_FUZZ_BUDGET (default small), case counts:
// VATTN_FUZZ_CASES or RC_PARAMS (see vattn/fuzz/README.md).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <rapidcheck.h>
#include <catch2/catch.hpp>

#include "tests/support/rc_support.h"
#include "vattn/case/bf16.h"
#include "vattn/case/case.h"
#include "vattn/fuzz/gen/gen_recipe.h"
#include "vattn/gen/generate.h"
#include "vattn/oracle/cpu_oracle.h"

using namespace vattn;

namespace {

const GenBudget& budget() {
  static const GenBudget b = GenBudget::from_env();
  return b;
}

std::string where(const Case& c, int64_t row, int h) {
  int b = 0;
  while (b + 1 < c.num_requests() && c.qo_indptr[static_cast<size_t>(b) + 1] <= row) ++b;
  std::ostringstream os;
  os << "request " << b << " draft " << (row - c.qo_indptr[static_cast<size_t>(b)]) << " head " << h;
  return os.str();
}

// The bit pattern of a double: equal patterns mean equal bits, NaN payloads and -0.0 included.
uint64_t bits_of(double x) {
  static_assert(sizeof(uint64_t) == sizeof(double), "double is 64 bits");
  uint64_t u = 0;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

bool same_bits(double a, double b) { return bits_of(a) == bits_of(b); }

// "" when out and lse agree bit for bit; else the first difference, located.
std::string bitwise_difference(const Case& c, const Reference& a, const Reference& b) {
  const int H = c.num_heads, dv = c.d_v;
  if (a.out.size() != b.out.size() || a.lse.size() != b.lse.size()) return "output sizes differ";
  for (int64_t row = 0; row < c.n_q(); ++row) {
    for (int h = 0; h < H; ++h) {
      const size_t rh = static_cast<size_t>(row * H + h);
      if (!same_bits(a.lse[rh], b.lse[rh])) {
        std::ostringstream os;
        os.precision(17);
        os << where(c, row, h) << ": lse " << a.lse[rh] << " vs " << b.lse[rh];
        return os.str();
      }
      for (int d = 0; d < dv; ++d) {
        const size_t i = rh * static_cast<size_t>(dv) + static_cast<size_t>(d);
        if (!same_bits(a.out[i], b.out[i])) {
          std::ostringstream os;
          os.precision(17);
          os << where(c, row, h) << " column " << d << ": out " << a.out[i] << " vs " << b.out[i];
          return os.str();
        }
      }
    }
  }
  return "";
}

// Float64 rounding only: a different summation order moves a result by ~1e-16 of the scale
// it was summed at (sum_k p_k |v_k| for out, the largest |logit| for lse); 1e-12 leaves room
// for 576-term dot products and thousands of keys while still catching any real error.
constexpr double kRel = 1e-12;

bool close(double x, double ref, double scale) {
  if (std::isnan(ref) || std::isinf(ref)) return same_bits(x, ref) || (std::isnan(x) && std::isnan(ref));
  return std::abs(x - ref) <= kRel * (scale + std::abs(ref)) + 1e-300;
}

// K(b,i) as row pointers into the case (prefix rows in token order, then visible drafts).
std::vector<const uint16_t*> visible_keys(const Case& c, int b, int i) {
  std::vector<const uint16_t*> keys;
  const size_t dqk = static_cast<size_t>(c.d_qk);
  for (int32_t k = c.kv_indptr[static_cast<size_t>(b)]; k < c.kv_indptr[static_cast<size_t>(b) + 1]; ++k) {
    keys.push_back(&c.kv_pool[static_cast<size_t>(c.kv_indices[static_cast<size_t>(k)]) * dqk]);
  }
  for (int j = 0; j < c.drafts(b); ++j) {
    if (c.visible(b, i, j))
      keys.push_back(&c.kv_draft[static_cast<size_t>(c.qo_indptr[static_cast<size_t>(b)] + j) * dqk]);
  }
  return keys;
}

// Plain attention of one (row, head) over the given keys, written here from the contract.
struct RowAttention {
  std::vector<double> logits;
  std::vector<double> out;
  double lse = -std::numeric_limits<double>::infinity();
  double abs_pv = 0;       // sum_k p_k max_d |v_kd|: bounds every column's sum_k p_k |v_kd|
  double logit_scale = 0;  // max_k sm_scale * sum_d |q_d k_d|
};

RowAttention attend_row(const Case& c, int64_t row, int h, const std::vector<const uint16_t*>& keys) {
  RowAttention r;
  const int dqk = c.d_qk, dv = c.d_v;
  const uint16_t* q = &c.q[(static_cast<size_t>(row) * static_cast<size_t>(c.num_heads) + static_cast<size_t>(h)) *
                           static_cast<size_t>(dqk)];
  r.out.assign(static_cast<size_t>(dv), 0.0);
  if (keys.empty()) return r;
  double m = -std::numeric_limits<double>::infinity();
  for (const uint16_t* k : keys) {
    double s = 0, sa = 0;
    for (int d = 0; d < dqk; ++d) {
      const double p = static_cast<double>(bf16_to_float(q[d])) * bf16_to_float(k[d]);
      s += p;
      sa += std::abs(p);
    }
    r.logits.push_back(c.sm_scale * s);
    // Non-finite inputs (a garbage query) make the scale infinite, which callers test for.
    r.logit_scale =
        std::isfinite(sa) ? std::max(r.logit_scale, c.sm_scale * sa) : std::numeric_limits<double>::infinity();
    m = std::max(m, c.sm_scale * s);
  }
  double sum = 0;
  for (double s : r.logits) sum += std::exp(s - m);
  r.lse = m + std::log(sum);
  for (size_t k = 0; k < keys.size(); ++k) {
    const double p = std::exp(r.logits[k] - m) / sum;
    double vmax = 0;
    for (int d = 0; d < dv; ++d) {
      const double v = bf16_to_float(keys[k][d]);
      r.out[static_cast<size_t>(d)] += p * v;
      vmax = std::max(vmax, std::abs(v));
    }
    r.abs_pv += p * vmax;
  }
  return r;
}

// The same case holding only request b (the pool is kept whole, indices unchanged).
Case single_request(const Case& c, int b) {
  Case s;
  s.name = c.name + "_request" + std::to_string(b);
  s.num_heads = c.num_heads;
  s.d_qk = c.d_qk;
  s.d_v = c.d_v;
  s.sm_scale = c.sm_scale;
  const size_t ub = static_cast<size_t>(b);
  const size_t q0 = static_cast<size_t>(c.qo_indptr[ub]), q1 = static_cast<size_t>(c.qo_indptr[ub + 1]);
  const size_t qrow = static_cast<size_t>(c.num_heads) * static_cast<size_t>(c.d_qk), dqk = static_cast<size_t>(c.d_qk);
  s.q.assign(c.q.begin() + static_cast<std::ptrdiff_t>(q0 * qrow),
             c.q.begin() + static_cast<std::ptrdiff_t>(q1 * qrow));
  s.kv_draft.assign(c.kv_draft.begin() + static_cast<std::ptrdiff_t>(q0 * dqk),
                    c.kv_draft.begin() + static_cast<std::ptrdiff_t>(q1 * dqk));
  s.kv_pool = c.kv_pool;
  s.kv_slot_ids = c.kv_slot_ids;
  s.kv_indices.assign(c.kv_indices.begin() + c.kv_indptr[ub], c.kv_indices.begin() + c.kv_indptr[ub + 1]);
  s.kv_indptr = {0, c.prefix_len(b)};
  s.qo_indptr = {0, c.drafts(b)};
  s.draft_mask.assign(c.draft_mask.begin() + c.draft_mask_indptr[ub],
                      c.draft_mask.begin() + c.draft_mask_indptr[ub + 1]);
  s.draft_mask_indptr = {0, static_cast<int64_t>(s.draft_mask.size())};
  if (!c.draft_parent.empty()) {
    s.draft_parent.assign(c.draft_parent.begin() + static_cast<std::ptrdiff_t>(q0),
                          c.draft_parent.begin() + static_cast<std::ptrdiff_t>(q1));
  }
  return s;
}

Case single_head(const Case& c, int h) {
  Case s = c;
  s.outputs.clear();
  s.num_heads = 1;
  const size_t dqk = static_cast<size_t>(c.d_qk), H = static_cast<size_t>(c.num_heads);
  s.q.resize(static_cast<size_t>(c.n_q()) * dqk);
  for (size_t row = 0; row < static_cast<size_t>(c.n_q()); ++row) {
    std::copy_n(c.q.begin() + static_cast<std::ptrdiff_t>((row * H + static_cast<size_t>(h)) * dqk), dqk,
                s.q.begin() + static_cast<std::ptrdiff_t>(row * dqk));
  }
  return s;
}

// Every pool row moved to another slot (plus `extra` slots holding copies of other rows, so
// the pool grows), kv_indices (and kv_slot_ids) following the rows.
Case moved_rows(const Case& c, uint64_t perm_seed, int extra) {
  Case m = c;
  m.outputs.clear();
  const int64_t n = c.n_rows(), total = n + extra;
  const size_t dqk = static_cast<size_t>(c.d_qk);
  std::vector<int64_t> slot(static_cast<size_t>(total));
  std::iota(slot.begin(), slot.end(), 0);
  std::mt19937_64 rng(perm_seed);
  std::shuffle(slot.begin(), slot.end(), rng);
  m.kv_pool.assign(static_cast<size_t>(total) * dqk, 0);
  for (int64_t r = 0; r < total; ++r) {
    const int64_t src = n > 0 ? r % n : -1;
    if (src < 0) continue;
    std::copy_n(
        c.kv_pool.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(src) * dqk), dqk,
        m.kv_pool.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(slot[static_cast<size_t>(r)]) * dqk));
  }
  for (auto& idx : m.kv_indices) idx = static_cast<int32_t>(slot[static_cast<size_t>(idx)]);
  if (!c.kv_slot_ids.empty()) {
    m.kv_slot_ids.assign(static_cast<size_t>(total), 0);
    const int64_t top = *std::max_element(c.kv_slot_ids.begin(), c.kv_slot_ids.end());
    for (int64_t r = 0; r < total; ++r) {
      m.kv_slot_ids[static_cast<size_t>(slot[static_cast<size_t>(r)])] =
          r < n ? c.kv_slot_ids[static_cast<size_t>(r)] : top + 1 + (r - n);
    }
  }
  return m;
}

constexpr uint16_t kPoison[] = {kBf16QuietNaN, kBf16PosInf, kBf16NegInf, 0x7f81 /* signalling NaN */, 0xffc1};

void fill_poison(uint16_t* row, size_t n, size_t salt) {
  for (size_t i = 0; i < n; ++i) row[i] = kPoison[(i + salt) % (sizeof kPoison / sizeof kPoison[0])];
}

// NaN/Inf in everything outside every K(b,i): unreferenced pool rows (plus a few new ones),
// drafts no row sees, and the q of rows whose K is empty.
Case poisoned(const Case& c) {
  Case p = c;
  p.outputs.clear();
  const size_t dqk = static_cast<size_t>(c.d_qk), H = static_cast<size_t>(c.num_heads);
  constexpr int kExtraRows = 3;
  p.kv_pool.resize(p.kv_pool.size() + kExtraRows * dqk);
  if (!p.kv_slot_ids.empty()) {
    const int64_t top = *std::max_element(c.kv_slot_ids.begin(), c.kv_slot_ids.end());
    for (int i = 0; i < kExtraRows; ++i) p.kv_slot_ids.push_back(top + 1 + i);
  }
  std::vector<uint8_t> referenced(static_cast<size_t>(p.n_rows()), 0);
  for (int32_t idx : c.kv_indices) referenced[static_cast<size_t>(idx)] = 1;
  for (size_t r = 0; r < referenced.size(); ++r) {
    if (!referenced[r]) fill_poison(&p.kv_pool[r * dqk], dqk, r);
  }
  for (int b = 0; b < c.num_requests(); ++b) {
    const int T = c.drafts(b);
    const size_t q0 = static_cast<size_t>(c.qo_indptr[static_cast<size_t>(b)]);
    for (int j = 0; j < T; ++j) {
      bool seen = false, sees = false;
      for (int i = 0; i < T; ++i) {
        seen = seen || c.visible(b, i, j);
        sees = sees || c.visible(b, j, i);
      }
      const size_t row = q0 + static_cast<size_t>(j);
      if (!seen) fill_poison(&p.kv_draft[row * dqk], dqk, row);
      if (!sees && c.prefix_len(b) == 0) fill_poison(&p.q[row * H * dqk], H * dqk, row);
    }
  }
  return p;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The oracle's properties.

TEST_CASE("oracle property: moving KV rows to other pool slots changes nothing, bitwise", "[property][oracle]") {
  const GenBudget& b = budget();
  rc_prop("slot permutation", [b] {
    const Recipe r = *gen_recipe(b);
    const auto perm_seed = *rc::gen::inRange<uint64_t>(0, uint64_t{1} << 32);
    const int extra = *rc::gen::inRange(0, 66);
    const Case c = generate_case(r);
    const Case m = moved_rows(c, perm_seed, extra);
    validate(m);
    const std::string diff = bitwise_difference(c, oracle_fp64(c), oracle_fp64(m));
    if (!diff.empty()) RC_FAIL("slot permutation changed the output: " + diff);
  });
}

TEST_CASE("oracle property: a request alone equals the same request inside the batch, bitwise", "[property][oracle]") {
  const GenBudget& b = budget();
  rc_prop("batch independence", [b] {
    const Recipe r = *gen_recipe(b);
    const Case c = generate_case(r);
    const Reference all = oracle_fp64(c);
    const size_t H = static_cast<size_t>(c.num_heads), dv = static_cast<size_t>(c.d_v);
    for (int req = 0; req < c.num_requests(); ++req) {
      const Case s = single_request(c, req);
      validate(s);
      const Reference one = oracle_fp64(s);
      const size_t q0 = static_cast<size_t>(c.qo_indptr[static_cast<size_t>(req)]);
      Reference slice;
      slice.out.assign(all.out.begin() + static_cast<std::ptrdiff_t>(q0 * H * dv),
                       all.out.begin() + static_cast<std::ptrdiff_t>((q0 + static_cast<size_t>(s.n_q())) * H * dv));
      slice.lse.assign(all.lse.begin() + static_cast<std::ptrdiff_t>(q0 * H),
                       all.lse.begin() + static_cast<std::ptrdiff_t>((q0 + static_cast<size_t>(s.n_q())) * H));
      const std::string diff = bitwise_difference(s, one, slice);
      if (!diff.empty()) RC_FAIL("request " + std::to_string(req) + " alone differs from the batch: " + diff);
    }
  });
}

TEST_CASE("oracle property: a head computed alone equals that head in the full case", "[property][oracle]") {
  // Not promised bitwise: one head is a smaller matrix product, which may sum in another order.
  const GenBudget& b = budget();
  rc_prop("head independence", [b] {
    const Recipe r = *gen_recipe(b);
    const Case c = generate_case(r);
    const Reference all = oracle_fp64(c);
    const size_t H = static_cast<size_t>(c.num_heads), dv = static_cast<size_t>(c.d_v);
    for (int h = 0; h < c.num_heads; ++h) {
      const Reference one = oracle_fp64(single_head(c, h));
      for (int64_t row = 0; row < c.n_q(); ++row) {
        const size_t rh = static_cast<size_t>(row) * H + static_cast<size_t>(h), r1 = static_cast<size_t>(row);
        if (!close(one.lse[r1], all.lse[rh], all.lse_scale[rh])) {
          RC_FAIL(where(c, row, h) + ": lse alone " + std::to_string(one.lse[r1]) + " vs " +
                  std::to_string(all.lse[rh]));
        }
        for (size_t d = 0; d < dv; ++d) {
          const double x = one.out[r1 * dv + d], ref = all.out[rh * dv + d];
          if (!close(x, ref, all.abs_pv[rh * dv + d])) {
            RC_FAIL(where(c, row, h) + " column " + std::to_string(d) + ": out alone " + std::to_string(x) + " vs " +
                    std::to_string(ref));
          }
        }
      }
    }
  });
}

TEST_CASE("oracle property: NaN/Inf outside every key set changes nothing, bitwise", "[property][oracle]") {
  const GenBudget& b = budget();
  rc_prop("poison independence", [b] {
    const Recipe r = *gen_recipe(b);
    const Case c = generate_case(r);
    const Case p = poisoned(c);
    validate(p);
    const std::string diff = bitwise_difference(c, oracle_fp64(c), oracle_fp64(p));
    if (!diff.empty()) RC_FAIL("poison outside K changed the output: " + diff);
  });
}

TEST_CASE("oracle property: a chain tree equals causal attention over prefix + drafts", "[property][oracle]") {
  const GenBudget& b = budget();
  const auto chains = rc::gen::map(gen_recipe(b), [](Recipe r) {
    r.tree = "chain";
    return r;
  });
  rc_prop("chain == causal", [chains] {
    const Case c = generate_case(*chains);
    const Reference ref = oracle_fp64(c);
    const size_t H = static_cast<size_t>(c.num_heads), dv = static_cast<size_t>(c.d_v),
                 dqk = static_cast<size_t>(c.d_qk);
    for (int req = 0; req < c.num_requests(); ++req) {
      const size_t q0 = static_cast<size_t>(c.qo_indptr[static_cast<size_t>(req)]);
      for (int i = 0; i < c.drafts(req); ++i) {
        // Causal: the whole prefix, then drafts 0..i, taken from positions, not from the mask.
        std::vector<const uint16_t*> keys;
        for (int32_t k = c.kv_indptr[static_cast<size_t>(req)]; k < c.kv_indptr[static_cast<size_t>(req) + 1]; ++k) {
          keys.push_back(&c.kv_pool[static_cast<size_t>(c.kv_indices[static_cast<size_t>(k)]) * dqk]);
        }
        for (int j = 0; j <= i; ++j) keys.push_back(&c.kv_draft[(q0 + static_cast<size_t>(j)) * dqk]);
        const int64_t row = static_cast<int64_t>(q0) + i;
        for (int h = 0; h < c.num_heads; ++h) {
          const RowAttention want = attend_row(c, row, h, keys);
          const size_t rh = static_cast<size_t>(row) * H + static_cast<size_t>(h);
          if (!close(ref.lse[rh], want.lse, want.logit_scale)) {
            RC_FAIL(where(c, row, h) + ": lse " + std::to_string(ref.lse[rh]) + ", causal " + std::to_string(want.lse));
          }
          for (size_t d = 0; d < dv; ++d) {
            if (!close(ref.out[rh * dv + d], want.out[d], want.abs_pv)) {
              RC_FAIL(where(c, row, h) + " column " + std::to_string(d) + ": out " +
                      std::to_string(ref.out[rh * dv + d]) + ", causal " + std::to_string(want.out[d]));
            }
          }
        }
      }
    }
  });
}

TEST_CASE("oracle property: q = 0 gives the mean of the visible V rows", "[property][oracle]") {
  const GenBudget& b = budget();
  rc_prop("zero query averages V", [b] {
    const Recipe r = *gen_recipe(b);
    Case c = generate_case(r);
    std::fill(c.q.begin(), c.q.end(), uint16_t{0});
    const Reference ref = oracle_fp64(c);
    const size_t H = static_cast<size_t>(c.num_heads), dv = static_cast<size_t>(c.d_v);
    for (int req = 0; req < c.num_requests(); ++req) {
      for (int i = 0; i < c.drafts(req); ++i) {
        const auto keys = visible_keys(c, req, i);
        const int64_t row = c.qo_indptr[static_cast<size_t>(req)] + i;
        std::vector<double> mean(dv, 0.0);
        double scale = 0;
        for (const uint16_t* k : keys) {
          for (size_t d = 0; d < dv; ++d) {
            mean[d] += bf16_to_float(k[d]);
            scale = std::max(scale, static_cast<double>(std::abs(bf16_to_float(k[d]))));
          }
        }
        for (double& m : mean) m = keys.empty() ? 0.0 : m / static_cast<double>(keys.size());
        const double want_lse =
            keys.empty() ? -std::numeric_limits<double>::infinity() : std::log(static_cast<double>(keys.size()));
        for (size_t h = 0; h < H; ++h) {
          const size_t rh = static_cast<size_t>(row) * H + h;
          if (!close(ref.lse[rh], want_lse, 0.0)) {
            RC_FAIL(where(c, row, static_cast<int>(h)) + ": lse " + std::to_string(ref.lse[rh]) + ", want ln(" +
                    std::to_string(keys.size()) + ")");
          }
          for (size_t d = 0; d < dv; ++d) {
            if (!close(ref.out[rh * dv + d], mean[d], scale)) {
              RC_FAIL(where(c, row, static_cast<int>(h)) + " column " + std::to_string(d) + ": out " +
                      std::to_string(ref.out[rh * dv + d]) + ", mean of " + std::to_string(keys.size()) + " rows " +
                      std::to_string(mean[d]));
            }
          }
        }
      }
    }
  });
}

TEST_CASE("oracle property: the probabilities exp(s_k - lse) sum to 1 on every non-empty row", "[property][oracle]") {
  const GenBudget& b = budget();
  rc_prop("lse consistency", [b] {
    const Recipe r = *gen_recipe(b);
    const Case c = generate_case(r);
    const Reference ref = oracle_fp64(c);
    const size_t H = static_cast<size_t>(c.num_heads);
    for (int req = 0; req < c.num_requests(); ++req) {
      for (int i = 0; i < c.drafts(req); ++i) {
        const auto keys = visible_keys(c, req, i);
        const int64_t row = c.qo_indptr[static_cast<size_t>(req)] + i;
        for (int h = 0; h < c.num_heads; ++h) {
          const double lse = ref.lse[static_cast<size_t>(row) * H + static_cast<size_t>(h)];
          if (keys.empty()) {
            if (!(std::isinf(lse) && lse < 0))
              RC_FAIL(where(c, row, h) + ": empty key set but lse " + std::to_string(lse));
            continue;
          }
          const RowAttention a = attend_row(c, row, h, keys);
          if (!std::isfinite(a.logit_scale)) {
            // A garbage query (generate_case poisons padded nodes' q even when they see a
            // prefix) makes the logits NaN, and the contract then gives lse = NaN.
            if (!std::isnan(lse)) RC_FAIL(where(c, row, h) + ": non-finite query but lse " + std::to_string(lse));
            continue;
          }
          double sum = 0;
          for (double s : a.logits) sum += std::exp(s - lse);
          // An error e in lse or in a logit scales the sum by exp(e); both are float64 sums of
          // at most 576 exact products, so e <= ~1e-13 of the largest |logit|.
          if (!(std::abs(sum - 1.0) <= kRel * (1.0 + a.logit_scale))) {
            std::ostringstream os;
            os.precision(17);
            os << where(c, row, h) << ": sum_k exp(s_k - lse) = " << sum << " over " << keys.size() << " keys (lse "
               << lse << ")";
            RC_FAIL(os.str());
          }
        }
      }
    }
  });
}

// ---------------------------------------------------------------------------------------------
// The generators: budgets, edges, shrinking.

namespace {

Recipe minimal_recipe() {
  Recipe r;
  r.heads = 1;
  r.prefix = {0};
  r.drafts = {1};
  r.tree = "chain";
  r.profile = "uniform";
  r.layout = "contiguous";
  r.poison = false;
  r.seed = 1;
  r.splits = 0;
  return r;
}

// RapidCheck's own shrinking loop, run on one generated Shrinkable: take the first shrink that
// still fails, repeat until none does. Every candidate must stay inside the budget.
template <class Fails>
Recipe shrink_fully(rc::Shrinkable<Recipe> s, const Fails& fails, const GenBudget& b) {
  for (bool progress = true; progress;) {
    progress = false;
    auto shrinks = s.shrinks();
    while (auto next = shrinks.next()) {
      const Recipe v = next->value();
      check_within_budget(v, b);
      if (fails(v)) {
        s = *next;
        progress = true;
        break;
      }
    }
  }
  return s.value();
}

bool any_prefix_at_least(const Recipe& r, int n) {
  return std::any_of(r.prefix.begin(), r.prefix.end(), [n](int p) { return p >= n; });
}

std::function<const char*(const char*)> lookup_in(std::map<std::string, std::string> env) {
  auto shared = std::make_shared<std::map<std::string, std::string>>(std::move(env));
  return [shared](const char* k) -> const char* {
    const auto it = shared->find(k);
    return it == shared->end() ? nullptr : it->second.c_str();
  };
}

}  // namespace

TEST_CASE("recipe generator: recipes fit the budget, print and parse back, and build valid cases", "[property][fuzz]") {
  const GenBudget& b = budget();
  rc_prop("recipe -> valid case", [b] {
    const Recipe r = *gen_recipe(b);
    check_within_budget(r, b);
    const std::string line = r.to_line();
    RC_ASSERT(Recipe::parse(line).to_line() == line);
    const Case c = generate_case(r);
    validate(c);
    RC_ASSERT(c.recipe == line);
    RC_ASSERT(c.num_heads == r.heads);
    RC_ASSERT(c.num_requests() == static_cast<int>(r.prefix.size()));
    for (int req = 0; req < c.num_requests(); ++req) {
      RC_ASSERT(c.prefix_len(req) == r.prefix[static_cast<size_t>(req)]);
      RC_ASSERT(c.drafts(req) == r.drafts[static_cast<size_t>(req)]);
    }
    const Case again = generate_case(Recipe::parse(line));
    RC_ASSERT(again.q == c.q);
    RC_ASSERT(again.kv_pool == c.kv_pool);
    RC_ASSERT(again.kv_indices == c.kv_indices);
    RC_ASSERT(again.kv_draft == c.kv_draft);
    RC_ASSERT(again.draft_mask == c.draft_mask);
  });
  for (const GenBudget& big : {GenBudget::medium(), GenBudget::large()}) {
    rc_prop("recipes fit the " + big.name + " budget", [big] {
      const Recipe r = *gen_recipe(big);
      check_within_budget(r, big);
      RC_ASSERT(Recipe::parse(r.to_line()).to_line() == r.to_line());
    });
  }
}

TEST_CASE("recipe generator: the edge values are drawn", "[property][fuzz]") {
  auto draw_all = [](const GenBudget& b, int n, int size) {
    std::vector<Recipe> v;
    v.reserve(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) v.push_back(gen_recipe(b)(rc::Random(static_cast<uint64_t>(i) + 1), size).value());
    return v;
  };
  const GenBudget small = GenBudget::small();
  std::set<int> P, T, H, B;
  std::set<std::string> trees, layouts, profiles;
  std::set<bool> poison;
  bool auto_split = false, one_split = false, empty_splits = false;
  for (const Recipe& r : draw_all(small, 3000, 100)) {
    check_within_budget(r, small);
    P.insert(r.prefix.begin(), r.prefix.end());
    T.insert(r.drafts.begin(), r.drafts.end());
    H.insert(r.heads);
    B.insert(static_cast<int>(r.prefix.size()));
    trees.insert(r.tree);
    layouts.insert(r.layout);
    profiles.insert(r.profile);
    poison.insert(r.poison);
    int longest = 0;
    for (size_t i = 0; i < r.prefix.size(); ++i) longest = std::max(longest, r.prefix[i] + r.drafts[i]);
    auto_split = auto_split || r.splits == 0;
    one_split = one_split || r.splits == 1;
    empty_splits = empty_splits || r.splits > (longest + 31) / 32;
  }
  for (int p : {0, 1, 31, 32, 33, 63, 64, 65, 77, 127, 128, 129, 255, 256, 257}) {
    INFO("prefix " << p);
    CHECK(P.count(p) == 1);
  }
  for (int t : {1, 2, 15, 16, 17, 31, 32, 33, 63, 64, 65}) {
    INFO("drafts " << t);
    CHECK(T.count(t) == 1);
  }
  CHECK(H == std::set<int>{1, 2, 3, 8});
  CHECK(B == std::set<int>{1, 2, 3, 4});
  CHECK(trees.size() == tree_kinds().size());
  CHECK(layouts.size() == pool_layouts().size());
  CHECK(profiles.size() == value_profiles().size());
  CHECK(poison.size() == 2);
  CHECK(auto_split);
  CHECK(one_split);
  CHECK(empty_splits);

  const GenBudget large = GenBudget::large();
  std::set<int> big_p, big_t, big_h;
  for (const Recipe& r : draw_all(large, 3000, 100)) {
    check_within_budget(r, large);
    big_p.insert(r.prefix.begin(), r.prefix.end());
    big_t.insert(r.drafts.begin(), r.drafts.end());
    big_h.insert(r.heads);
  }
  for (int p : {0, 77, 4099, 65537, 70001, 199999, 262144}) {
    INFO("large budget prefix " << p);
    CHECK(big_p.count(p) == 1);
  }
  for (int t : {1, 16, 17, 64, 65, 1024, 1025}) {
    INFO("large budget drafts " << t);
    CHECK(big_t.count(t) == 1);
  }
  CHECK(big_h == std::set<int>(head_choices().begin(), head_choices().end()));
  CHECK(*std::max_element(big_p.begin(), big_p.end()) > 100000);  // long tails, not only edges
}

TEST_CASE("recipe generator: failures shrink to the minimal recipe", "[property][fuzz]") {
  const GenBudget b = GenBudget::small();
  struct Target {
    const char* what;
    std::function<bool(const Recipe&)> fails;
    Recipe minimal;
  };
  std::vector<Target> targets;
  {
    Recipe m = minimal_recipe();
    m.prefix = {77};
    targets.push_back({"some P >= 77", [](const Recipe& r) { return any_prefix_at_least(r, 77); }, m});
  }
  {
    Recipe m = minimal_recipe();
    m.drafts = {17};
    targets.push_back(
        {"some T >= 17",
         [](const Recipe& r) { return std::any_of(r.drafts.begin(), r.drafts.end(), [](int t) { return t >= 17; }); },
         m});
  }
  {
    Recipe m = minimal_recipe();
    m.prefix = {0, 0};
    m.drafts = {1, 1};
    targets.push_back({"B >= 2", [](const Recipe& r) { return r.prefix.size() >= 2; }, m});
  }
  {
    Recipe m = minimal_recipe();
    m.heads = 3;
    targets.push_back({"H >= 3", [](const Recipe& r) { return r.heads >= 3; }, m});
  }
  {
    Recipe m = minimal_recipe();
    m.tree = "ddtree";
    m.poison = true;
    m.layout = "sparse";
    targets.push_back({"ddtree, poisoned, sparse pool",
                       [](const Recipe& r) { return r.tree == "ddtree" && r.poison && r.layout == "sparse"; }, m});
  }
  {
    Recipe m = minimal_recipe();
    m.splits = 5;
    m.profile = "huge";
    targets.push_back(
        {"splits >= 5 with huge values", [](const Recipe& r) { return r.splits >= 5 && r.profile == "huge"; }, m});
  }
  for (const auto& t : targets) {
    int started = 0;
    for (uint64_t seed = 1; seed <= 2000 && started < 8; ++seed) {
      const auto s = gen_recipe(b)(rc::Random(seed), 100);
      if (!t.fails(s.value())) continue;
      ++started;
      const Recipe got = shrink_fully(s, t.fails, b);
      INFO(t.what << ", from " << s.value().to_line());
      CHECK(got.to_line() == t.minimal.to_line());
    }
    INFO(t.what);
    CHECK(started == 8);
  }
}

TEST_CASE("rc glue: a failing property reports its shrunk recipe and commands that reproduce it", "[property][fuzz]") {
  const auto prop = rc::detail::toProperty([] {
    const Recipe r = *gen_recipe(GenBudget::small());
    RC_ASSERT(!any_prefix_at_least(r, 77));
  });
  const FuzzConfig cfg =
      fuzz_config_from_lookup(lookup_in({{"RC_PARAMS", "seed=99 max_success=300"}, {"VATTN_FUZZ_BUDGET", "small"}}));
  const PropertyOutcome out = run_property(prop, "glue test", "prefix below 77", cfg);
  INFO(out.report);
  REQUIRE(out.kind == PropertyOutcome::Kind::failed);
  Recipe want = minimal_recipe();
  want.prefix = {77};
  CHECK(out.recipe_line == want.to_line());
  CHECK(out.report.find("recipe: " + want.to_line()) != std::string::npos);
  CHECK(out.report.find("RC_PARAMS=\"seed=99 max_success=300 max_size=100\" VATTN_FUZZ_BUDGET=small ") !=
        std::string::npos);
  CHECK(out.report.find(" \"glue test\"\n") != std::string::npos);
  // A deterministic failure: the shrunk case fails each time it is run again.
  CHECK(out.rechecks == 2);
  CHECK(out.recheck_failures == 2);
  CHECK(out.report.find("the shrunk case failed again in 2 of 2 runs") != std::string::npos);
  CHECK(out.report.find("NOT DETERMINISTIC") == std::string::npos);

  // The printed reproduce string, fed back through RC_PARAMS, replays exactly the shrunk case.
  const std::string key = "reproduce string: ";
  const size_t at = out.report.find(key);
  REQUIRE(at != std::string::npos);
  const std::string repro = out.report.substr(at + key.size(), out.report.find('\n', at) - at - key.size());
  const FuzzConfig again_cfg = fuzz_config_from_lookup(lookup_in({{"RC_PARAMS", repro}}));
  REQUIRE(again_cfg.reproduce.size() == 1);
  const PropertyOutcome again = run_property(prop, "glue test", "prefix below 77", again_cfg);
  INFO(again.report);
  CHECK(again.kind == PropertyOutcome::Kind::failed);
  CHECK(again.num_success == 0);
  CHECK(again.recipe_line == out.recipe_line);
  CHECK(again.counterexample == out.counterexample);
  // Other properties are not run while reproducing one.
  CHECK(run_property(prop, "glue test", "another property", again_cfg).kind == PropertyOutcome::Kind::not_selected);
}

TEST_CASE("rc glue: a failure that does not repeat is reported as such, with why it failed", "[property][fuzz]") {
  // As on a shared GPU: the first case fails (say, device memory another process
  // holds), nothing after it does. RapidCheck re-evaluates the shrunk case to describe it and
  // gets a success; the report must keep the reason and say the failure did not repeat.
  int calls = 0;
  const auto prop = rc::detail::toProperty([&calls] {
    const int n = *rc::gen::inRange(0, 1000);
    if (++calls == 1) RC_FAIL("out of device memory (case " + std::to_string(n) + ")");
  });
  const FuzzConfig cfg = fuzz_config_from_lookup(lookup_in({{"RC_PARAMS", "seed=7 max_success=20"}}));
  const PropertyOutcome out = run_property(prop, "glue test", "fails once", cfg);
  INFO(out.report);
  REQUIRE(out.kind == PropertyOutcome::Kind::failed);
  CHECK(out.failed_with.find("out of device memory") != std::string::npos);
  CHECK(out.report.find("out of device memory") != std::string::npos);
  CHECK(out.rechecks == 2);
  CHECK(out.recheck_failures == 0);
  CHECK(out.report.find("NOT DETERMINISTIC: the shrunk case passed in 2 of 2 runs") != std::string::npos);
}

TEST_CASE("rc glue: the same seed draws the same recipes, another seed others", "[property][fuzz]") {
  auto record = [](const std::string& rc_params) {
    std::vector<std::string> lines;
    const auto prop =
        rc::detail::toProperty([&lines] { lines.push_back((*gen_recipe(GenBudget::small())).to_line()); });
    const FuzzConfig cfg = fuzz_config_from_lookup(lookup_in({{"RC_PARAMS", rc_params}}));
    const PropertyOutcome out = run_property(prop, "seed test", "record", cfg);
    REQUIRE(out.kind == PropertyOutcome::Kind::passed);
    return lines;
  };
  const auto first = record("seed=424242 max_success=40");
  REQUIRE(first.size() == 40);
  CHECK(record("seed=424242 max_success=40") == first);
  CHECK(record("seed=424243 max_success=40") != first);
  // max_size bounds the sizes: at 0 every case is drawn at the smallest size.
  for (const std::string& line : record("seed=5 max_success=20 max_size=0")) {
    const Recipe r = Recipe::parse(line);
    for (int p : r.prefix) CHECK(p <= 65);
    for (int t : r.drafts) CHECK(t <= 17);
  }
}

TEST_CASE("rc glue: settings come from RC_PARAMS, VATTN_FUZZ_CASES and the budget variables", "[property][fuzz]") {
  CHECK(fuzz_cases_from_text("small") == 50);
  CHECK(fuzz_cases_from_text("large") == 1000);
  CHECK(fuzz_cases_from_text("77") == 77);
  for (const char* bad : {"", "0", "-3", "many", "12x"}) {
    INFO("VATTN_FUZZ_CASES=" << bad);
    CHECK_THROWS_AS(fuzz_cases_from_text(bad), InputError);
  }
  CHECK(fuzz_config_from_lookup(lookup_in({{"VATTN_FUZZ_CASES", "99"}})).params.maxSuccess == 99);
  CHECK(fuzz_config_from_lookup(lookup_in({{"VATTN_FUZZ_CASES", "99"}, {"RC_PARAMS", "max_success=7"}}))
            .params.maxSuccess == 7);
  const FuzzConfig seeded = fuzz_config_from_lookup(lookup_in({{"RC_PARAMS", "seed=31 max_size=50"}}));
  CHECK(seeded.params.seed == 31);
  CHECK(seeded.params.maxSize == 50);
  CHECK(seeded.params.maxSuccess == 50);
  // Unseeded runs share one seed per process, so one printed seed re-runs all of them.
  CHECK(fuzz_config_from_lookup(lookup_in({})).params.seed == fuzz_config_from_lookup(lookup_in({})).params.seed);
  try {
    fuzz_config_from_lookup(lookup_in({{"RC_PARAMS", "seed=notanumber"}}));
    FAIL("a malformed RC_PARAMS was accepted");
  } catch (const InputError& e) {
    CHECK(e.field() == "RC_PARAMS");
  }

  const GenBudget b =
      GenBudget::from_lookup(lookup_in({{"VATTN_FUZZ_BUDGET", "large"}, {"VATTN_FUZZ_MAX_PREFIX", "4099"}}));
  CHECK(b.max_prefix == 4099);
  CHECK(b.max_drafts == GenBudget::large().max_drafts);
  CHECK(GenBudget::from_lookup(lookup_in({})).max_batch == GenBudget::small().max_batch);
  // Caps are what a recipe line can carry: a larger budget would generate cases with no line.
  CHECK(GenBudget::from_lookup(lookup_in({{"VATTN_FUZZ_MAX_SPLITS", "256"}})).max_splits == 256);
  for (const auto& [var, value] : std::vector<std::pair<std::string, std::string>>{
           {"VATTN_FUZZ_MAX_SPLITS", "257"}, {"VATTN_FUZZ_MAX_DRAFTS", "4097"}, {"VATTN_FUZZ_MAX_HEADS", "1025"}}) {
    INFO(var << "=" << value);
    CHECK_THROWS_WITH(GenBudget::from_lookup(lookup_in({{var, value}})), Catch::Contains("is too large"));
  }
  for (const auto& var : GenBudget::env_vars()) {
    INFO(var);
    try {
      GenBudget::from_lookup(lookup_in({{var, "huge-ish"}}));
      FAIL("accepted " << var << "=huge-ish");
    } catch (const InputError& e) {
      CHECK(e.field() == var);
    }
  }
  const FuzzConfig withenv =
      fuzz_config_from_lookup(lookup_in({{"VATTN_FUZZ_BUDGET", "medium"}, {"VATTN_FUZZ_MAX_HEADS", "16"}}));
  CHECK(withenv.env_prefix == "VATTN_FUZZ_BUDGET=medium VATTN_FUZZ_MAX_HEADS=16 ");
}
