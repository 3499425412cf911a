// SPDX-License-Identifier: Apache-2.0
#include "vattn/testbed/verdict.h"

#include "vattn/check/error_bucket.h"

namespace vattn::testbed {

CompareReport compare_to(const Case& c, const References& refs, const std::vector<float>& out,
                         const std::vector<float>& lse, const std::string& result_label) {
  Tolerance tol;
  if (refs.yardstick == nullptr) tol.max_ratio = 1e30;  // no bf16-emulating yardstick to hold the error to
  return compare(c, *refs.ref, refs.yardstick ? *refs.yardstick : *refs.ref, out, lse,
                 result_label + " vs " + refs.oracle, tol);
}

Verdict compare_verdict(const Case& c, const References& refs, const std::vector<float>& out,
                        const std::vector<float>& lse, const std::string& result_label, CompareReport* report) {
  CompareReport rep = compare_to(c, refs, out, lse, result_label);
  Verdict v;
  v.oracle = refs.oracle;
  if (!rep.pass) {
    // One bug seen through either oracle is one finding: the check says "vs oracle", the detail which.
    v.verdict = "wrong";
    v.check = "vs oracle";
    v.detail = rep.summary_line();
    // Where the errors sit tells bugs of this one check apart (a wrong head, a wrong request).
    v.bucket = error_bucket(c, refs.ref->out, rep);
  }
  if (report != nullptr) *report = std::move(rep);
  return v;
}

}  // namespace vattn::testbed
