// SPDX-License-Identifier: Apache-2.0
// The fp32-partials property (Property::kFp32Partials; the fuzz worker's GPU target samples it).
// With every query zero, every score is 0 and every probability exactly 1, so each output is the
// plain mean of the V rows its row sees, and nothing a correct kernel does rounds below fp32
// before the final bf16 store, whatever the split count. Partials stored in bf16 add a rounding of
// each split's mean, which moves about a fifth of the outputs by an ulp or more; the bf16
// tolerance model cannot see that (it allows u * sum_k p_k |v_k|).
// Judged element by element against the float64-summed mean, in bf16 ulps of the mean, after
// taking off what fp32 arithmetic may err on the magnitudes summed (2^-18 * mean |v|, for
// cancelling means); rounding ties are left out (any last bit decides them). The kernel's own
// single-split run of the same case is the baseline: the multi-split run may misround at most 2%
// more of the elements, and its worst error may exceed the baseline's (or one ulp) by one ulp.
#pragma once

#include <string>
#include <vector>

namespace vattn::testbed {

struct RoundingTally {
  long long checked = 0, misrounded = 0;
  double worst_ulps = 0;
  size_t worst_at = 0;
  double share() const { return checked ? static_cast<double>(misrounded) / static_cast<double>(checked) : 0.0; }
};

// out: a kernel's zero-query output; mean, mean_abs: the oracle's out and abs_pv for that case.
RoundingTally tally_rounding(const std::vector<float>& out, const std::vector<float>& mean,
                             const std::vector<float>& mean_abs);

// "" when the property holds, else one line of evidence.
std::string partials_problem(const std::vector<float>& multi, const std::vector<float>& single,
                             const std::vector<float>& mean, const std::vector<float>& mean_abs, int splits_used);

// Whether an fp32 value lies within 1/64 ulp of a bf16 rounding midpoint.
bool near_bf16_tie(float x);

}  // namespace vattn::testbed
