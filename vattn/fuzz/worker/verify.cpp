// SPDX-License-Identifier: Apache-2.0
#include "vattn/fuzz/worker/verify.h"

#include "vattn/casefile/case_file.h"

namespace vattn::fuzz {

Verdict compare_verdict(const Case& c, const Reference& ref, const Reference* yardstick, const std::vector<float>& out,
                        const std::vector<float>& lse, const std::string& oracle, const std::string& result_label) {
  Tolerance tol;
  if (yardstick == nullptr) tol.max_ratio = 1e30;  // no bf16-emulating yardstick to hold the error to
  const CompareReport rep = compare(c, ref, yardstick ? *yardstick : ref, out, lse, result_label + " vs " + oracle, tol);
  Verdict v;
  v.oracle = oracle;
  if (!rep.pass) {
    // One bug seen through either oracle is one finding: the check says "vs oracle", the detail which.
    v.verdict = "wrong";
    v.check = "vs oracle";
    v.detail = rep.summary_line();
  }
  return v;
}

void write_repro_file(const Case& c, const std::string& path, const std::string& target, const Reference* ref,
                      const std::string& oracle, const std::vector<float>* out, const std::vector<float>* lse,
                      const std::string& note) {
  Case copy = c;
  copy.name = "repro";
  copy.outputs.clear();
  if (ref != nullptr && !ref->out.empty()) {
    StoredOutput o;
    o.producer = oracle == "oracle_fp64" ? kOracleProducer : oracle;
    o.description = "the oracle the fuzzer held the target to";
    o.out_is_bf16 = oracle != "oracle_fp64";
    o.out.assign(ref->out.begin(), ref->out.end());
    o.lse.assign(ref->lse.begin(), ref->lse.end());
    copy.outputs.push_back(std::move(o));
  }
  if (out != nullptr && lse != nullptr && !out->empty()) {
    StoredOutput got;
    std::string name = target;  // a producer name may not hold '/' (case-format.md)
    for (char& ch : name) ch = ch == '/' ? '_' : ch;
    got.producer = "kernel:" + name;
    got.description = "result of the target when the check failed";
    got.out = *out;
    got.lse = *lse;
    copy.outputs.push_back(std::move(got));
  }
  CaseFileHeader h;
  h.source = "fuzz:" + target;
  h.optional["notes"] = "written by vattn fuzz; recipe: " + c.recipe + (note.empty() ? "" : "; " + note);
  write_case_file(path, h, {copy});
}

}  // namespace vattn::fuzz
