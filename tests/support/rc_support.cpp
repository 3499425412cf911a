// SPDX-License-Identifier: Apache-2.0
#include "tests/support/rc_support.h"

#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <iostream>
#include <random>
#include <sstream>

#include "vattn/case/case.h"
#include "vattn/fuzz/gen/gen_recipe.h"

namespace vattn {

namespace {

constexpr int kCasesSmall = 50;

// One seed per process, so every property of a run can be re-run with the one seed printed.
uint64_t process_seed() {
  static const uint64_t seed = [] {
    std::random_device dev;
    return (static_cast<uint64_t>(dev()) << 32) ^ dev();
  }();
  return seed;
}

class QuietListener : public rc::detail::TestListener {
 public:
  void onTestCaseFinished(const rc::detail::CaseDescription&) override {}
  void onShrinkTried(const rc::detail::CaseDescription&, bool) override {}
  void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}
};

// Keeps what RapidCheck's result leaves out: why the cases failed. RapidCheck evaluates the
// shrunk counterexample once more to describe it, so a failure that does not repeat (device
// memory taken by another process, a timeout under load, a race) comes back described as a
// success ("no exceptions thrown") and its reason is lost, as happened on a shared GPU.
class RecordingListener : public rc::detail::TestListener {
 public:
  void onTestCaseFinished(const rc::detail::CaseDescription& d) override {
    if (d.result.type == rc::detail::CaseResult::Type::Failure && first_failure.empty())
      first_failure = d.result.description;
  }
  void onShrinkTried(const rc::detail::CaseDescription& d, bool accepted) override {
    if (accepted) last_failure = d.result.description;
  }
  void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}
  // What the failing case said, and what the last accepted shrink (the counterexample) said.
  std::string first_failure, last_failure;
};

// Times the shrunk counterexample is run again to tell a deterministic failure from one that
// comes and goes.
constexpr int kRechecks = 2;

std::string this_executable() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "./vattn_tests_cpu";
  return std::string(buf, static_cast<size_t>(n));
}

std::string failure_report(const rc::detail::FailureResult& f, const std::string& test_name,
                           const std::string& property_name, const FuzzConfig& config, PropertyOutcome& out) {
  std::ostringstream os;
  const auto& p = config.params;
  os << "property '" << property_name << "' falsified after " << f.numSuccess << " successful case(s)";
  if (!config.reproduce.empty()) os << " (reproduced from RC_PARAMS)";
  const std::string& failed_with = out.failed_with.empty() ? f.description : out.failed_with;
  os << "\n  budget: " << config.budget << "\n  " << failed_with << "\n";
  if (out.recheck_failures < out.rechecks) {
    os << "  NOT DETERMINISTIC: the shrunk case passed in " << out.rechecks - out.recheck_failures << " of "
       << out.rechecks << " runs of it afterwards (and when RapidCheck described it: " << f.description
       << "). Look for what changes between runs: other processes on the device (memory, time), timing, a race.\n";
  } else {
    os << "  the shrunk case failed again in " << out.recheck_failures << " of " << out.rechecks << " runs\n";
  }
  os << "  counterexample (shrunk):\n";
  for (const auto& [type, value] : f.counterExample) {
    os << "    " << type << ": " << value << "\n";
    if (out.recipe_line.empty() && type.find("Recipe") != std::string::npos) out.recipe_line = value;
  }
  if (!out.recipe_line.empty()) os << "  recipe: " << out.recipe_line << "\n";
  const std::string exe = this_executable();
  os << "  re-run this test with the same seed (same cases, same shrinking):\n    RC_PARAMS=\"seed=" << p.seed
     << " max_success=" << p.maxSuccess << " max_size=" << p.maxSize << "\" " << config.env_prefix << exe << " \""
     << test_name << "\"\n";
  const std::string repro = reproduce_param(property_id(test_name, property_name), f.reproduce);
  os << "  re-run only the shrunk case:\n    RC_PARAMS=\"" << repro << "\" " << config.env_prefix << exe << " \""
     << test_name << "\"\n";
  os << "  reproduce string: " << repro << "\n";
  if (!out.recipe_line.empty()) os << "  the case alone: vattn replay --recipe \"" << out.recipe_line << "\"\n";
  return os.str();
}

}  // namespace

int fuzz_cases_from_text(const std::string& text) {
  if (text == "small") return kCasesSmall;
  if (text == "medium") return 200;
  if (text == "large") return 1000;
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < 1 || v > 100000000) {
    throw InputError("", "", "VATTN_FUZZ_CASES",
                     "must be small, medium, large or a positive number, got '" + text + "'");
  }
  return static_cast<int>(v);
}

FuzzConfig fuzz_config_from_lookup(const std::function<const char*(const char*)>& lookup) {
  rc::detail::Configuration defaults;
  defaults.testParams.seed = process_seed();
  defaults.testParams.maxSuccess = kCasesSmall;
  if (const char* cases = lookup("VATTN_FUZZ_CASES"); cases != nullptr && *cases != '\0') {
    defaults.testParams.maxSuccess = fuzz_cases_from_text(cases);
  }
  rc::detail::Configuration parsed = defaults;
  if (const char* params = lookup("RC_PARAMS"); params != nullptr) {
    try {
      parsed = rc::detail::configFromString(params, defaults);
    } catch (const std::exception& e) {
      throw InputError("", "", "RC_PARAMS", e.what());
    }
  }
  FuzzConfig c;
  c.params = parsed.testParams;
  c.reproduce = parsed.reproduce;
  for (const auto& var : GenBudget::env_vars()) {
    if (const char* v = lookup(var.c_str()); v != nullptr && *v != '\0') c.env_prefix += var + "=" + v + " ";
  }
  c.budget = GenBudget::from_lookup(lookup).describe();
  return c;
}

FuzzConfig fuzz_config_from_env() {
  FuzzConfig c = fuzz_config_from_lookup([](const char* var) -> const char* { return std::getenv(var); });
  // Once per process, so a log from a passing run still says how to repeat it.
  static const bool printed = [&c] {
    std::cerr << "vattn fuzz: RC_PARAMS=\"seed=" << c.params.seed << " max_success=" << c.params.maxSuccess
              << " max_size=" << c.params.maxSize << "\" budget " << c.budget << "\n";
    return true;
  }();
  (void)printed;
  return c;
}

std::string property_id(const std::string& test_name, const std::string& property_name) {
  return test_name + "/" + property_name;
}

std::string reproduce_param(const std::string& id, const rc::detail::Reproduce& r) {
  rc::detail::Configuration c;
  c.reproduce[id] = r;
  // configToMinimalString always spells the seed too; keep only the reproduce entry.
  const std::string all = rc::detail::configToMinimalString(c);
  std::istringstream in(all);
  std::string word;
  while (in >> word) {
    if (word.rfind("reproduce=", 0) == 0) return word;
  }
  throw std::logic_error("RapidCheck did not serialise the reproduce entry: '" + all + "'");
}

PropertyOutcome run_property(const rc::detail::Property& property, const std::string& test_name,
                             const std::string& property_name, const FuzzConfig& config) {
  rc::detail::TestMetadata md;
  md.id = property_id(test_name, property_name);
  md.description = property_name;
  RecordingListener listener;
  const rc::detail::TestResult result =
      rc::detail::checkProperty(property, md, config.params, listener, config.reproduce);

  PropertyOutcome out;
  std::ostringstream os;
  rc::detail::SuccessResult success;
  rc::detail::FailureResult failure;
  rc::detail::GaveUpResult gave_up;
  rc::detail::Error error;
  if (result.match(success)) {
    out.num_success = success.numSuccess;
    if (!config.reproduce.empty() && config.reproduce.count(md.id) == 0) {
      out.kind = PropertyOutcome::Kind::not_selected;
      os << "property '" << property_name << "' not run: RC_PARAMS reproduce= names other properties";
    } else {
      out.kind = PropertyOutcome::Kind::passed;
      os << "property '" << property_name << "': " << success.numSuccess << " case(s) passed (seed "
         << config.params.seed << ", budget " << config.budget << ")";
    }
  } else if (result.match(failure)) {
    out.kind = PropertyOutcome::Kind::failed;
    out.num_success = failure.numSuccess;
    out.counterexample = failure.counterExample;
    out.failed_with = !listener.last_failure.empty() ? listener.last_failure : listener.first_failure;
    // Run the shrunk case again (RC_PARAMS reproduce= does the same): does it fail every time?
    const decltype(config.reproduce) again{{md.id, failure.reproduce}};
    for (int i = 0; i < kRechecks; ++i) {
      QuietListener quiet;
      rc::detail::FailureResult f2;
      ++out.rechecks;
      if (rc::detail::checkProperty(property, md, config.params, quiet, again).match(f2)) ++out.recheck_failures;
    }
    os << failure_report(failure, test_name, property_name, config, out);
  } else if (result.match(gave_up)) {
    out.kind = PropertyOutcome::Kind::gave_up;
    out.num_success = gave_up.numSuccess;
    os << "property '" << property_name << "' gave up after " << gave_up.numSuccess
       << " successful case(s), too many discarded: " << gave_up.description;
  } else if (result.match(error)) {
    out.kind = PropertyOutcome::Kind::error;
    os << "property '" << property_name << "' could not run: " << error.description;
  }
  out.report = os.str();
  return out;
}

}  // namespace vattn
