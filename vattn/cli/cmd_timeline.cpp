// SPDX-License-Identifier: Apache-2.0
// vattn timeline: where one call's time goes inside the kernels (a timing-probe build, GPU).
#include <cstdio>
#include <stdexcept>

#include "vattn/case/case.h"
#include "vattn/cli/args.h"
#include "vattn/cli/commands.h"
#if VATTN_HAVE_CUDA
#include "vattn/gpu/cuda_check.h"
#include "vattn/gpu/timeline.h"
#endif

namespace vattn::cli {

int cmd_timeline(int argc, char** argv) {
  Args args("timeline", "--kernel LIB [options]",
            "Where one call's time goes inside the kernels. Runs a timing-probe build of a revision\n"
            "(its kernels stamp %globaltimer and clock64 at fixed points: kernels/vattn_timeline.h;\n"
            "revisions/libvattn_rev_v2_timeline.so, built with -DVATTN_BUILD_PROBES=ON) on one `vattn bench`\n"
            "case as CUDA-graph replays, reads the stamps after each call and prints the milestones of\n"
            "the call (the plan written, the plan done, the last partial stored, the reduce done) and\n"
            "each item's phases (Q in, tile 0 in, the tile loop, the store), then when the reduce blocks\n"
            "began and how long each ran past its wait. The stamps cost the kernel a little: compare\n"
            "speeds with `vattn bench` on the real revision, phases with this. Needs a CUDA device.");
  args.option("kernel", "LIB", "a timing-probe revision library (one that exports vattn_timeline_read_v1)", "", 'k')
      .option("batch", "B", "requests", "1")
      .option("drafts", "T", "drafts per request (<=16: chain, else random tree)", "64")
      .option("prefix", "P", "prefix length of every request", "4096")
      .option("calls", "N", "timed calls, each read out on its own", "5")
      .option("max-splits", "N", "plan limit on splits", "128")
      .example("vattn timeline --kernel revisions/libvattn_rev_v2_timeline.so --batch 1 --drafts 64 --prefix 4096",
               "split-v2's fixed costs at the shape where they weigh most");
#if !VATTN_HAVE_CUDA
  return args.refuse_without_cuda(argc, argv, "nothing was timed");
#else
  TimelineOptions opt;
  try {
    if (!args.parse(argc, argv)) return kExitOk;
    if (!args.has("kernel")) throw UsageError("--kernel LIB is required (a timing-probe build)");
    opt.kernel = args.get("kernel");
    opt.batch = static_cast<int>(args.get_int("batch", 1, 1, 1024));
    opt.drafts = static_cast<int>(args.get_int("drafts", 64, 1, 1025));
    opt.prefix = static_cast<int>(args.get_int("prefix", 4096, 0, 262144));
    opt.calls = static_cast<int>(args.get_int("calls", 5, 1, 1000));
    opt.max_splits = static_cast<int>(args.get_int("max-splits", 128, 1, 256));
  } catch (const UsageError& e) {
    return args.usage_error(e.what());
  }
  // The library is checked before the device: a wrong --kernel is said on any machine.
  TimelineRevision probe;
  try {
    probe = load_timeline_revision(opt.kernel);
  } catch (const InputError& e) {
    std::fprintf(stderr, "vattn timeline: --kernel %s: %s\n", opt.kernel.c_str(), e.reason().c_str());
    return kExitBadInput;
  }
  if (cuda_device_count() == 0) {
    std::fprintf(stderr, "vattn timeline: no CUDA device visible; nothing was timed\n");
    return kExitBadInput;
  }
  TimelineReport rep;
  try {
    rep = run_timeline(probe, opt);
  } catch (const CudaError&) {
    throw;                                 // main reports CUDA failures
  } catch (const std::runtime_error& e) {  // stamps that are not of one call
    std::fprintf(stderr, "vattn timeline: %s\n", e.what());
    return kExitCheckFailed;
  }
  std::printf(
      "%s on %s (%d SMs): B=%d T=%d (%s) P=%d H=%d, %d splits; %d calls, graph replay %.1f us (median, stamps "
      "included)\n",
      rep.revision.c_str(), rep.device.c_str(), rep.sms, opt.batch, opt.drafts, rep.tree.c_str(), opt.prefix, opt.heads,
      rep.splits_used, opt.calls, rep.replay_us);
  std::fputs(timeline_table(rep.summary).c_str(), stdout);
  return kExitOk;
#endif
}

}  // namespace vattn::cli
