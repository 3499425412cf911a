// SPDX-License-Identifier: Apache-2.0
// Pieces every fuzz target shares: a comparison under the tolerance model turned into a
// Verdict, the choice of oracle by size, and the repro file a failure leaves behind.
#pragma once

#include <string>
#include <vector>

#include "vattn/case/case.h"
#include "vattn/oracle/cpu_oracle.h"
#include "vattn/fuzz/protocol/protocol.h"
#include "vattn/check/tolerance.h"

namespace vattn::fuzz {

// Cases up to this much work (sum_b T_b*H*(P_b+T_b)) are held to the CPU float64 oracle (and the
// bf16-emulating yardstick); larger ones to the naive GPU oracle where there is a device. The two
// CPU passes cost about 0.6 us of one core per triple: 0.2 s at this limit, so a pool of 15
// threads keeps up with the GPU; a host target uses the CPU oracle at every size.
constexpr int64_t kCpuOracleMaxWork = 300000;

// out/lse against `ref` (yardstick: the bf16-emulating reference, or ref itself when the oracle is
// not the float64 one: then there is no ratio check). Verdict "pass" or "wrong" with the report's
// summary line as detail.
Verdict compare_verdict(const Case& c, const Reference& ref, const Reference* yardstick, const std::vector<float>& out,
                        const std::vector<float>& lse, const std::string& oracle, const std::string& result_label);

// Writes the evidence of a failure to `path`: the case's inputs, the oracle's output (stored as
// oracle_fp64 when it is the float64 oracle, else as the named producer) and, when given, the
// result under test as "kernel:<target>". File source "fuzz:<target>". Throws on write errors.
void write_repro_file(const Case& c, const std::string& path, const std::string& target, const Reference* ref,
                      const std::string& oracle, const std::vector<float>* out, const std::vector<float>* lse,
                      const std::string& note);

}  // namespace vattn::fuzz
