// SPDX-License-Identifier: Apache-2.0
// The CPU oracles against an independent scalar long-double reference written here, plus the
// contract's properties: empty rows, poison outside K, NaN inside K, chain == causal, q = 0.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>

#include "tests/cpu/hand_case.h"
#include "vattn/case/bf16.h"
#include "vattn/case/case.h"
#include "vattn/oracle/cpu_common.h"
#include "vattn/oracle/cpu_oracle.h"

namespace {

using vattn::Case;
using vattn::Reference;

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

// The bit pattern of a double: equal patterns mean equal bits, NaN payloads and -0.0 included.
uint64_t bits_of(double x) {
  static_assert(sizeof(uint64_t) == sizeof(double), "double is 64 bits");
  uint64_t u = 0;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

// n doubles from a and b agree bit for bit.
bool same_bits(const double* a, const double* b, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (bits_of(a[i]) != bits_of(b[i])) return false;
  return true;
}

using Req = vattn::test::HandRequest;

std::vector<int32_t> chain(int t) { return vattn::test::chain_parents(t); }

Case build(int H, int dqk, int dv, const std::vector<Req>& reqs, uint64_t seed, int spare_rows = 5,
           float range = 1.0f) {
  return vattn::test::hand_case("oracle_test", H, dqk, dv, reqs, seed, spare_rows, range);
}

std::vector<int> referenced_rows(const Case& c) {
  std::vector<int> used(static_cast<size_t>(c.n_rows()), 0);
  for (int32_t s : c.kv_indices) used[static_cast<size_t>(s)] = 1;
  return used;
}

bool row_empty(const Case& c, int b, int i) {
  if (c.prefix_len(b) > 0) return false;
  for (int j = 0; j < c.drafts(b); ++j)
    if (c.visible(b, i, j)) return false;
  return true;
}

// The contract read literally, one (request, draft, head) at a time, in long double.
struct Scalar {
  std::vector<long double> out, lse, abs_pv, lse_scale;
};

Scalar scalar_reference(const Case& c) {
  const int H = c.num_heads, dqk = c.d_qk, dv = c.d_v;
  Scalar s;
  const size_t rows = static_cast<size_t>(c.n_q()) * static_cast<size_t>(H);
  s.out.assign(rows * static_cast<size_t>(dv), 0);
  s.abs_pv.assign(rows * static_cast<size_t>(dv), 0);
  s.lse.assign(rows, -std::numeric_limits<long double>::infinity());
  s.lse_scale.assign(rows, 0);
  auto val = [](uint16_t bits) { return static_cast<long double>(vattn::bf16_to_float(bits)); };
  for (int b = 0; b < c.num_requests(); ++b) {
    std::vector<const uint16_t*> keys;
    for (int i = 0; i < c.drafts(b); ++i) {
      keys.clear();
      for (int k = c.kv_indptr[static_cast<size_t>(b)]; k < c.kv_indptr[static_cast<size_t>(b) + 1]; ++k)
        keys.push_back(
            &c.kv_pool[static_cast<size_t>(c.kv_indices[static_cast<size_t>(k)]) * static_cast<size_t>(dqk)]);
      const int n = c.qo_indptr[static_cast<size_t>(b)] + i;
      for (int j = 0; j < c.drafts(b); ++j) {
        if (c.visible(b, i, j)) {
          const size_t row = static_cast<size_t>(c.qo_indptr[static_cast<size_t>(b)]) + static_cast<size_t>(j);
          keys.push_back(&c.kv_draft[row * static_cast<size_t>(dqk)]);
        }
      }
      if (keys.empty()) continue;
      for (int h = 0; h < H; ++h) {
        const size_t g = static_cast<size_t>(n) * static_cast<size_t>(H) + static_cast<size_t>(h);
        const uint16_t* q = &c.q[g * static_cast<size_t>(dqk)];
        std::vector<long double> logit(keys.size());
        long double mx = -std::numeric_limits<long double>::infinity(), amax = 0;
        for (size_t k = 0; k < keys.size(); ++k) {
          long double dot = 0, adot = 0;
          for (int d = 0; d < dqk; ++d) {
            dot += val(q[d]) * val(keys[k][d]);
            adot += std::fabs(val(q[d]) * val(keys[k][d]));
          }
          logit[k] = static_cast<long double>(c.sm_scale) * dot;
          mx = std::max(mx, logit[k]);
          amax = std::max(amax, static_cast<long double>(c.sm_scale) * adot);
        }
        long double sum = 0;
        for (auto& x : logit) sum += (x = std::exp(x - mx));
        s.lse[g] = mx + std::log(sum);
        s.lse_scale[g] = amax;
        for (size_t k = 0; k < keys.size(); ++k) {
          const long double p = logit[k] / sum;
          for (int d = 0; d < dv; ++d) {
            s.out[g * static_cast<size_t>(dv) + static_cast<size_t>(d)] += p * val(keys[k][d]);
            s.abs_pv[g * static_cast<size_t>(dv) + static_cast<size_t>(d)] += p * std::fabs(val(keys[k][d]));
          }
        }
      }
    }
  }
  return s;
}

// fp64 vs long double: float64 rounding in logits (~d_qk * 1e-16 * |s|) moves p relatively.
void require_matches_scalar(const Case& c, const Reference& ref, const Scalar& s) {
  REQUIRE(ref.out.size() == s.out.size());
  REQUIRE(ref.lse.size() == s.lse.size());
  REQUIRE(ref.abs_pv.size() == s.abs_pv.size());
  REQUIRE(ref.lse_scale.size() == s.lse_scale.size());
  int64_t bad = 0;
  for (size_t i = 0; i < s.out.size(); ++i) {
    const double want = static_cast<double>(s.out[i]);
    const double tol = 1e-12 * static_cast<double>(s.abs_pv[i]) + 1e-300;
    if (!(std::fabs(ref.out[i] - want) <= tol)) {
      if (bad++ < 3) UNSCOPED_INFO("out[" << i << "] = " << ref.out[i] << " want " << want << " in " << c.describe());
    }
    // abs_pv is accumulated in float: it only scales the tolerance.
    if (!(std::fabs(ref.abs_pv[i] - static_cast<double>(s.abs_pv[i])) <=
          1e-5 * static_cast<double>(s.abs_pv[i]) + 1e-30)) {
      if (bad++ < 3)
        UNSCOPED_INFO("abs_pv[" << i << "] = " << ref.abs_pv[i] << " want " << static_cast<double>(s.abs_pv[i]));
    }
  }
  for (size_t i = 0; i < s.lse.size(); ++i) {
    const double want = static_cast<double>(s.lse[i]);
    const bool ok = std::isinf(want) ? ref.lse[i] == want
                                     : std::fabs(ref.lse[i] - want) <=
                                           1e-12 * (1 + std::fabs(want) + static_cast<double>(s.lse_scale[i]));
    if (!ok && bad++ < 3) UNSCOPED_INFO("lse[" << i << "] = " << ref.lse[i] << " want " << want);
    const double ws = static_cast<double>(s.lse_scale[i]);
    if (!(std::fabs(ref.lse_scale[i] - ws) <= 1e-5 * ws + 1e-30) && bad++ < 3)
      UNSCOPED_INFO("lse_scale[" << i << "] = " << ref.lse_scale[i] << " want " << ws);
  }
  CHECK(bad == 0);
}

bool bitwise_equal(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

// Requests that hit every structural corner: several requests, trees, padded nodes, P_b = 0,
// a request that is nothing but one padded node.
std::vector<Req> mixed_requests() {
  const int32_t pad = vattn::kPaddedNode;
  return {
      {37, chain(5)}, {0, {-1, 0, 0, 1, pad, 2, pad}}, {0, {pad}}, {130, {-1, 0, 0, 0, pad, pad}}, {1, {-1, -1, 1}},
  };
}

}  // namespace

TEST_CASE("oracle_fp64 matches a scalar long-double reference", "[oracle]") {
  SECTION("mixed requests, small dims") {
    const Case c = build(3, 40, 32, mixed_requests(), 11);
    require_matches_scalar(c, vattn::oracle_fp64(c), scalar_reference(c));
  }
  SECTION("K2.6 dims") {
    const Case c = build(8, 576, 512, {{100, chain(4)}, {0, {-1, 0, 1, 0}}}, 12);
    require_matches_scalar(c, vattn::oracle_fp64(c), scalar_reference(c));
  }
  SECTION("prefix longer than a key block, more rows than a row block") {
    const Case c = build(8, 24, 16, {{2500, chain(3)}, {1, chain(70)}}, 13);
    require_matches_scalar(c, vattn::oracle_fp64(c), scalar_reference(c));
  }
  SECTION("the engine with tiny blocks and tiles lands on the same values") {
    const Case c = build(3, 40, 32, mixed_requests(), 14);
    vattn::oracle_detail::EngineConfig cfg;
    cfg.key_block = 7;
    cfg.row_block = 5;
    cfg.row_group = 4;  // splits drafts across sweeps: a group starts mid-draft
    cfg.tile = 3;
    require_matches_scalar(c, vattn::oracle_detail::attend<double>(c, cfg), scalar_reference(c));
  }
}

TEST_CASE("empty key sets give out 0 and lse -inf in both oracles", "[oracle]") {
  const Case c = build(3, 40, 32, mixed_requests(), 21);
  const Reference r64 = vattn::oracle_fp64(c), r16 = vattn::reference_bf16_emulated(c);
  const size_t H = 3, dv = 32;
  int empties = 0;
  for (int b = 0; b < c.num_requests(); ++b) {
    for (int i = 0; i < c.drafts(b); ++i) {
      const size_t n = static_cast<size_t>(c.qo_indptr[static_cast<size_t>(b)]) + static_cast<size_t>(i);
      for (size_t h = 0; h < H; ++h) {
        const size_t g = n * H + h;
        if (row_empty(c, b, i)) {
          ++empties;
          for (const Reference* r : {&r64, &r16}) {
            CHECK(r->lse[g] == -kInf);
            for (size_t d = 0; d < dv; ++d) CHECK(r->out[g * dv + d] == 0.0);
          }
        } else {
          CHECK(std::isfinite(r64.lse[g]));
          CHECK(std::isfinite(r16.lse[g]));
        }
      }
    }
  }
  CHECK(empties == 3 * 3);  // request 1: node 4 and 6; request 2: its one node
}

TEST_CASE("poison outside K changes nothing, bitwise", "[oracle]") {
  const Case clean = build(3, 40, 32, mixed_requests(), 31, 9);
  Case poisoned = clean;
  const auto used = referenced_rows(clean);
  const uint16_t poison[] = {vattn::kBf16QuietNaN, vattn::kBf16PosInf, vattn::kBf16NegInf};
  const size_t dqk = 40;
  int k = 0;
  for (size_t row = 0; row < used.size(); ++row)
    if (!used[row])
      for (size_t d = 0; d < dqk; ++d) poisoned.kv_pool[row * dqk + d] = poison[(k++) % 3];
  // Padded drafts are seen by nobody: their KV and their queries may hold anything.
  for (int b = 0; b < clean.num_requests(); ++b) {
    for (int j = 0; j < clean.drafts(b); ++j) {
      bool seen = false;
      for (int i = 0; i < clean.drafts(b); ++i) seen = seen || clean.visible(b, i, j);
      const size_t n = static_cast<size_t>(clean.qo_indptr[static_cast<size_t>(b)]) + static_cast<size_t>(j);
      if (!seen)
        for (size_t d = 0; d < dqk; ++d) poisoned.kv_draft[n * dqk + d] = poison[(k++) % 3];
      if (row_empty(clean, b, j))
        for (size_t d = 0; d < 3 * dqk; ++d) poisoned.q[n * 3 * dqk + d] = vattn::kBf16QuietNaN;
    }
  }
  REQUIRE(k > 0);
  const Reference a = vattn::oracle_fp64(clean), p = vattn::oracle_fp64(poisoned);
  CHECK(bitwise_equal(a.out, p.out));
  CHECK(bitwise_equal(a.lse, p.lse));
  CHECK(bitwise_equal(a.abs_pv, p.abs_pv));
  CHECK(bitwise_equal(a.lse_scale, p.lse_scale));
  const Reference a16 = vattn::reference_bf16_emulated(clean), p16 = vattn::reference_bf16_emulated(poisoned);
  CHECK(bitwise_equal(a16.out, p16.out));
  CHECK(bitwise_equal(a16.lse, p16.lse));
}

TEST_CASE("NaN inside K propagates to exactly the rows that see it", "[oracle]") {
  // Request 0: a tree whose draft 1 holds one NaN in a value column (V is the head of the KV
  // row, so the logit is NaN too). Request 1: a NaN in a key-only column of one prefix row.
  const Case clean = build(2, 16, 12, {{5, {-1, 0, 0, 1}}, {4, chain(2)}}, 41);
  Case bad = clean;
  bad.kv_draft[1 * 16 + 3] = vattn::kBf16QuietNaN;
  bad.kv_pool[static_cast<size_t>(clean.kv_indices[5 + 2]) * 16 + 14] = vattn::kBf16QuietNaN;
  const Reference a = vattn::oracle_fp64(clean), r = vattn::oracle_fp64(bad);
  const Reference a16 = vattn::reference_bf16_emulated(clean), r16 = vattn::reference_bf16_emulated(bad);
  const size_t H = 2, dv = 12;
  for (size_t n = 0; n < 6; ++n) {
    // Drafts 1 and 3 of request 0 see draft 1 (itself, its child); every row of request 1
    // sees its whole prefix.
    const bool sees = n == 1 || n == 3 || n >= 4;
    for (size_t h = 0; h < H; ++h) {
      const size_t g = n * H + h;
      INFO("draft row " << n << " head " << h);
      if (sees) {
        CHECK(std::isnan(r.lse[g]));
        CHECK(std::isnan(r16.lse[g]));
        for (size_t d = 0; d < dv; ++d) {
          CHECK(std::isnan(r.out[g * dv + d]));
          CHECK(std::isnan(r16.out[g * dv + d]));
        }
      } else {
        CHECK(r.lse[g] == a.lse[g]);
        CHECK(r16.lse[g] == a16.lse[g]);
        CHECK(same_bits(&r.out[g * dv], &a.out[g * dv], dv));
        CHECK(same_bits(&r16.out[g * dv], &a16.out[g * dv], dv));
      }
    }
  }
}

TEST_CASE("a chain mask equals causal attention over prefix + drafts", "[oracle]") {
  // Draft i of a chain sees the prefix and drafts 0..i: the same as a T=1 request whose prefix
  // is the old prefix followed by drafts 0..i-1 (the drafts copied into the pool).
  const int T = 9, P = 20, H = 4, dqk = 48, dv = 40;
  const Case c = build(H, dqk, dv, {{P, chain(T)}}, 51);
  Case causal = c;
  causal.kv_indices.clear();
  causal.kv_indptr = {0};
  causal.qo_indptr = {0};
  causal.draft_mask = std::vector<uint8_t>(static_cast<size_t>(T), 1);
  causal.draft_mask_indptr = {0};
  const int pool_rows = static_cast<int>(c.n_rows());
  causal.kv_pool.insert(causal.kv_pool.end(), c.kv_draft.begin(), c.kv_draft.end());
  for (int i = 0; i < T; ++i) {
    causal.kv_indices.insert(causal.kv_indices.end(), c.kv_indices.begin(), c.kv_indices.end());
    for (int j = 0; j < i; ++j) causal.kv_indices.push_back(pool_rows + j);
    causal.kv_indptr.push_back(static_cast<int32_t>(causal.kv_indices.size()));
    causal.qo_indptr.push_back(i + 1);
    causal.draft_mask_indptr.push_back(i + 1);
  }
  vattn::validate(causal);
  const Reference a = vattn::oracle_fp64(c), b = vattn::oracle_fp64(causal);
  for (size_t i = 0; i < a.out.size(); ++i) CHECK(std::fabs(a.out[i] - b.out[i]) <= 1e-13 * a.abs_pv[i]);
  for (size_t i = 0; i < a.lse.size(); ++i) CHECK(std::fabs(a.lse[i] - b.lse[i]) <= 1e-13 * (1 + a.lse_scale[i]));
}

TEST_CASE("q = 0 gives the mean of the visible V rows and lse = ln |K|", "[oracle]") {
  Case c = build(2, 32, 24, mixed_requests(), 61);
  std::fill(c.q.begin(), c.q.end(), uint16_t{0});
  const Reference r = vattn::oracle_fp64(c);
  const size_t H = 2, dqk = 32, dv = 24;
  for (int b = 0; b < c.num_requests(); ++b) {
    for (int i = 0; i < c.drafts(b); ++i) {
      if (row_empty(c, b, i)) continue;
      std::vector<long double> mean(dv, 0);
      int count = 0;
      auto add = [&](const uint16_t* row) {
        ++count;
        for (size_t d = 0; d < dv; ++d) mean[d] += vattn::bf16_to_float(row[d]);
      };
      for (int k = c.kv_indptr[static_cast<size_t>(b)]; k < c.kv_indptr[static_cast<size_t>(b) + 1]; ++k)
        add(&c.kv_pool[static_cast<size_t>(c.kv_indices[static_cast<size_t>(k)]) * dqk]);
      for (int j = 0; j < c.drafts(b); ++j)
        if (c.visible(b, i, j)) add(&c.kv_draft[static_cast<size_t>(c.qo_indptr[static_cast<size_t>(b)] + j) * dqk]);
      const size_t n = static_cast<size_t>(c.qo_indptr[static_cast<size_t>(b)]) + static_cast<size_t>(i);
      for (size_t h = 0; h < H; ++h) {
        CHECK(r.lse[n * H + h] == Approx(std::log(static_cast<double>(count))).epsilon(1e-14));
        for (size_t d = 0; d < dv; ++d)
          CHECK(std::fabs(r.out[(n * H + h) * dv + d] - static_cast<double>(mean[d] / count)) <= 1e-14);
      }
    }
  }
}

TEST_CASE("reference_bf16_emulated rounds like a kernel and stays near fp64", "[oracle]") {
  const Case c = build(8, 576, 512, {{150, chain(4)}, {0, {-1, 0, 1, 1, 0}}}, 71);
  const Reference r64 = vattn::oracle_fp64(c), r16 = vattn::reference_bf16_emulated(c);
  REQUIRE(r16.out.size() == r64.out.size());
  double max_rel = 0, max_lse = 0;
  int64_t differs = 0;
  for (size_t i = 0; i < r16.out.size(); ++i) {
    const float f = static_cast<float>(r16.out[i]);
    REQUIRE(vattn::round_to_bf16(f) == f);  // stored bf16 values
    const double err = std::fabs(r16.out[i] - r64.out[i]);
    differs += err > 0;
    // P rounding (<= u/2 * abs_pv) plus output rounding (<= u/2 * |o|), u = 2^-8.
    max_rel = std::max(max_rel, err / (r64.abs_pv[i] + std::fabs(r64.out[i])));
  }
  for (size_t i = 0; i < r16.lse.size(); ++i) max_lse = std::max(max_lse, std::fabs(r16.lse[i] - r64.lse[i]));
  CHECK(differs > static_cast<int64_t>(r16.out.size() / 2));  // it really rounds
  CHECK(max_rel <= 1.0 / 256);
  CHECK(max_lse > 0);  // fp32 logits
  CHECK(max_lse < 1e-4);
}

TEST_CASE("the oracles refuse a bad case with an InputError naming the field", "[oracle]") {
  Case c = build(2, 16, 12, {{3, chain(2)}}, 81);
  c.kv_indices[1] = 1000000;
  try {
    (void)vattn::oracle_fp64(c);
    FAIL("oracle_fp64 accepted an out-of-range kv_indices entry");
  } catch (const vattn::InputError& e) {
    CHECK(e.field() == "kv_indices");
    CHECK(e.case_name() == "oracle_test");
  }
  CHECK_THROWS_AS(vattn::reference_bf16_emulated(c), vattn::InputError);
}
