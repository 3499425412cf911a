// SPDX-License-Identifier: Apache-2.0
// Proof that the properties bite: kernel variants with one deliberate bug each (built only
// with -DVATTN_BUILD_PLANTED=ON, never by default) are run through the same generated
// cases as the real kernel, and every one must be caught. The report says after how many
// generated cases, and the case it shrank to.
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <rapidcheck.h>
#include <catch2/catch.hpp>

#include "tests/gpu/gpu_testbed.h"
#include "tests/gpu/property_support.h"
#include "tests/support/rc_support.h"
#include "vattn/fuzz/gen/gen_recipe.h"

using namespace vattn;

namespace {

// The property a variant is measured against. kOracle, for most: the kernel result is within
// tolerance of the CPU oracle, the run is clean (no device error, guard bands intact), and a
// forced split count is the one used. kPartlyVisiblePoison: NaN/Inf in a draft some rows see
// changes no other row (generated cases never hold NaN where a row could meet it in P.V).
// `not_run` is set when the variant could not run a case at all (the library did not load, or
// run() refused or failed to enqueue): that is not a bug caught, and the test fails on it.
enum class Property { kOracle, kPartlyVisiblePoison };

PropertyOutcome hunt(const std::string& library, Property property, int& first_failure, std::string& not_run) {
  FuzzConfig config = fuzz_config_from_env();
  config.params.seed = 20261129;  // fixed: the count below is comparable run to run
  config.params.maxSuccess = 300;
  config.reproduce.clear();
  const GenBudget b = test::gpu_budget("small");
  first_failure = 0;
  int cases = 0;  // evaluations, shrinking included; the first failure's index is the measure
  not_run.clear();
  auto prop = [&cases, &first_failure, &not_run, b, library, property] {
    const Recipe r = *gen_recipe(b);
    ++cases;
    const Case c = generate_case(r, "planted");
    if (property == Property::kPartlyVisiblePoison) {
      test::PoisonCheck k;
      try {
        k = test::check_partly_visible_poison(c, r.splits, *rc::gen::inRange(0, 1000), library);
      } catch (const std::exception& e) {
        if (not_run.empty()) not_run = std::string("the variant did not run: ") + e.what();
        throw;
      }
      RC_PRE(k.applicable);
      if ((k.clean.status != VATTN_OK || k.poisoned.status != VATTN_OK) && not_run.empty())
        not_run = "run() refused or failed to enqueue " + r.to_line();
      const bool ok = k.clean.ok() && k.poisoned.ok() && k.diff.empty();
      if (!ok && first_failure == 0) first_failure = cases;
      RC_ASSERT(k.clean.ok());
      RC_ASSERT(k.poisoned.ok());
      if (!k.diff.empty()) RC_FAIL(k.label + ": " + k.diff);
      return;
    }
    std::vector<test::KernelVerdict> v;
    try {
      v = test::check_vs_cpu(c, {r.splits}, library);
    } catch (const std::exception& e) {
      if (not_run.empty()) not_run = std::string("the variant did not run: ") + e.what();
      throw;
    }
    if (v[0].run.status != VATTN_OK && not_run.empty())
      not_run = "run() returned status " + std::to_string(static_cast<int>(v[0].run.status)) + " for " + r.to_line();
    const bool ok =
        v[0].run.ok() && v[0].report.pass && (r.splits == 0 || static_cast<int>(v[0].run.splits_used) == r.splits);
    if (!ok && first_failure == 0) first_failure = cases;
    RC_ASSERT(v[0].run.ok());
    RC_ASSERT(v[0].report.pass);
    if (r.splits > 0) RC_ASSERT(static_cast<int>(v[0].run.splits_used) == r.splits);
  };
  return run_property(rc::detail::toProperty(prop), "planted", library, config);
}

}  // namespace

// The variants of split-v1 (libvattn_rev_plant_*.so) by default; VATTN_PLANTED=v2 takes
// split-v2's (libvattn_rev_v2_plant_*.so), the same bugs planted in its sources.
TEST_CASE("planted kernel bugs are each caught by the generated properties", "[gpu][planted][revision-independent]") {
  setenv("VATTN_FINDINGS_DIR", "/tmp/vattn-planted-findings",
         1);  // shrinking fails many times: keep repros out of findings/
  const char* which = std::getenv("VATTN_PLANTED");
  const std::string set = which && *which ? which : "v1";
  if (set != "v1" && set != "v2") FAIL("VATTN_PLANTED=" << set << ": v1 or v2");
  const std::string prefix = set == "v1" ? "libvattn_rev_plant_" : "libvattn_rev_v2_plant_";
  std::printf("planted variants of split-%s\n", set.c_str());
  const std::pair<const char*, Property> variants[] = {{"skip_rescale", Property::kOracle},
                                                       {"drop_last_key", Property::kOracle},
                                                       {"mask_overread", Property::kOracle},
                                                       {"log2_merge", Property::kOracle},
                                                       {"empty_split_nan", Property::kOracle},
                                                       {"ignore_forced_splits", Property::kOracle},
                                                       {"no_nonfinite_guard", Property::kPartlyVisiblePoison}};
  for (const auto& [v, property] : variants) {
    const std::string lib = (test::revisions_dir() / (prefix + std::string(v) + ".so")).string();
    // ctest registers this test only when the variants are built; run by hand without them,
    // it fails rather than pass having measured nothing.
    if (!std::filesystem::exists(lib))
      FAIL("planted variant " << v << " not built (configure with -DVATTN_BUILD_PLANTED=ON): " << lib);
    int cases = 0;
    std::string not_run;
    const PropertyOutcome out = hunt(lib, property, cases, not_run);
    // Caught means the variant ran and the checks saw its bug, not that it failed to run.
    const bool caught = out.kind == PropertyOutcome::Kind::failed && not_run.empty();
    if (!not_run.empty()) std::printf("planted %-22s NOT RUN: %s\n", v, not_run.c_str());
    std::printf("planted %-22s %s after %d generated case(s)%s%s\n", v, caught ? "CAUGHT" : "NOT CAUGHT", cases,
                caught ? "; shrunk to: " : "", caught ? out.recipe_line.c_str() : "");
    INFO(out.report);
    CHECK(caught);
  }
}
