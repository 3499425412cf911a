// SPDX-License-Identifier: Apache-2.0
#include "tests/gpu/gpu_testbed.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <catch2/catch.hpp>

#include "kernels/vattn_revisions.h"
#include "vattn/gpu/naive_runner.h"
#include "vattn/oracle/cpu_oracle.h"
#include "vattn/testbed/repro.h"
#include "vattn/testbed/testbed.h"

namespace vattn::test {

std::string revision_under_test() {
  const char* k = std::getenv("VATTN_KERNEL");
  return k && *k ? k : VATTN_REVISION_DEFAULT;
}

namespace {

// The testbed's verdict per split count, on one upload and one plan; the references are computed
// once by the caller.
std::vector<KernelVerdict> run_and_compare(const Case& c, const std::vector<int>& splits, const std::string& revision,
                                           const testbed::References& refs, const testbed::CasePlan& plan) {
  std::vector<KernelVerdict> all;
  Revision rev = load_revision(revision);
  DeviceCase dc(c);
  int most = 8;
  for (int s : splits) most = s > most ? s : most;
  testbed::Testbed tb(rev, plan.limits.set() ? testbed::plan_limits(plan.limits, c.num_heads) : limits_for(c, most));
  const std::string planned = plan.gpu.set() ? " " + plan.gpu.describe() : "";
  for (int s : splits) {
    testbed::Options o;
    o.splits = s;
    o.oracle = testbed::OracleChoice::kGiven;
    o.plan = plan.gpu;
    const testbed::Observation obs = tb.run(dc, c, o);
    const testbed::Outcome out =
        testbed::verify(c, obs, "kernel:" + rev.name() + " splits=" + std::to_string(s) + planned, &refs);
    KernelVerdict v;
    v.splits = s;
    v.run = obs.run;
    v.report = out.report;
    v.verdict = out.verdict;
    if (v.verdict.failed()) {
      Case with_splits = c;  // the repro's recipe carries the split count that failed
      try {
        Recipe r = Recipe::parse(c.recipe);
        r.splits = s;
        with_splits.recipe = r.to_line();
      } catch (const std::exception&) {
      }
      v.repro_path = write_repro(with_splits, refs.oracle, v.run.out, v.run.lse, rev.name());
    }
    all.push_back(std::move(v));
  }
  return all;
}

}  // namespace

Case make_case(const std::string& recipe_line) { return generate_case(Recipe::parse(recipe_line), "case"); }

std::filesystem::path revisions_dir() {
  const char* env = std::getenv("VATTN_BINARY_DIR");
  return std::filesystem::path(env && *env ? env : VATTN_BINARY_DIR) / "revisions";
}

std::vector<KernelVerdict> check_vs_cpu(const Case& c, const std::vector<int>& splits, const std::string& revision,
                                        const testbed::CasePlan& plan) {
  const Reference r64 = oracle_fp64(c);
  const Reference r16 = reference_bf16_emulated(c);
  return run_and_compare(c, splits, revision, {&r64, &r16, testbed::kOracleFp64}, plan);
}

std::vector<KernelVerdict> check_vs_naive_gpu(const Case& c, const std::vector<int>& splits,
                                              const std::string& revision, const testbed::CasePlan& plan) {
  Reference naive;
  {
    DeviceCase dc(c);
    naive = naive_gpu_reference(dc);
  }
  // The naive oracle is float32, not a bf16-emulating reference: no yardstick, no ratio check;
  // its own float32 error is far below the bf16 terms of the bound.
  return run_and_compare(c, splits, revision, {&naive, nullptr, testbed::kNaiveGpuOracle}, plan);
}

std::string write_repro(const Case& c, const std::string& tag, const std::vector<float>& out,
                        const std::vector<float>& lse, const std::string& revision) {
  static std::atomic<int> counter{0};
  const char* dir_env = std::getenv("VATTN_FINDINGS_DIR");
  const std::filesystem::path dir = dir_env && *dir_env ? dir_env : "findings";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / ("repro-" + tag + "-" + std::to_string(counter++) + ".h5")).string();
  try {
    testbed::write_repro_file(c, path, revision, nullptr, "", &out, &lse, "", "a failing GPU test");
  } catch (const std::exception& e) {
    return std::string("(repro not written: ") + e.what() + ")";
  }
  return path;
}

void require_pass(const KernelVerdict& v, const Case& c) {
  INFO("case: " << c.describe() << " splits=" << v.splits);
  INFO("re-run: vattn replay --recipe \"" << c.recipe << "\""
                                          << (v.repro_path.empty() ? "" : "  repro: " + v.repro_path));
  INFO(v.run.problem(nullptr));
  INFO(v.report.detail());
  REQUIRE(v.run.ok());
  REQUIRE(v.report.pass);
}

void require_all_pass(const std::vector<KernelVerdict>& vs, const Case& c) {
  for (const auto& v : vs) {
    std::printf("  %s\n", v.report.summary_line().c_str());
    require_pass(v, c);
  }
}

}  // namespace vattn::test
