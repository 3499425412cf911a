// SPDX-License-Identifier: Apache-2.0
// vattn graph-check: the CUDA-graph safety checks of one kernel revision (vattn/gpu/graph_check.h),
// one line per check, exit 1 when any fails.
#include <cstdio>
#include <string>

#include "kernels/vattn_revisions.h"
#include "vattn/cli/args.h"
#include "vattn/cli/commands.h"
#if VATTN_HAVE_CUDA
#include "vattn/gpu/cuda_check.h"
#include "vattn/gpu/graph_check.h"
#endif

namespace vattn::cli {

namespace {

Args graph_check_args() {
  Args a("graph-check", "[--kernel NAME|LIB.so] [options]",
         "Checks that a kernel revision is safe to run inside a CUDA graph serving every batch within\n"
         "its plan limits: one graph is captured with short sequences, then replayed over new lengths,\n"
         "masks, indices, values and forced split counts written to device memory, and compared\n"
         "bitwise with eager runs. Checks, in order:\n"
         "  capture        run() captures in cudaStreamCaptureModeGlobal on a non-blocking stream\n"
         "  node-audit     the graph holds kernels (and at most the declared memsets), nothing else\n"
         "  replay         N replays with changed device-side metadata == eager runs, bitwise\n"
         "  two-graphs     two graphs, own slots and workspaces, launched together on two streams\n"
         "  memory         free device memory unchanged over many eager runs and replays\n"
         "  non-blocking   run() returns at once while a gate kernel holds its stream\n"
         "  limits-host    host-known counts beyond the limits: run() refuses, writes nothing\n"
         "  limits-device  lengths/indices/splits beyond the limits in a replay: error bit, NaN rows");
  a.option("kernel", "NAME|LIB.so", "revision: a built-in name (" VATTN_REVISION_LIST ") or a revision library",
           VATTN_REVISION_DEFAULT, 'k')
      .option("replays", "N", "replays in the replay check", "40")
      .option("seed", "S", "seed of the generated cases", "1")
      .note(
          "Slot: B=4 requests, n_q<=64, T_b<=37, H=8, splits<=16, prefixes up to 4099 (clamped to the\n"
          "revision's capabilities). Needs a CUDA device. Exit codes: 0 all passed, 1 a check failed,\n"
          "2 bad usage, unknown --kernel or no device.")
      .example("vattn graph-check", "the in-tree revision")
      .example("vattn graph-check --kernel build/revisions/libvattn_rev_unsafe_sync.so",
               "a revision library (this one synchronises inside run(), so checks fail; it is built\n"
               "with -DVATTN_BUILD_PLANTED=ON)");
  return a;
}

}  // namespace

int cmd_graph_check(int argc, char** argv) {
  Args a = graph_check_args();
#if !VATTN_HAVE_CUDA
  return a.refuse_without_cuda(argc, argv, "no check was run");
#else
  GraphCheckOptions opt;
  std::string kernel;
  try {
    if (!a.parse(argc, argv)) return kExitOk;
    kernel = a.get("kernel", VATTN_REVISION_DEFAULT);
    opt.replays = static_cast<int>(a.get_int("replays", opt.replays, 1, 100000));
    opt.seed = static_cast<uint64_t>(a.get_int("seed", 1, 0, 1LL << 62));
  } catch (const UsageError& e) {
    return a.usage_error(e.what());
  }
  Revision rev;
  try {
    rev = load_revision(kernel);
  } catch (const InputError& e) {
    std::fprintf(stderr, "vattn graph-check: --kernel %s: %s\n", kernel.c_str(), e.reason().c_str());
    return kExitBadInput;
  }
  if (cuda_device_count() == 0) {
    std::fprintf(stderr, "vattn graph-check: no CUDA device visible; the checks need one\n");
    return kExitBadInput;
  }
  const SlotShape shape = graph_check_shape(rev, opt);
  std::printf("graph-check: kernel %s (%s); slot %s; %d replays, seed %llu\n", rev.name().c_str(), rev.origin.c_str(),
              shape.describe().c_str(), opt.replays, static_cast<unsigned long long>(opt.seed));
  std::fflush(stdout);
  const std::vector<CheckResult> results = run_graph_checks(rev, opt);
  int passed = 0, failed = 0;
  for (const auto& r : results) {
    std::printf("%s  %-13s %s\n", r.pass ? "PASS" : "FAIL", r.name.c_str(), r.detail.c_str());
    (r.pass ? passed : failed)++;
  }
  std::printf("graph-check: %d passed, %d failed\n", passed, failed);
  return failed == 0 ? kExitOk : kExitCheckFailed;
#endif
}

}  // namespace vattn::cli
