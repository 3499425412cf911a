// SPDX-License-Identifier: Apache-2.0
#include "vattn/cli/stored_oracle_check.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace vattn::cli {

namespace {

constexpr double kF32Rounding = 0x1.0p-23;
constexpr double kSummationOrder = 1e-9;
constexpr double kF32Subnormal = 0x1.0p-149;

// Same class = both finite, both NaN, or the same infinity.
bool same_class(double x, double y) {
  if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
  if (std::isinf(x) || std::isinf(y)) return x == y;
  return true;
}


}  // namespace

CompareReport check_stored_oracle(const Case& c, const Reference& ref64, const StoredOutput& stored) {
  CompareReport r;
  r.case_name = c.name;
  r.label = stored.producer + " (stored) vs oracle_fp64";
  std::ostringstream fail;
  fail.precision(9);
  ElementTally tally;
  for (size_t i = 0; i < ref64.out.size(); ++i) {
    const double x = stored.out[i], y = ref64.out[i];
    if (!same_class(x, y)) {
      if (r.nonfinite_mismatch++ == 0) r.first_nonfinite_mismatch = locate(c, static_cast<int64_t>(i), false);
      continue;
    }
    if (!std::isfinite(y)) continue;
    tally.add(c, i, x, y, kF32Rounding * std::fabs(y) + kSummationOrder * ref64.abs_pv[i] + kF32Subnormal, r);
  }
  int64_t lse_over = 0;
  for (size_t i = 0; i < ref64.lse.size(); ++i) {
    const double x = stored.lse[i], y = ref64.lse[i];
    if (!same_class(x, y)) {
      if (r.nonfinite_mismatch++ == 0) r.first_nonfinite_mismatch = locate(c, static_cast<int64_t>(i), true);
      continue;
    }
    if (!std::isfinite(y)) continue;
    const double err = std::fabs(x - y);
    const double bound = kF32Rounding * std::fabs(y) + kSummationOrder * (ref64.lse_scale[i] + 1.0);
    const double ratio = err / bound;
    r.lse_max_err = std::max(r.lse_max_err, err);
    if (ratio > 1) ++lse_over;
    if (ratio > r.lse_worst_err_over_bound || r.lse_worst.index < 0) {
      r.lse_worst_err_over_bound = ratio;
      r.lse_worst = locate(c, static_cast<int64_t>(i), true);
    }
  }
  tally.finish(r);

  if (r.elements_over_bound > 0) {
    fail << "out_bound: " << r.elements_over_bound << " elements over the float32-storage bound, worst err/bound "
         << r.worst_err_over_bound << " at " << describe_position(c.name, r.worst) << " (stored " << r.worst_value
         << ", oracle " << r.worst_ref << ", bound " << r.worst_bound << ")";
    r.failures.push_back(fail.str());
    fail.str("");
  }
  if (r.nonfinite_mismatch > 0) {
    fail << "nonfinite: " << r.nonfinite_mismatch << " NaN/Inf positions differ, first at "
         << describe_position(c.name, r.first_nonfinite_mismatch);
    r.failures.push_back(fail.str());
    fail.str("");
  }
  if (lse_over > 0) {
    fail << "lse_bound: " << lse_over << " rows over the float32-storage bound, worst err/bound "
         << r.lse_worst_err_over_bound << " at " << describe_position(c.name, r.lse_worst);
    r.failures.push_back(fail.str());
    fail.str("");
  }
  if (r.score > kStoredOracleMaxScore) {
    fail << "score: " << r.score << " > " << kStoredOracleMaxScore;
    r.failures.push_back(fail.str());
    fail.str("");
  }
  if (r.ref_norm == 0 && c.any_row_has_keys()) {  // the same rule as compare() in vattn/check/tolerance.cpp
    r.failures.push_back(
        "ref_norm: the recomputed oracle output is all zero (or non-finite) though some rows have "
        "keys; the comparison could not fail");
  }
  r.pass = r.failures.empty();
  return r;
}

std::string stored_oracle_detail(const CompareReport& r) {
  std::ostringstream os;
  os.precision(4);
  os << (r.pass ? "PASS" : "FAIL") << " [" << r.label << "] case '" << r.case_name << "'\n";
  os << "  reference norm         " << r.ref_norm << "\n";
  os << "  max |stored - o64|     " << r.max_abs_err << "\n";
  os << "  worst err/bound        " << r.worst_err_over_bound;
  if (r.worst.index >= 0) os << " at " << describe_position(r.case_name, r.worst);
  os << "\n  elements over bound    " << r.elements_over_bound << "\n";
  os << "  nonfinite mismatches   " << r.nonfinite_mismatch << "\n";
  os << "  lse max |err|          " << r.lse_max_err << " (worst err/bound " << r.lse_worst_err_over_bound << ")\n";
  os << "  score                  " << r.score << " (max " << kStoredOracleMaxScore << ")\n";
  for (const auto& f : r.failures) os << "  failed: " << f << "\n";
  return os.str();
}

}  // namespace vattn::cli
