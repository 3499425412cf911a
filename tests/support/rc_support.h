// SPDX-License-Identifier: Apache-2.0
// RapidCheck <-> Catch2 glue that reproduces. rapidcheck/catch.h's rc::prop ignores
// RC_PARAMS="reproduce=..." (it runs properties with an empty id), so a failure seen in CI
// could not be replayed. vattn::rc_prop names each property "<test name>/<property>",
// reads RC_PARAMS (seed, max_success, max_size, noshrink, reproduce) and VATTN_FUZZ_CASES
// itself, and on failure reports why the cases failed, the shrunk counterexample, its
// recipe line, whether it fails again when re-run (a failure that does not repeat is
// called out), and the commands that re-run it.
//
// Inside a property use RC_ASSERT / RC_PRE, never Catch's REQUIRE: RapidCheck must see the
// failure to shrink it.
#pragma once

#include <functional>
#include <iostream>
#include <string>
#include <unordered_map>

#include <rapidcheck.h>
#include <catch2/catch.hpp>

namespace vattn {

struct FuzzConfig {
  rc::detail::TestParams params;
  std::unordered_map<std::string, rc::detail::Reproduce> reproduce;  // empty unless RC_PARAMS has reproduce=
  std::string env_prefix;  // "VATTN_FUZZ_BUDGET=large " etc.: generation settings a re-run needs
  std::string budget;      // GenBudget::describe() of the budget those settings give
};

// VATTN_FUZZ_CASES: small (50), medium (200), large (1000) or a positive number.
// Throws InputError (field VATTN_FUZZ_CASES) on anything else.
int fuzz_cases_from_text(const std::string& text);

// From RC_PARAMS and VATTN_FUZZ_CASES through `lookup` (nullptr = unset). max_success comes
// from RC_PARAMS when it names it, else from VATTN_FUZZ_CASES, else small. Without a seed
// in RC_PARAMS one random seed is drawn per process (the same for every property).
// Throws InputError naming the variable on malformed input.
FuzzConfig fuzz_config_from_lookup(const std::function<const char*(const char*)>& lookup);
FuzzConfig fuzz_config_from_env();

// The id a property is stored under in a reproduce string.
std::string property_id(const std::string& test_name, const std::string& property_name);

// "reproduce=..." for one failure of one property.
std::string reproduce_param(const std::string& id, const rc::detail::Reproduce& r);

struct PropertyOutcome {
  enum class Kind { passed, failed, gave_up, error, not_selected } kind = Kind::passed;
  int num_success = 0;
  rc::detail::Example counterexample;  // (type, value) pairs of the shrunk failure
  std::string recipe_line;             // the counterexample's Recipe, when it has one
  std::string report;                  // multi-line text for the test log
  // Failed: what the failing cases said, and how often the shrunk case failed when run again
  // (recheck_failures < rechecks: the failure does not repeat; the report says so).
  std::string failed_with;
  int rechecks = 0, recheck_failures = 0;
};

// Runs a property outside any test framework: used by rc_prop and by tests of the glue.
PropertyOutcome run_property(const rc::detail::Property& property, const std::string& test_name,
                             const std::string& property_name, const FuzzConfig& config);

// Checks `testable` (a callable taking generated arguments, as for rc::check) inside the
// current Catch2 TEST_CASE; on failure FAILs the test with the report.
template <typename Testable>
void rc_prop(const std::string& name, Testable&& testable) {
  const std::string test = Catch::getResultCapture().getCurrentTestName();
  FuzzConfig config;
  try {
    config = fuzz_config_from_env();
  } catch (const std::exception& e) {
    FAIL(e.what());
  }
  const PropertyOutcome out =
      run_property(rc::detail::toProperty(std::forward<Testable>(testable)), test, name, config);
  if (out.kind == PropertyOutcome::Kind::passed) {
    SUCCEED(out.report);
  } else if (out.kind == PropertyOutcome::Kind::not_selected) {
    WARN(out.report);
  } else {
    // Catch2 wraps long lines at 80 columns (hyphenating inside the reproduce string), so
    // the report also goes out whole, on stderr, where it can be copied.
    std::cerr << "\n[" << test << "]\n" << out.report << std::flush;
    FAIL(out.report);
  }
}

}  // namespace vattn
