// SPDX-License-Identifier: Apache-2.0
// The CUDA-graph checks (vattn/gpu/graph_check.h): they pass on the revision under test, built in
// and (an in-tree one) as its library, and they catch each deliberately graph-unsafe variant by the
// check that names its fault (variants built with -DVATTN_BUILD_PLANTED=ON; run once, whatever the
// revision under test: [revision-independent]).
#include <algorithm>
#include <filesystem>
#include <sstream>

#include <catch2/catch.hpp>

#include "tests/gpu/gpu_testbed.h"
#include "vattn/gpu/graph_check.h"

using namespace vattn;

namespace {

std::string report(const std::vector<CheckResult>& results) {
  std::ostringstream os;
  for (const auto& r : results) os << (r.pass ? "PASS " : "FAIL ") << r.name << ": " << r.detail << "\n";
  return os.str();
}

const CheckResult* find(const std::vector<CheckResult>& results, const std::string& name) {
  for (const auto& r : results)
    if (r.name == name) return &r;
  return nullptr;
}

void require_all_pass(const Revision& rev) {
  const std::vector<CheckResult> results = run_graph_checks(rev, GraphCheckOptions{});
  INFO("revision " << rev.name() << " (" << rev.origin << ")\n" << report(results));
  REQUIRE(results.size() == 8);
  for (const auto& r : results) {
    INFO(r.name << ": " << r.detail);
    CHECK(r.pass);
  }
}

}  // namespace

TEST_CASE("graph checks pass on the revision under test", "[gpu][graph]") {
  require_all_pass(load_revision(test::revision_under_test()));
}

// The same revision loaded from its library (kernels/CMakeLists.txt: split-v1 is
// libvattn_rev_split_v1.so), the way `--kernel lib.so` loads one: it must name itself as the
// built-in does, and pass the same checks.
TEST_CASE("graph checks pass on the revision under test's library", "[gpu][graph]") {
  const std::string name = test::revision_under_test();
  const std::vector<std::string> in_tree = builtin_revision_names();
  INFO("revision under test: " << name);
  if (std::find(in_tree.begin(), in_tree.end(), name) == in_tree.end())
    FAIL(
        "not an in-tree revision, so it has no library of the build to load (a library given by path is "
        "checked by 'graph checks pass on the revision under test')");
  std::string file = "libvattn_rev_" + name + ".so";
  std::replace(file.begin(), file.end(), '-', '_');
  const std::filesystem::path lib = test::revisions_dir() / file;
  INFO("expected " << lib.string() << " (set VATTN_BINARY_DIR to the build directory)");
  REQUIRE(std::filesystem::exists(lib));
  const Revision rev = load_revision(lib.string());
  REQUIRE(rev.origin == lib.string());
  REQUIRE(rev.name() == name);
  require_all_pass(rev);
}

TEST_CASE("graph checks catch graph-unsafe revisions", "[gpu][graph][planted][revision-independent]") {
  struct Variant {
    const char* name;                    // library vattn_rev_<name>, revision <name> with '-'
    std::vector<std::string> caught_by;  // at least one of these checks must fail
  };
  const Variant variants[] = {
      {"unsafe_alloc", {"capture", "memory"}},
      {"unsafe_sync", {"capture", "non-blocking"}},
      {"unsafe_d2h", {"non-blocking", "replay"}},
      {"unsafe_host_grid", {"replay"}},
  };
  GraphCheckOptions opt;
  opt.replays = 12;  // replay 0 already has every prefix at the slot's largest
  opt.two_graph_rounds = 2;
  for (const Variant& v : variants) {
    const std::filesystem::path lib = test::revisions_dir() / ("libvattn_rev_" + std::string(v.name) + ".so");
    // Registered with ctest only when the variants are built (see CMakeLists.txt).
    if (!std::filesystem::exists(lib))
      FAIL("graph-unsafe variant not built: " << lib.string() << " (configure with -DVATTN_BUILD_PLANTED=ON)");
    const Revision rev = load_revision(lib.string());
    std::string expected_name = v.name;
    for (char& ch : expected_name)
      if (ch == '_') ch = '-';
    REQUIRE(rev.name() == expected_name);
    {  // Control: outside a graph the variant runs and is right, so the failures below are the
       // graph's (a variant that cannot launch here would fail every check for another reason).
      const Case c = test::make_case("B=2 H=8 P=[100,7] T=[5,3] tree=random profile=uniform layout=scattered seed=5");
      const auto eager = test::check_vs_cpu(c, {0}, lib.string());
      INFO("eager control run of " << rev.name() << ": " << eager[0].run.problem(rev.api) << eager[0].report.detail());
      REQUIRE(eager[0].run.ok());
      REQUIRE(eager[0].report.pass);
    }
    const std::vector<CheckResult> results = run_graph_checks(rev, opt);
    INFO("revision " << rev.name() << " (" << lib.string() << ")\n" << report(results));
    REQUIRE(results.size() == 8);
    int failed = 0;
    for (const auto& r : results) failed += r.pass ? 0 : 1;
    CHECK(failed >= 1);
    bool caught = false;
    std::string expected;
    for (const auto& name : v.caught_by) {
      const CheckResult* r = find(results, name);
      REQUIRE(r != nullptr);
      caught = caught || !r->pass;
      expected += (expected.empty() ? "" : " or ") + name;
    }
    INFO("expected a failure of " << expected);
    CHECK(caught);
  }
}
