// SPDX-License-Identifier: Apache-2.0
// vattn timeline on split-v2's timing-probe build (revisions/libvattn_rev_v2_timeline.so,
// -DVATTN_BUILD_PROBES=ON; registered only then): the stamps form whole calls in order, and the
// probe build computes bitwise what split-v2 computes, so its phases are split-v2's.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <tuple>
#include <vector>

#include <cuda_runtime.h>

#include "tests/gpu/gpu_testbed.h"
#include "vattn/case/case.h"
#include "vattn/gpu/bench_case.h"
#include "vattn/gpu/timeline.h"

namespace {

std::vector<uint16_t> output_of(const vattn::Revision& rev, int batch, int drafts, int prefix) {
  vattn::BenchCase c = vattn::make_bench_case(rev, batch, drafts, prefix, 8, 128, 7, 0);
  const vattn_status st = rev.api->run(&c.args[0], &c.limits, c.workspace.data(), c.workspace.bytes(), nullptr);
  REQUIRE(st == VATTN_OK);
  VATTN_CUDA(cudaDeviceSynchronize());
  std::vector<uint16_t> out(c.out.bytes() / 2);
  c.out.download(out.data(), c.out.bytes());
  uint32_t words[2] = {0, 0};
  c.workspace.download(words, sizeof words);
  CHECK(words[0] == 0);
  CHECK(words[1] > 1);  // the case is split: the reduce kernel runs
  return out;
}

}  // namespace

TEST_CASE("vattn timeline: the timing-probe build stamps each call in order and computes what split-v2 does",
          "[probe][revision-independent]") {
  const std::string lib = (vattn::test::revisions_dir() / "libvattn_rev_v2_timeline.so").string();
  // ctest registers this test only when the probe build exists; run by hand without it, it fails
  // rather than pass having measured nothing.
  if (!std::filesystem::exists(lib))
    FAIL("timing-probe build not found (configure with -DVATTN_BUILD_PROBES=ON): " << lib);
  const vattn::TimelineRevision probe = vattn::load_timeline_revision(lib);
  CHECK_THROWS_AS(vattn::load_timeline_revision("split-v2"), vattn::InputError);  // a shipped build has no read-out

  for (const auto& [batch, drafts, prefix] : {std::tuple{1, 64, 4096}, std::tuple{8, 16, 16384}}) {
    INFO("B=" << batch << " T=" << drafts << " P=" << prefix);
    CHECK(output_of(probe.rev, batch, drafts, prefix) ==
          output_of(vattn::load_revision("split-v2"), batch, drafts, prefix));

    vattn::TimelineOptions opt;
    opt.kernel = lib;
    opt.batch = batch;
    opt.drafts = drafts;
    opt.prefix = prefix;
    opt.calls = 3;
    opt.warmup = 2;
    const vattn::TimelineReport rep = vattn::run_timeline(probe, opt);
    std::printf("%s", vattn::timeline_table(rep.summary).c_str());
    const vattn::TimelineSummary& s = rep.summary;
    CHECK(rep.splits_used > 1);
    CHECK(s.blocks_with_items > 0);
    CHECK(s.clock_ghz > 0.3);
    CHECK(s.clock_ghz < 5);
    // The plan, the partial items and the reduce, one after the other (%globaltimer is one clock
    // for every SM; the reduce waits for every partial block to end).
    CHECK(s.partial_past_wait > 0);
    // The plan kernel stamps its last store; the partial blocks pass their wait after it (one
    // %globaltimer tick, 0.26 us on the H200, of slack for the tick boundaries).
    CHECK(s.plan_written_calls == opt.calls);
    CHECK(s.plan_written <= s.partial_past_wait + 0.3);
    CHECK(s.partial_done > s.partial_past_wait);
    CHECK(s.reduce_past_wait >= s.partial_done);
    CHECK(s.reduce_done > s.reduce_past_wait);
    REQUIRE(s.phases.size() == 5);
    for (const auto& ph : s.phases) {
      INFO(ph.name);
      CHECK(ph.first.samples >= s.blocks_with_items);
      CHECK(ph.first.min > 0);
    }
    CHECK(s.phases[3].first.median > s.phases[1].first.median);  // the tile loop outlasts the Q load here
  }
}
