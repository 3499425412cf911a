// SPDX-License-Identifier: Apache-2.0
// The check of a stored outputs/oracle_fp64 against the float64 oracle recomputed now.
// Both are float64 computations of the same contract, so they may differ only by the float32
// storage rounding of out and lse and by float64 summation order, far below any bf16 effect:
//   out: |stored - o64| <= 2^-23 |o64| + 1e-9 * sum_k p_k |v_k| + 2^-149
//   lse: |stored - lse64| <= 2^-23 |lse64| + 1e-9 * (lse_scale + 1)
//   NaN, +Inf, -Inf positions identical; score <= 1e-10.
// (2^-23 is twice float32's unit roundoff; 1e-9 of the P.V magnitude covers any float64 summation
// order for 2^20 keys; 2^-149 is float32's subnormal spacing.)
#pragma once

#include "vattn/case/case.h"
#include "vattn/check/tolerance.h"
#include "vattn/oracle/cpu_oracle.h"

namespace vattn::cli {

constexpr double kStoredOracleMaxScore = 1e-10;

CompareReport check_stored_oracle(const Case& c, const Reference& ref64, const StoredOutput& stored);

// Every figure of a check_stored_oracle report, for the replay log.
std::string stored_oracle_detail(const CompareReport& r);

}  // namespace vattn::cli
