// SPDX-License-Identifier: Apache-2.0
// Shared pieces of the GPU tests, over the testbed (vattn/testbed/testbed.h): run a revision on a
// case, compare with the CPU oracle (or the naive GPU oracle) under the tolerance model, and on
// failure write the evidence (an HDF5 repro: the inputs and the kernel's result as a stored
// output, the references left to the replay that recomputes them) and print the one line that
// re-creates it.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "vattn/case/case.h"
#include "vattn/check/tolerance.h"
#include "vattn/gen/generate.h"
#include "vattn/gpu/kernel_runner.h"
#include "vattn/testbed/plan.h"
#include "vattn/testbed/verdict.h"

namespace vattn::test {

// The revision under test: $VATTN_KERNEL (name or .so path), default VATTN_REVISION_DEFAULT, the
// shipped one (kernels/vattn_revisions.h). ctest sets it for each in-tree revision (CMakeLists.txt).
std::string revision_under_test();

struct KernelVerdict {
  CompareReport report;
  RunResult run;
  testbed::Verdict verdict;  // the testbed's: the first check that failed (run() status, guard bands, vs oracle, ...)
  int splits = 0;
  std::string repro_path;  // written when the check failed
};

// Kernel vs the CPU float64 oracle, once per forced split count (0 = kernel picks); the
// oracles run once for all counts. `plan`: the plan limits (unset: fitted to the case, room for
// 8 splits or the largest count) and the GPU the revision plans for (testbed/plan.h).
std::vector<KernelVerdict> check_vs_cpu(const Case& c, const std::vector<int>& splits,
                                        const std::string& revision = revision_under_test(),
                                        const testbed::CasePlan& plan = {});
// Kernel vs the naive GPU oracle (long contexts).
std::vector<KernelVerdict> check_vs_naive_gpu(const Case& c, const std::vector<int>& splits,
                                              const std::string& revision = revision_under_test(),
                                              const testbed::CasePlan& plan = {});

// Recipe shorthand for tables: generate_case(parse(line)).
Case make_case(const std::string& recipe_line);

// Where the revision libraries of the build are: $VATTN_BINARY_DIR (the staged build on the
// device) or the build this binary came from, then revisions/.
std::filesystem::path revisions_dir();

// Writes the case's inputs and the result of `revision` (output "kernel:<revision>", file source
// "fuzz:<revision>"; the testbed's writer, vattn/testbed/repro.h) to $VATTN_FINDINGS_DIR (default
// ./findings); returns the path. No reference is stored: replay recomputes it.
std::string write_repro(const Case& c, const std::string& tag, const std::vector<float>& out,
                        const std::vector<float>& lse, const std::string& revision);

// Catch2 assertion helpers that print the case line, the report and the repro path.
void require_pass(const KernelVerdict& v, const Case& c);
// Every verdict passes; prints one summary line per split count.
void require_all_pass(const std::vector<KernelVerdict>& vs, const Case& c);

}  // namespace vattn::test
