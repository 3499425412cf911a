// SPDX-License-Identifier: Apache-2.0
// Where a failed comparison's errors sit, reduced to a coarse key: the fuzzer's finding bucket
// (a finding's signature is class, check and this key). One bug hit on many shapes should give
// one key; bugs that hit different places, different keys. The key is
//   <kind> heads=<all|some> rows=<whole-requests|last-drafts|some-rows> cols=<all|some>
// kind  nonfinite: NaN/Inf positions differ from the oracle's (out or lse); values: finite out
//       elements over their bound; lse: only lse rows over their bound; aggregate: no element
//       over its bound, the score or the ratio failed; vacuous: the oracle output is all zero.
//       aggregate and vacuous have no position: the key is the kind alone.
// heads all: every head has an error (H = 1 is always all); some: a proper subset.
// rows  whole-requests: every row of each request the errors touch (one request of several,
//       or all of them: with B = 1 the two cannot be told apart, so they are one class);
//       last-drafts: only the last draft row of requests that have more rows; some-rows: else.
//       Rows whose oracle output is all NaN/Inf (no element could be over bound) are left out.
// cols  all: every 64-column block of d_v holds an out error; some: a proper subset; the field
//       is absent when no out element is wrong (an lse-only error).
// No shape goes in (B, H, P, T, tree, splits): a finding's shrinking keeps only candidates of
// the same signature, so a shape in the key would be pinned in the shrunk recipe, and one bug
// would become one finding per shape. The shrunk recipe says which shape a bug needs.
#pragma once

#include <string>
#include <vector>

#include "vattn/case/case.h"
#include "vattn/check/tolerance.h"

namespace vattn {

// The key of a failed report (see above); "" when the report passed. `ref_out` is the oracle's
// out [n_q * H * d_v] the report was made against (empty: every row counts as comparable).
std::string error_bucket(const Case& c, const std::vector<double>& ref_out, const CompareReport& r);

}  // namespace vattn
