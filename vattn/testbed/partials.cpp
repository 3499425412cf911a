// SPDX-License-Identifier: Apache-2.0
#include "vattn/testbed/partials.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace vattn::testbed {

namespace {
constexpr double kMaxExtraMisrounded = 0.02;
constexpr double kFp32Slack = 1.0 / (1 << 18);  // of sum_k p_k |v_k|: 64 u32, far below bf16's 2^-9

// bf16's ulp at |x| (normal numbers): 2^(exponent - 7).
double bf16_ulp(double x) {
  int e = 0;
  std::frexp(std::fabs(x), &e);  // |x| = m * 2^e, m in [0.5, 1)
  return std::ldexp(1.0, e - 8);
}
}  // namespace

bool near_bf16_tie(float x) {
  uint32_t u = 0;
  std::memcpy(&u, &x, sizeof u);
  const int low = static_cast<int>(u & 0xffffu);  // the bits below bf16's mantissa
  return std::abs(low - 0x8000) <= 0x400;
}

RoundingTally tally_rounding(const std::vector<float>& out, const std::vector<float>& mean,
                             const std::vector<float>& mean_abs) {
  RoundingTally t;
  for (size_t i = 0; i < out.size() && i < mean.size(); ++i) {
    const float ref = mean[i];
    if (!std::isfinite(ref) || std::fabs(ref) < 1e-30f || near_bf16_tie(ref)) continue;
    ++t.checked;
    const double slack = i < mean_abs.size() && std::isfinite(mean_abs[i]) ? kFp32Slack * mean_abs[i] : 0.0;
    const double ulps = std::isfinite(out[i])
                            ? std::max(0.0, std::fabs(static_cast<double>(out[i]) - ref) - slack) / bf16_ulp(ref)
                            : 1e30;
    if (ulps > 0.5) ++t.misrounded;
    if (ulps > t.worst_ulps) {
      t.worst_ulps = ulps;
      t.worst_at = i;
    }
  }
  return t;
}

std::string partials_problem(const std::vector<float>& multi, const std::vector<float>& single,
                             const std::vector<float>& mean, const std::vector<float>& mean_abs, int splits_used) {
  const RoundingTally m = tally_rounding(multi, mean, mean_abs), s = tally_rounding(single, mean, mean_abs);
  if (m.checked == 0) return "";
  if (m.share() <= s.share() + kMaxExtraMisrounded && m.worst_ulps <= std::max(s.worst_ulps, 1.0) + 1.0) return "";
  char buf[360];
  std::snprintf(buf, sizeof buf,
                "zero-query run: %d splits misround %.2f%% of %lld elements, one split %.2f%% (allowed +%.0f%%); "
                "worst %.3g ulp (one split %.3g) at flat index %zu (%g vs mean %g)",
                splits_used, 100 * m.share(), m.checked, 100 * s.share(), 100 * kMaxExtraMisrounded, m.worst_ulps,
                s.worst_ulps, m.worst_at, multi[m.worst_at], mean[m.worst_at]);
  return buf;
}

}  // namespace vattn::testbed
