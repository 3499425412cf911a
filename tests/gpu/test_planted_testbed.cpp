// SPDX-License-Identifier: Apache-2.0
// One kernel testbed: a planted revision fails the same check through every entry point that
// judges a revision (the GPU tests' helpers, `vattn replay --kernel`, the fuzz worker's GPU
// target), because all three run vattn/testbed. Registered only with -DVATTN_BUILD_PLANTED=ON.
#include <cstdlib>
#include <filesystem>

#include <catch2/catch.hpp>

#include "tests/gpu/gpu_testbed.h"
#include "vattn/fuzz/gen/gen_recipe.h"
#include "vattn/fuzz/worker/gpu_target.h"
#include "vattn/gen/generate.h"
#include "vattn/oracle/cpu_oracle.h"
#include "vattn/testbed/testbed.h"

using namespace vattn;

TEST_CASE("a planted revision fails the same check through the GPU tests, replay and the fuzzer",
          "[gpu][planted][testbed][revision-independent]") {
  setenv("VATTN_FINDINGS_DIR", "/tmp/vattn-planted-findings", 1);  // the GPU tests' path writes a repro
  // plant_skip_rescale: the running max moves and the earlier terms are not rescaled. One split
  // over 4099 uniform keys: the max moves after the first tile in every row.
  const std::string lib = (test::revisions_dir() / "libvattn_rev_plant_skip_rescale.so").string();
  if (!std::filesystem::exists(lib))
    FAIL("planted variant skip_rescale not built (configure with -DVATTN_BUILD_PLANTED=ON): " << lib);
  const Recipe r = Recipe::parse("B=1 H=8 P=[4099] T=[4] tree=chain profile=uniform seed=7 splits=1");
  const Case c = generate_case(r, "planted");
  INFO("case: " << r.to_line());

  // The GPU tests: check_vs_cpu (the CPU float64 oracle and the bf16 yardstick).
  const std::vector<test::KernelVerdict> gpu_tests = test::check_vs_cpu(c, {r.splits}, lib);
  REQUIRE(gpu_tests.size() == 1);
  const testbed::Verdict& by_tests = gpu_tests[0].verdict;

  // `vattn replay --kernel LIB --recipe LINE`: the function its kernel producer calls, with the
  // references replay computes.
  const Reference r64 = oracle_fp64(c), r16 = reference_bf16_emulated(c);
  const testbed::CaseResult replayed =
      testbed::replay_kernel(load_revision(lib), c, r.splits, {&r64, &r16, testbed::kOracleFp64});
  const testbed::Verdict& by_replay = replayed.outcome.verdict;

  // `vattn fuzz --kernel LIB`: the GPU target's phases (prepare, run, the Check), no repro wanted.
  const std::unique_ptr<fuzz::Target> target = fuzz::make_gpu_target({lib, GenBudget::small()});
  const fuzz::Check check = target->run(c, r, target->prepare(c, r));
  const fuzz::Verdict by_fuzzer = check(fuzz::ReproRequest{});

  INFO("GPU tests: " << by_tests.verdict << " / " << by_tests.check << ": " << by_tests.detail);
  INFO("replay:    " << by_replay.verdict << " / " << by_replay.check << ": " << by_replay.detail);
  INFO("fuzzer:    " << by_fuzzer.verdict << " / " << by_fuzzer.check << ": " << by_fuzzer.detail);
  CHECK(by_tests.verdict == "wrong");
  CHECK(by_tests.check == "vs oracle");
  CHECK(!replayed.outcome.report.pass);  // what replay prints as FAIL
  CHECK(by_replay.verdict == by_tests.verdict);
  CHECK(by_replay.check == by_tests.check);
  CHECK(by_fuzzer.verdict == by_tests.verdict);
  CHECK(by_fuzzer.check == by_tests.check);
  CHECK(by_fuzzer.oracle == by_tests.oracle);
}
