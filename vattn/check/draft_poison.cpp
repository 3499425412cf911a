// SPDX-License-Identifier: Apache-2.0
#include "vattn/check/draft_poison.h"

#include <algorithm>
#include <cmath>

#include "vattn/case/bf16.h"
#include "vattn/check/tolerance.h"

namespace vattn {

namespace {
std::string row_of(const Case& c, int64_t flat_row) { return describe_position(c.name, locate(c, flat_row, true)); }
}  // namespace

std::string DraftPoison::label() const {
  return "request " + std::to_string(request) + " draft " + std::to_string(draft) + " poisoned" +
         (nan_in_k ? " (a NaN in its row)" : " (+-Inf in one shared K/V column)");
}

DraftPoison partly_visible_draft_poison(const Case& c, uint64_t seed) {
  DraftPoison p;
  const int B = c.num_requests();
  for (int n = 0; n < B && !p.applies(); ++n) {
    const int b = static_cast<int>((seed + static_cast<uint64_t>(n)) % static_cast<uint64_t>(B));
    const int t = c.drafts(b);
    for (int m = 0; m < t && !p.applies(); ++m) {
      const int j = static_cast<int>((seed / 7 + static_cast<uint64_t>(m)) % static_cast<uint64_t>(t));
      bool seen = false, unseen = false;
      for (int i = 0; i < t; ++i) (c.visible(b, i, j) ? seen : unseen) = true;
      if (seen && unseen) p.request = b, p.draft = j;
    }
  }
  if (!p.applies()) return p;
  const size_t d = static_cast<size_t>(c.d_qk);
  const auto at = c.kv_draft.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(p.kv_draft_row(c)) * d);
  p.row.assign(at, at + static_cast<std::ptrdiff_t>(d));
  switch (seed % 3) {
    case 0:  // the whole row: K and V
      std::fill(p.row.begin(), p.row.end(), kBf16QuietNaN);
      p.nan_in_k = true;
      break;
    case 1:  // one of the first d_v columns (V, and K's first d_v columns: the same row) +-Inf
      p.row[(seed / 3) % static_cast<uint64_t>(c.d_v)] = (seed / 3) % 2 ? kBf16PosInf : kBf16NegInf;
      break;
    default:  // one column past d_v (K only) NaN, and one of the first d_v columns +Inf
      p.row[static_cast<size_t>(c.d_v) + (seed / 3) % static_cast<uint64_t>(c.d_qk - c.d_v)] = kBf16QuietNaN;
      p.row[(seed / 5) % static_cast<uint64_t>(c.d_v)] = kBf16PosInf;
      p.nan_in_k = true;
      break;
  }
  return p;
}

std::string runs_disagreement(const Case& c, const Reference& scale, const std::vector<float>& x_out,
                              const std::vector<float>& x_lse, const std::vector<float>& y_out,
                              const std::vector<float>& y_lse) {
  Reference around_y = scale;  // bound scales (abs_pv, lse_scale) from the oracle, centre at y
  around_y.out.assign(y_out.begin(), y_out.end());
  around_y.lse.assign(y_lse.begin(), y_lse.end());
  Tolerance tol;
  tol.c_pv *= 2;
  tol.c_out *= 2;
  tol.lse_c *= 2;
  tol.max_score *= 2;
  tol.max_ratio = 1e30;  // two kernel runs: there is no bf16-emulating yardstick here
  const CompareReport rep = compare(c, around_y, around_y, x_out, x_lse, "x vs y", tol);
  return rep.pass ? "" : rep.detail();
}

std::string poisoned_draft_problem(const Case& c, const Reference& scale, const DraftPoison& p,
                                   const std::vector<float>& clean_out, const std::vector<float>& clean_lse,
                                   const std::vector<float>& out, const std::vector<float>& lse) {
  if (clean_out.size() != out.size() || clean_lse.size() != lse.size()) return "output sizes differ";
  const int64_t H = c.num_heads, dv = c.d_v;
  const int64_t q0 = c.qo_indptr[static_cast<size_t>(p.request)];
  std::vector<float> others_out = out, others_lse = lse;  // the rows that see the draft replaced by the clean run's
  for (int64_t r = 0; r < static_cast<int64_t>(lse.size()); ++r) {
    const int64_t q = r / H;
    if (q < q0 || q >= q0 + c.drafts(p.request) || !c.visible(p.request, static_cast<int>(q - q0), p.draft)) continue;
    bool any_nonfinite = !std::isfinite(lse[static_cast<size_t>(r)]);
    for (int64_t d = 0; d < dv && !any_nonfinite; ++d)
      any_nonfinite = !std::isfinite(out[static_cast<size_t>(r * dv + d)]);
    if (p.nan_in_k && !any_nonfinite)
      return p.label() + ": " + row_of(c, r) + " sees a draft whose K holds a NaN, yet its output is finite";
    bool all_finite_out = true;
    for (int64_t d = 0; d < dv && all_finite_out; ++d)
      all_finite_out = std::isfinite(out[static_cast<size_t>(r * dv + d)]);
    if (std::isnan(lse[static_cast<size_t>(r)]) && all_finite_out)
      return p.label() + ": " + row_of(c, r) +
             " has a NaN lse but a wholly finite output row (a plausible wrong value)";
    others_lse[static_cast<size_t>(r)] = clean_lse[static_cast<size_t>(r)];
    std::copy_n(clean_out.begin() + r * dv, dv, others_out.begin() + r * dv);
  }
  const std::string diff = runs_disagreement(c, scale, others_out, others_lse, clean_out, clean_lse);
  return diff.empty() ? "" : p.label() + ": the rows that cannot see it moved: " + diff;
}

}  // namespace vattn
