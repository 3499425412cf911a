// SPDX-License-Identifier: Apache-2.0
// Static sm_120 audit, no GPU needed: every kernel of the in-tree revisions (split-v1 and
// split-v2, and split-v2's timing-probe build), in their sm_120a and sm_90a builds, has no
// spill, no local memory, and static + dynamic shared memory within the 101376 B an sm_120 block
// may opt into.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "kernels/vattn_abi.h"
#include "tests/audit/ptxas_report.h"

extern "C" const vattn_revision* vattn_revision_split_v1(void);
extern "C" const vattn_revision* vattn_revision_split_v2(void);

using vattn::audit::audit_entry;
using vattn::audit::parse_ptxas_report;

namespace {

// The audit of one revision's report: `kernel_ns` names the namespace its kernels live in
// (vattn::kern for split-v1, vattn::kern_v2 for split-v2), as it appears in the mangled names;
// `launched` maps each kernel run() launches to whether it is launched with the revision's
// dynamic shared memory (split_revision.cu; the others take none). Every launched kernel must be in the report for both architectures; a
// kernel not listed fails the audit until it is added; the device functions a kernel calls
// (ptxas reports their stack frames and spills apart) are audited too.
void audit_report(const char* path, const vattn_revision* rev, const std::string& kernel_ns,
                  const std::map<std::string, bool>& launched) {
  std::ifstream in(path);
  REQUIRE(in.good());
  const auto entries = parse_ptxas_report(in);
  vattn_caps caps{};
  REQUIRE(rev->capabilities(&caps) == VATTN_OK);
  std::set<std::string> archs;
  std::set<std::pair<std::string, std::string>> seen;  // (launched kernel, arch)
  for (const auto& k : entries) {
    archs.insert(k.arch);
    long dynamic = k.kernel ? -1 : 0;
    for (const auto& [name, takes_dynamic] : launched)
      if (k.kernel && k.function.find(name) != std::string::npos) {
        dynamic = takes_dynamic ? static_cast<long>(caps.dynamic_smem_bytes) : 0;
        seen.insert({name, k.arch});
      }
    INFO(caps.name << " " << k.arch << " " << k.function);
    CHECK(dynamic >= 0);                                     // a kernel the audit does not know: say how it is launched
    CHECK(k.function.find(kernel_ns) != std::string::npos);  // the report is of this revision
    const std::string problems = audit_entry(k, dynamic < 0 ? 0 : dynamic);
    std::printf("%-9s %-8s %-62s %s %3d  smem %6ld+%ld  stack %ld  spill %ld/%ld  %s\n", caps.name, k.arch.c_str(),
                k.function.c_str(), k.kernel ? "regs" : "(fn)", k.registers, k.static_smem, dynamic, k.stack_frame,
                k.spill_stores, k.spill_loads, problems.empty() ? "OK" : problems.c_str());
    CHECK(problems.empty());
  }
  for (const auto& [name, takes_dynamic] : launched)
    for (const char* arch : {"sm_120a", "sm_90a"}) {
      INFO(caps.name << ": " << name << " for " << arch);
      CHECK(seen.count({name, arch}) == 1);
    }
  CHECK(archs.count("sm_120a") == 1);
  CHECK(archs.count("sm_90a") == 1);
}

}  // namespace

TEST_CASE("ptxas report of split-v1: no spills, no local memory, smem within sm_120's limit", "[audit]") {
  // Three launches: plan, partial (the only one with dynamic shared memory), reduce.
  audit_report(VATTN_PTXAS_REPORT, vattn_revision_split_v1(), "5vattn4kern",
               {{"split_plan_kernel", false}, {"split_partial_kernel", true}, {"split_reduce_kernel", false}});
}

TEST_CASE("ptxas report of split-v2: no spills, no local memory, smem within sm_120's limit", "[audit]") {
  // The same three launches, with split-v2's partial kernel.
  audit_report(VATTN_PTXAS_REPORT_V2, vattn_revision_split_v2(), "5vattn7kern_v2",
               {{"split_plan_kernel", false}, {"split_partial_kernel", true}, {"split_reduce_kernel", false}});
}

TEST_CASE("ptxas report of split-v2's timing-probe build: no spills, so it times the same kernel", "[audit]") {
  // -DVATTN_TIMELINE (kernels/timeline.cuh): the stamps must not cost the 255-register item a
  // spill, or vattn_timeline_probe would measure a slower kernel than split-v2.
  audit_report(VATTN_PTXAS_REPORT_V2_TIMELINE, vattn_revision_split_v2(), "5vattn7kern_v2",
               {{"split_plan_kernel", false}, {"split_partial_kernel", true}, {"split_reduce_kernel", false}});
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

TEST_CASE("a called device function's spills are its own entry, not its kernel's", "[audit]") {
  // ptxas reports a non-inlined device function after its kernel, with no register line.
  std::istringstream report(
      "ptxas info    : Compiling entry function '_Z1kv' for 'sm_90a'\n"
      "ptxas info    : Function properties for _Z1kv\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 255 registers, used 16 barriers, 1136 bytes smem\n"
      "ptxas info    : Compile time = 2029.902 ms\n"
      "ptxas info    : Function properties for _Z1fv\n"
      "    8 bytes stack frame, 4 bytes spill stores, 8 bytes spill loads\n");
  const auto e = parse_ptxas_report(report);
  REQUIRE(e.size() == 2);
  CHECK(e[0].kernel);
  CHECK(e[0].spill_stores == 0);
  CHECK(audit_entry(e[0], 0).empty());
  CHECK_FALSE(e[1].kernel);
  CHECK(e[1].function == "_Z1fv");
  CHECK(e[1].arch == "sm_90a");
  CHECK(e[1].spill_stores == 4);
  const std::string bad = audit_entry(e[1], 0);
  CHECK(bad.find("spills") != std::string::npos);
  CHECK(bad.find("register") == std::string::npos);
}
