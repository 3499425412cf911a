// SPDX-License-Identifier: Apache-2.0
#include "tests/gpu/property_support.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <sstream>

#include "vattn/case/bf16.h"
#include "vattn/check/draft_poison.h"
#include "vattn/check/tolerance.h"
#include "vattn/gpu/naive_runner.h"
#include "vattn/testbed/testbed.h"

namespace vattn::test {

GenBudget gpu_budget(const std::string& default_name) {
  GenBudget b = GenBudget::from_lookup([&](const char* name) -> const char* {
    if (std::string(name) == "VATTN_FUZZ_BUDGET") {
      const char* v = std::getenv(name);
      return v && *v ? v : default_name.c_str();
    }
    return std::getenv(name);
  });
  b.max_total_kv = std::min<int64_t>(b.max_total_kv, 300000);
  b.max_total_drafts = std::min<int64_t>(b.max_total_drafts, 1100);
  b.max_splits = std::min(b.max_splits, 64);
  return b;
}

namespace {

// One testbed run on a plan fitted to this case (not the budget's maximum): large cases keep a
// small workspace.
testbed::Observation observe(const Case& c, const testbed::Options& o, const std::string& revision) {
  DeviceCase dc(c);
  const int64_t rows = static_cast<int64_t>(c.n_q()) * c.num_heads;
  testbed::Testbed tb(load_revision(revision),
                      limits_for(c, std::max(o.splits, std::min(8, partial_splits_cap(rows)))));
  return tb.run(dc, c, o);
}

}  // namespace

int partial_splits_cap(int64_t rows) {
  const int64_t d_v = Case().d_v;  // every revision's output width (MLA's latent)
  const int64_t per_split = std::max<int64_t>(1, rows) * d_v * static_cast<int64_t>(sizeof(float));
  return static_cast<int>(std::clamp<int64_t>(kMaxPartialBytes / per_split, 1, 1 << 20));
}

bool plan_hook_under_test() { return load_revision(revision_under_test()).plan_for != nullptr; }

rc::Gen<testbed::PlanOverride> gen_gpu_plan(bool hook, bool heavy) {
  if (!hook) return rc::gen::just(testbed::PlanOverride{});
  const int fewest_sms = heavy ? 64 : 1;
  return rc::gen::mapcat(rc::gen::inRange(0, 6), [fewest_sms](int kind) -> rc::Gen<testbed::PlanOverride> {
    if (kind < 2) return rc::gen::just(testbed::PlanOverride{188, 1});   // the RTX PRO 6000
    if (kind == 2) return rc::gen::just(testbed::PlanOverride{132, 0});  // an H100/H200's SMs
    return rc::gen::apply(
        [](int sms, int blocks) {
          return testbed::PlanOverride{sms, blocks};
        },
        rc::gen::inRange(fewest_sms, VATTN_TEST_PLAN_MAX_SMS + 1),
        rc::gen::inRange(0, VATTN_TEST_PLAN_MAX_BLOCKS_PER_SM + 1));
  });
}

rc::Gen<Recipe::PlanLimits> gen_tight_limits(const Recipe& r, int drafts_cap) {
  int64_t total = 0;
  int longest = 1;
  for (int t : r.drafts) {
    total += t;
    longest = std::max(longest, t);
  }
  const int batch = static_cast<int>(r.drafts.size());
  const int forced =
      std::max(std::min(recipe_work(r) >= kHeavyWork ? 16 : 1, partial_splits_cap(total * r.heads)), r.splits);
  return rc::gen::apply(
      [=](int more_b, int more_q, int more_t, int more_s) {
        Recipe::PlanLimits l;
        l.max_requests = batch + more_b;
        l.max_total_drafts = total + more_q;
        l.max_drafts_per_request = std::max(longest, std::min(drafts_cap, longest + more_t));
        l.max_splits = forced + more_s;
        return l;
      },
      rc::gen::inRange(0, 4), rc::gen::inRange(0, 65), rc::gen::inRange(0, 33), rc::gen::inRange(0, 8));
}

rc::Gen<Recipe> gen_planned_recipe(const GenBudget& b, bool hook, bool tight_limits) {
  static const int drafts_cap = [] {
    vattn_caps caps{};
    const Revision rev = load_revision(revision_under_test());
    return rev.api->capabilities(&caps) == VATTN_OK ? caps.max_drafts_per_request : 1;
  }();
  return rc::gen::mapcat(gen_recipe(b), [hook, tight_limits](Recipe r) {
    int64_t rows = 0;
    for (int t : r.drafts) rows += static_cast<int64_t>(t) * r.heads;
    r.splits = std::min(r.splits, partial_splits_cap(rows));
    const rc::Gen<Recipe::PlanLimits> limits =
        tight_limits ? gen_tight_limits(r, drafts_cap) : rc::gen::just(Recipe::PlanLimits{});
    return rc::gen::apply(
        [r](const Recipe::PlanLimits& l, const testbed::PlanOverride& gpu) {
          Recipe planned = r;
          planned.limits = l;
          planned.sms = gpu.sms;
          planned.sm_blocks = gpu.blocks_per_sm;
          return planned;
        },
        limits, gen_gpu_plan(hook, recipe_work(r) >= kHeavyWork));
  });
}

RunResult run_once(const Case& c, int splits, const std::string& revision, const testbed::PlanOverride& gpu) {
  testbed::Options o;
  o.splits = splits;
  o.oracle = testbed::OracleChoice::kGiven;  // the properties compare runs with each other
  o.plan = gpu;
  return observe(c, o, revision).run;
}

void note_failure(const KernelVerdict& v, const Case& c, const std::string& tag) {
  if (v.report.pass && v.run.ok()) return;
  std::fprintf(stderr, "[%s] FAIL %s\n  %s\n  %s\n  repro: %s\n", tag.c_str(), c.recipe.c_str(),
               v.report.summary_line().c_str(), v.run.problem(nullptr).c_str(), v.repro_path.c_str());
}

namespace {

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

std::string row_name(const Case& c, int64_t flat_row) {
  const int64_t q = flat_row / c.num_heads;
  int b = 0;
  while (b + 1 < c.num_requests() && c.qo_indptr[static_cast<size_t>(b) + 1] <= q) ++b;
  std::ostringstream os;
  os << "request " << b << " draft " << (q - c.qo_indptr[static_cast<size_t>(b)]) << " head " << flat_row % c.num_heads;
  return os.str();
}

// Compares rows [a_row0, a_row0 + rows) of a with [b_row0, ...) of b, with an optional row stride map.
std::string compare_rows(const Case& c, const RunResult& a, const RunResult& b,
                         const std::function<int64_t(int64_t)>& a_row_of, int64_t rows) {
  const int64_t dv = c.d_v;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t ar = a_row_of(r);
    if (!same_bits(a.lse[static_cast<size_t>(ar)], b.lse[static_cast<size_t>(r)])) {
      std::ostringstream os;
      os.precision(9);
      os << row_name(c, ar) << ": lse " << a.lse[static_cast<size_t>(ar)] << " vs " << b.lse[static_cast<size_t>(r)];
      return os.str();
    }
    for (int64_t d = 0; d < dv; ++d) {
      const float x = a.out[static_cast<size_t>(ar * dv + d)], y = b.out[static_cast<size_t>(r * dv + d)];
      if (!same_bits(x, y)) {
        std::ostringstream os;
        os.precision(9);
        os << row_name(c, ar) << " column " << d << ": " << x << " vs " << y;
        return os.str();
      }
    }
  }
  return "";
}

}  // namespace

std::string bitwise_difference(const Case& c, const RunResult& a, const RunResult& b) {
  if (a.out.size() != b.out.size() || a.lse.size() != b.lse.size()) return "output sizes differ";
  return compare_rows(
      c, a, b, [](int64_t r) { return r; }, static_cast<int64_t>(a.lse.size()));
}

std::string request_difference(const Case& c, const RunResult& all, int request, const RunResult& alone) {
  const int64_t first = static_cast<int64_t>(c.qo_indptr[static_cast<size_t>(request)]) * c.num_heads;
  return compare_rows(
      c, all, alone, [first](int64_t r) { return first + r; }, static_cast<int64_t>(alone.lse.size()));
}

std::string head_difference(const Case& c, const RunResult& all, int head, const RunResult& alone) {
  const int64_t H = c.num_heads;
  return compare_rows(
      c, all, alone, [H, head](int64_t r) { return r * H + head; }, static_cast<int64_t>(alone.lse.size()));
}

std::string split_disagreement(const Case& c, const Reference& naive, const RunResult& x, const RunResult& y) {
  return runs_disagreement(c, naive, x.out, x.lse, y.out, y.lse);
}

Case permute_slots(const Case& c, uint64_t seed) {
  Case m = c;
  const int64_t n = c.n_rows(), grown = n + 7;
  std::vector<int64_t> where(static_cast<size_t>(grown));
  std::iota(where.begin(), where.end(), 0);
  std::mt19937_64 rng(seed);
  std::shuffle(where.begin(), where.end(), rng);
  const size_t d = static_cast<size_t>(c.d_qk);
  m.kv_pool.assign(static_cast<size_t>(grown) * d, float_to_bf16(0.25f));
  for (int64_t r = 0; r < n; ++r)
    std::copy_n(
        c.kv_pool.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(r) * d), d,
        m.kv_pool.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(where[static_cast<size_t>(r)]) * d));
  for (auto& i : m.kv_indices) i = static_cast<int32_t>(where[static_cast<size_t>(i)]);
  if (!m.kv_slot_ids.empty()) {
    m.kv_slot_ids.assign(static_cast<size_t>(grown), 0);
    for (int64_t r = 0; r < grown; ++r) m.kv_slot_ids[static_cast<size_t>(r)] = r;
  }
  m.outputs.clear();
  return m;
}

Case poison_outside_key_sets(const Case& c, uint64_t seed) {
  Case m = c;
  const size_t d = static_cast<size_t>(c.d_qk);
  const uint16_t poison[3] = {kBf16QuietNaN, kBf16PosInf, kBf16NegInf};
  std::vector<char> used(static_cast<size_t>(c.n_rows()), 0);
  for (int32_t i : c.kv_indices) used[static_cast<size_t>(i)] = 1;
  for (size_t r = 0; r < used.size(); ++r)
    if (!used[r])
      for (size_t k = 0; k < d; ++k) m.kv_pool[r * d + k] = poison[(seed + r + k) % 3];
  for (int extra = 0; extra < 5; ++extra)
    for (size_t k = 0; k < d; ++k) m.kv_pool.push_back(poison[(seed + extra + k) % 3]);
  if (!m.kv_slot_ids.empty())
    for (int extra = 0; extra < 5; ++extra)
      m.kv_slot_ids.push_back(static_cast<int64_t>(m.kv_slot_ids.size()) + 1000000);
  for (int b = 0; b < c.num_requests(); ++b) {
    const int t = c.drafts(b);
    for (int j = 0; j < t; ++j) {
      bool seen = false;
      for (int i = 0; i < t && !seen; ++i) seen = c.visible(b, i, j);
      if (seen) continue;
      const size_t row = static_cast<size_t>(c.qo_indptr[static_cast<size_t>(b)] + j);
      for (size_t k = 0; k < d; ++k) m.kv_draft[row * d + k] = poison[(seed + row + k) % 3];
    }
  }
  m.outputs.clear();
  return m;
}

PoisonCheck check_partly_visible_poison(const Case& c, int splits, uint64_t seed, const std::string& revision,
                                        const testbed::PlanOverride& gpu) {
  testbed::Options o;
  o.splits = splits;
  o.seed = seed;
  o.plan = gpu;
  o.oracle = testbed::OracleChoice::kNaiveGpu;  // the bound's scales, at every size
  o.properties.add(testbed::Property::kPartlyVisiblePoison);
  PoisonCheck k;
  const DraftPoison p = partly_visible_draft_poison(c, seed);  // the draft the testbed poisons
  if (!p.applies()) return k;
  k.applicable = true;
  k.label = p.label();
  const testbed::Observation obs = observe(c, o, revision);
  k.clean = obs.run;
  k.poisoned = obs.poisoned;
  if (k.clean.ok() && k.poisoned.ok())
    k.diff = testbed::partly_visible_poison_problem(c, obs, {obs.naive.get(), nullptr, testbed::kNaiveGpuOracle});
  return k;
}

Case extract_request(const Case& c, int b) {
  Case m = c;
  const size_t d = static_cast<size_t>(c.d_qk), H = static_cast<size_t>(c.num_heads);
  const size_t q0 = static_cast<size_t>(c.qo_indptr[static_cast<size_t>(b)]), t = static_cast<size_t>(c.drafts(b));
  const size_t k0 = static_cast<size_t>(c.kv_indptr[static_cast<size_t>(b)]), p = static_cast<size_t>(c.prefix_len(b));
  m.q.assign(c.q.begin() + static_cast<std::ptrdiff_t>(q0 * H * d),
             c.q.begin() + static_cast<std::ptrdiff_t>((q0 + t) * H * d));
  m.kv_draft.assign(c.kv_draft.begin() + static_cast<std::ptrdiff_t>(q0 * d),
                    c.kv_draft.begin() + static_cast<std::ptrdiff_t>((q0 + t) * d));
  m.kv_indices.assign(c.kv_indices.begin() + static_cast<std::ptrdiff_t>(k0),
                      c.kv_indices.begin() + static_cast<std::ptrdiff_t>(k0 + p));
  m.kv_indptr = {0, static_cast<int32_t>(p)};
  m.qo_indptr = {0, static_cast<int32_t>(t)};
  const size_t m0 = static_cast<size_t>(c.draft_mask_indptr[static_cast<size_t>(b)]);
  m.draft_mask.assign(c.draft_mask.begin() + static_cast<std::ptrdiff_t>(m0),
                      c.draft_mask.begin() + static_cast<std::ptrdiff_t>(m0 + t * t));
  m.draft_mask_indptr = {0, static_cast<int64_t>(t * t)};
  if (!c.draft_parent.empty())
    m.draft_parent.assign(c.draft_parent.begin() + static_cast<std::ptrdiff_t>(q0),
                          c.draft_parent.begin() + static_cast<std::ptrdiff_t>(q0 + t));
  m.outputs.clear();
  return m;
}

Case extract_head(const Case& c, int head) {
  Case m = c;
  const size_t d = static_cast<size_t>(c.d_qk), H = static_cast<size_t>(c.num_heads);
  m.num_heads = 1;
  m.q.resize(static_cast<size_t>(c.n_q()) * d);
  for (size_t r = 0; r < static_cast<size_t>(c.n_q()); ++r)
    std::copy_n(c.q.begin() + static_cast<std::ptrdiff_t>((r * H + static_cast<size_t>(head)) * d), d,
                m.q.begin() + static_cast<std::ptrdiff_t>(r * d));
  m.outputs.clear();
  return m;
}

Case chain_as_causal_requests(const Case& c) {
  Case m = c;
  const size_t d = static_cast<size_t>(c.d_qk);
  m.kv_indices.clear();
  m.kv_indptr = {0};
  m.qo_indptr = {0};
  m.draft_mask = {};
  m.draft_mask_indptr = {0};
  m.draft_parent.clear();
  m.kv_slot_ids.clear();
  for (int b = 0; b < c.num_requests(); ++b) {
    const int t = c.drafts(b);
    const size_t q0 = static_cast<size_t>(c.qo_indptr[static_cast<size_t>(b)]);
    // Earlier drafts of this request become pool rows, appended once.
    const int32_t first_new = static_cast<int32_t>(m.kv_pool.size() / d);
    m.kv_pool.insert(m.kv_pool.end(), c.kv_draft.begin() + static_cast<std::ptrdiff_t>(q0 * d),
                     c.kv_draft.begin() + static_cast<std::ptrdiff_t>((q0 + static_cast<size_t>(t)) * d));
    for (int i = 0; i < t; ++i) {
      for (int k = c.kv_indptr[static_cast<size_t>(b)]; k < c.kv_indptr[static_cast<size_t>(b) + 1]; ++k)
        m.kv_indices.push_back(c.kv_indices[static_cast<size_t>(k)]);
      for (int j = 0; j < i; ++j) m.kv_indices.push_back(first_new + j);
      m.kv_indptr.push_back(static_cast<int32_t>(m.kv_indices.size()));
      m.qo_indptr.push_back(m.qo_indptr.back() + 1);
      m.draft_mask.push_back(1);
      m.draft_mask_indptr.push_back(static_cast<int64_t>(m.draft_mask.size()));
    }
  }
  m.outputs.clear();
  return m;
}

std::string lse_inconsistency(const Case& c, const RunResult& x) {
  const size_t d = static_cast<size_t>(c.d_qk), H = static_cast<size_t>(c.num_heads);
  for (int b = 0; b < c.num_requests(); ++b) {
    const int t = c.drafts(b), p = c.prefix_len(b);
    for (int i = 0; i < t; ++i) {
      const size_t qrow = static_cast<size_t>(c.qo_indptr[static_cast<size_t>(b)] + i);
      for (size_t h = 0; h < H; ++h) {
        const double lse = x.lse[qrow * H + h];
        if (!std::isfinite(lse)) continue;
        const uint16_t* q = &c.q[(qrow * H + h) * d];
        double sum = 0, scale = 0;
        auto add = [&](const uint16_t* k) {
          double s = 0, a = 0;
          for (size_t e = 0; e < d; ++e) {
            const double prod = static_cast<double>(bf16_to_float(q[e])) * bf16_to_float(k[e]);
            s += prod;
            a += std::abs(prod);
          }
          sum += std::exp(c.sm_scale * s - lse);
          scale = std::max(scale, c.sm_scale * a);
        };
        for (int k = 0; k < p; ++k)
          add(&c.kv_pool[static_cast<size_t>(
                             c.kv_indices[static_cast<size_t>(c.kv_indptr[static_cast<size_t>(b)] + k)]) *
                         d]);
        for (int j = 0; j < t; ++j)
          if (c.visible(b, i, j))
            add(&c.kv_draft[(static_cast<size_t>(c.qo_indptr[static_cast<size_t>(b)]) + static_cast<size_t>(j)) * d]);
        // fp32 logits (products exact, sums of d terms) and an fp32 row sum: a few 1e-7 of
        // the logit scale and of |lse|, with margin.
        const double tol = 8 * 6e-8 * (std::sqrt(static_cast<double>(d)) * scale + std::abs(lse)) + 2e-6;
        if (std::abs(sum - 1) > tol) {
          std::ostringstream os;
          os.precision(9);
          os << "request " << b << " draft " << i << " head " << h << ": sum_k exp(s_k - lse) = " << sum
             << " (tolerance " << tol << ", lse " << lse << ")";
          return os.str();
        }
      }
    }
  }
  return "";
}

}  // namespace vattn::test
