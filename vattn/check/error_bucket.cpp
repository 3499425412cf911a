// SPDX-License-Identifier: Apache-2.0
#include "vattn/check/error_bucket.h"

#include <cmath>
#include <set>
#include <utility>

namespace vattn {

namespace {

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

std::string kind_of(const CompareReport& r) {
  if (r.nonfinite_mismatch > 0) return "nonfinite";
  if (r.elements_over_bound > 0) return "values";
  if (!r.lse_where.by_row.empty()) return "lse";
  for (const std::string& f : r.failures)
    if (starts_with(f, "score") || starts_with(f, "ratio")) return "aggregate";
  return "vacuous";
}

// Whether row (b, i) has an oracle output element that is finite: only such a row can show a
// wrong value, so only such rows decide whether a request was hit whole.
bool comparable(const Case& c, const std::vector<double>& ref_out, int b, int i) {
  const size_t per_row = static_cast<size_t>(c.num_heads) * static_cast<size_t>(c.d_v);
  const size_t first = static_cast<size_t>(c.qo_indptr[static_cast<size_t>(b)] + i) * per_row;
  if (ref_out.size() < first + per_row) return true;
  for (size_t k = first; k < first + per_row; ++k)
    if (std::isfinite(ref_out[k])) return true;
  return false;
}

std::string rows_class(const Case& c, const std::vector<double>& ref_out, const std::set<std::pair<int, int>>& rows) {
  std::set<int> requests;
  for (const auto& [b, i] : rows)
    if (b >= 0 && b < c.num_requests()) requests.insert(b);
  bool whole = true;
  for (int b : requests)
    for (int i = 0; i < c.drafts(b) && whole; ++i) whole = rows.count({b, i}) != 0 || !comparable(c, ref_out, b, i);
  if (whole) return "whole-requests";
  for (const auto& [b, i] : rows)
    if (b < 0 || b >= c.num_requests() || i != c.drafts(b) - 1) return "some-rows";
  return "last-drafts";
}

}  // namespace

std::string error_bucket(const Case& c, const std::vector<double>& ref_out, const CompareReport& r) {
  if (r.pass) return "";
  std::string kind = kind_of(r);
  if (kind == "aggregate" || kind == "vacuous") return kind;
  std::set<std::pair<int, int>> rows;
  std::set<int> heads, blocks;
  for (const OverBoundMap* m : {&r.over_where, &r.nonfinite_where, &r.lse_where}) {
    for (const auto& entry : m->by_row) rows.insert(entry.first);
    for (const auto& entry : m->by_head) heads.insert(entry.first);
  }
  for (const OverBoundMap* m : {&r.over_where, &r.nonfinite_where})
    for (const auto& entry : m->by_block) blocks.insert(entry.first);
  std::string key = kind;
  key += heads.size() >= static_cast<size_t>(c.num_heads) ? " heads=all" : " heads=some";
  key += " rows=" + rows_class(c, ref_out, rows);
  const size_t n_blocks = static_cast<size_t>((c.d_v + OverBoundMap::kBlock - 1) / OverBoundMap::kBlock);
  if (!blocks.empty()) key += blocks.size() >= n_blocks ? " cols=all" : " cols=some";
  return key;
}

}  // namespace vattn
