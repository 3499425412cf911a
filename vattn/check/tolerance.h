// SPDX-License-Identifier: Apache-2.0
// The tolerance model of docs/tolerance.md: a correct bf16 kernel's output differs
// from the float64 oracle by P-rounding (~u * sum_k p_k |v_k|) and output rounding (~u * |o|).
// A comparison names its worst element and prints every figure; a check must be able to fail.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "vattn/case/case.h"
#include "vattn/oracle/cpu_oracle.h"

namespace vattn {

struct Tolerance {
  double unit = 1.0 / 256.0;  // bf16 unit roundoff u = 2^-8
  double c_pv = 3.0;          // multiplier of u * sum_k p_k |v_k|
  double c_out = 1.0;         // multiplier of u * |o64|
  double tiny = 1e-6;         // floor, relative to the case's largest sum_k p_k |v_k|
  double lse_c = 1.0;         // multiplier in the LSE bound (see tolerance.cpp for the derivation)
  double max_score = 2e-5;    // global agreement score limit: 1 - 2 sum(xy) / sum(x^2 + y^2)
  double max_ratio = 2.0;     // kernel error / bf16-emulating reference error (RMS), when that error > 0
};

// Where an element lives, for messages: case, request, draft, head, column.
struct ElementPos {
  int64_t index = -1;  // flat index into out (or lse when column == -1)
  int request = -1, draft = -1, head = -1, column = -1;
};

// Where the elements over their bound sit: counts per request, per (request, draft) row, per
// head and per 64-column block of d_v, so a wrong head, a dropped key (every column of some
// rows) or a bad split (blocks of columns) shows at a glance.
struct OverBoundMap {
  static constexpr int kBlock = 64;
  std::map<int, int64_t> by_request, by_head, by_block;
  std::map<std::pair<int, int>, int64_t> by_row;  // (request, draft)
  // An lse position (column -1) counts in no column block.
  void add(const ElementPos& p);
  // "over bound: 12 of 4096 elements (0.29%); requests: r0 12 (100%); rows: r0/d3 12; heads: h1 12;
  //  column blocks: 256-319 12", each list its few largest, for `total` elements compared.
  std::string text(int64_t over, int64_t total) const;
};

struct CompareReport {
  std::string case_name, label;  // label: what was compared, e.g. "kernel:split-v1 vs oracle_fp64"
  bool pass = false;
  std::vector<std::string> failures;  // one short reason per failed check

  double ref_norm = 0;              // ||o64||_2 (must be > 0 unless every row is empty)
  double max_abs_err = 0;           // max |o - o64| over finite elements
  double worst_err_over_bound = 0;  // max |o - o64| / bound
  ElementPos worst;                 // where worst_err_over_bound happens
  double worst_value = 0, worst_ref = 0, worst_bound = 0;
  int64_t elements_over_bound = 0;
  int64_t elements_compared = 0;   // finite in both
  OverBoundMap over_where;         // where the elements over bound are
  int64_t nonfinite_mismatch = 0;  // NaN/Inf positions (out and lse) differing from the oracle's
  ElementPos first_nonfinite_mismatch;
  OverBoundMap nonfinite_where;  // where those positions are (lse rows: no column block)
  OverBoundMap lse_where;        // the lse rows over their bound
  double lse_max_err = 0, lse_worst_err_over_bound = 0;
  ElementPos lse_worst;
  bool lse_checked = true;  // false: the producer stored no lse (out alone was held to the model)
  double score = 0;         // 1 - 2 sum(xy) / sum(x^2 + y^2)
  double rms_err = 0, rms_err_bf16_ref = 0, ratio_vs_bf16_ref = 0;

  std::string summary_line() const;  // one line: PASS/FAIL and the key figures
  std::string detail() const;        // every figure, the worst element named in full
};

// The element-wise part every comparison shares (the tolerance model here, the stored-oracle
// check of `vattn replay`): the worst element against its bound, and the sums behind the
// score, the RMS error and the reference norm.
struct ElementTally {
  double sum_xy = 0, sum_sq = 0, sum_ref_sq = 0, sum_err_sq = 0;
  int64_t n = 0;
  // x: result, y: reference (both finite), bound: what |x - y| may reach at flat out index i.
  void add(const Case& c, size_t i, double x, double y, double bound, CompareReport& r);
  void finish(CompareReport& r) const;  // ref_norm, score, rms_err
};

// out/lse: the result under test, [n_q*H*d_v] and [n_q*H], widened to float.
// bf16ref: reference_bf16_emulated(c), whose error against ref64 is the yardstick.
CompareReport compare(const Case& c, const Reference& ref64, const Reference& bf16ref, const std::vector<float>& out,
                      const std::vector<float>& lse, const std::string& label, const Tolerance& tol = Tolerance());

// "case 'NAME' request R draft D head H column C" (or "... lse"), for messages.
std::string describe_position(const std::string& case_name, const ElementPos& p);

// Maps a flat out index (or lse index with column -1) to request/draft/head/column.
ElementPos locate(const Case& c, int64_t flat_index, bool is_lse);

}  // namespace vattn
