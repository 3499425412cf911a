// SPDX-License-Identifier: Apache-2.0
// The verdict of one revision on one case, and its first part: the result held to an oracle
// under the tolerance model (docs/tolerance.md). Host code: the fuzzer's host targets use it too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vattn/case/case.h"
#include "vattn/check/tolerance.h"
#include "vattn/oracle/cpu_oracle.h"

namespace vattn::testbed {

// Cases up to this much work (sum_b T_b*H*(P_b+T_b)) are held to the CPU float64 oracle (and the
// bf16-emulating yardstick); larger ones to the naive GPU oracle where there is a device. The two
// CPU passes cost about 0.6 us of one core per triple: 0.2 s at this limit, so a fuzz worker's
// pool of 15 threads keeps up with the GPU; a host target uses the CPU oracle at every size.
constexpr int64_t kCpuOracleMaxWork = 300000;

// Oracle names, as verdicts, reports and repro files spell them.
constexpr const char* kOracleFp64 = "oracle_fp64";
constexpr const char* kNaiveGpuOracle = "naive_gpu_oracle";

// What a result is held to: the oracle and, for the float64 one, the bf16-emulating reference
// whose own error is the yardstick (nullptr: no ratio check, e.g. the naive GPU oracle, float32).
struct References {
  const Reference* ref = nullptr;
  const Reference* yardstick = nullptr;
  std::string oracle;  // kOracleFp64 or kNaiveGpuOracle
};

// The first check that failed, or "pass". The fuzz journal adds the case index, the repro path and
// times (vattn/fuzz/protocol/protocol.h); its verdict classes and check names are these.
struct Verdict {
  std::string verdict = "pass";  // pass | wrong | device-error | guard | refused
  std::string check;             // which check decided ("vs oracle", "fp32 partials", ...)
  std::string detail;            // one line of evidence
  std::string oracle;            // kOracleFp64 | kNaiveGpuOracle | ""
  std::string bucket;            // where a wrong answer's errors sit (vattn/check/error_bucket.h); "" for none
  uint32_t device_error = 0;     // the device error word the run left
  bool failed() const { return verdict != "pass"; }
};

// out/lse held to refs; the report is labelled "<result_label> vs <oracle>".
CompareReport compare_to(const Case& c, const References& refs, const std::vector<float>& out,
                         const std::vector<float>& lse, const std::string& result_label);

// compare_to() as a Verdict: "pass", or "wrong" (check "vs oracle") with the report's summary
// line as detail and its error bucket. `report`, when given, receives the report.
Verdict compare_verdict(const Case& c, const References& refs, const std::vector<float>& out,
                        const std::vector<float>& lse, const std::string& result_label,
                        CompareReport* report = nullptr);

}  // namespace vattn::testbed
