// SPDX-License-Identifier: Apache-2.0
// Static sm_120 audit, no GPU needed: every kernel of the in-tree revisions (split-v1 and
// split-v2), in their sm_120a and sm_90a builds, has no spill, no local memory, and static +
// dynamic shared memory within the 101376 B an sm_120 block may opt into.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "ptxas_report.h"
#include "vattn_abi.h"

extern "C" const vattn_revision* vattn_revision_split_v1(void);
extern "C" const vattn_revision* vattn_revision_split_v2(void);

using vattn::audit::audit_entry;
using vattn::audit::parse_ptxas_report;

namespace {

// The audit of one revision's report: `kernel_ns` names the namespace its kernels live in
// (vattn::kern for split-v1, vattn::kern_v2 for split-v2), as it appears in the mangled names.
void audit_report(const char* path, const vattn_revision* rev, const std::string& kernel_ns) {
  std::ifstream in(path);
  REQUIRE(in.good());
  const auto entries = parse_ptxas_report(in);
  vattn_caps caps{};
  REQUIRE(rev->capabilities(&caps) == VATTN_OK);
  // The dynamic shared memory each kernel is launched with (split_revision.cu): only the
  // partial kernel takes any. A kernel not listed here fails the audit until it is added.
  const std::map<std::string, long> launched_dynamic = {
      {"split_plan_kernel", 0},
      {"split_partial_kernel", static_cast<long>(caps.dynamic_smem_bytes)},
      {"split_reduce_kernel", 0}};
  std::set<std::string> archs;
  for (const auto& k : entries) {
    archs.insert(k.arch);
    long dynamic = -1;
    for (const auto& [name, bytes] : launched_dynamic)
      if (k.function.find(name) != std::string::npos) dynamic = bytes;
    INFO(caps.name << " " << k.arch << " " << k.function);
    CHECK(dynamic >= 0);  // a kernel the audit does not know: say how it is launched
    CHECK(k.function.find(kernel_ns) != std::string::npos);  // the report is of this revision
    const std::string problems = audit_entry(k, dynamic < 0 ? 0 : dynamic);
    std::printf("%-9s %-8s %-62s regs %3d  smem %6ld+%ld  stack %ld  spill %ld/%ld  %s\n", caps.name, k.arch.c_str(),
                k.function.c_str(), k.registers, k.static_smem, dynamic, k.stack_frame, k.spill_stores,
                k.spill_loads, problems.empty() ? "OK" : problems.c_str());
    CHECK(problems.empty());
  }
  CHECK(entries.size() >= 6);  // plan, partial, reduce for each architecture
  CHECK(archs.count("sm_120a") == 1);
  CHECK(archs.count("sm_90a") == 1);
}

}  // namespace

TEST_CASE("ptxas report of split-v1: no spills, no local memory, smem within sm_120's limit", "[audit]") {
  audit_report(VATTN_PTXAS_REPORT, vattn_revision_split_v1(), "5vattn4kern");
}

TEST_CASE("ptxas report of split-v2: no spills, no local memory, smem within sm_120's limit", "[audit]") {
  audit_report(VATTN_PTXAS_REPORT_V2, vattn_revision_split_v2(), "5vattn7kern_v2");
}

TEST_CASE("the audit fails on a spill, on local memory and on too much shared memory", "[audit]") {
  std::istringstream report(
      "ptxas info    : Compiling entry function '_Z3bad' for 'sm_120a'\n"
      "    16 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads\n"
      "ptxas info    : Used 255 registers, used 1 barriers, 2048 bytes smem\n"
      "ptxas info    : Compiling entry function '_Z4good' for 'sm_120a'\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 40 registers, used 1 barriers\n");
  const auto e = parse_ptxas_report(report);
  REQUIRE(e.size() == 2);
  const std::string bad = audit_entry(e[0], 100000);
  CHECK(bad.find("spills") != std::string::npos);
  CHECK(bad.find("stack frame") != std::string::npos);
  CHECK(bad.find("shared memory") != std::string::npos);
  CHECK(audit_entry(e[1], 100000).empty());
  CHECK(!audit_entry(e[1], 101377).empty());
}
