// SPDX-License-Identifier: Apache-2.0
#include "vattn/testbed/repro.h"

#include "vattn/casefile/case_file.h"
#include "vattn/testbed/verdict.h"

namespace vattn::testbed {

void write_repro_file(const Case& c, const std::string& path, const std::string& target, const Reference* ref,
                      const std::string& oracle, const std::vector<float>* out, const std::vector<float>* lse,
                      const std::string& note, const std::string& written_by) {
  Case copy = c;
  copy.name = "repro";
  copy.outputs.clear();
  if (ref != nullptr && !ref->out.empty()) {
    StoredOutput o;
    o.producer = oracle == kOracleFp64 ? kOracleProducer : oracle;
    o.description = "the oracle the target was held to";
    o.out_is_bf16 = oracle != kOracleFp64;
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
  h.source = "fuzz:" + target;  // case-format.md: "fuzz:<kernel revision>"
  h.optional["notes"] = "written by " + written_by + "; recipe: " + c.recipe + (note.empty() ? "" : "; " + note);
  write_case_file(path, h, {copy});
}

}  // namespace vattn::testbed
