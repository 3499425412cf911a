// vattn bench: kernel-level timings against a roofline measured in the same run.
#include <cstdio>
#include <fstream>

#include "args.h"
#include "bench.h"
#include "commands.h"
#include "cuda_check.h"

namespace vattn::cli {

int cmd_bench(int argc, char** argv) {
  Args args("bench", "vattn bench [options]",
            "Times a kernel revision on K2.6 verify shapes (H=8, d_qk 576, d_v 512, scattered KV slots): median of "
            "CUDA-event timings after warm-up, eager and CUDA-graph replay; GB/s counts unique bytes (KV + q + out), "
            "TFLOP/s = B*T*H*(P+T)*2*(d_qk+d_v); roofline = max(bytes / copy bandwidth, flops / mma.sync peak), both "
            "ceilings measured at the start of the run.");
  args.option("kernel", "NAME|LIB.so", "kernel revision", "split-v1")
      .option("prefix", "LIST", "prefix lengths P", "4096,16384,65536,91000,131072")
      .option("batch", "LIST", "batch sizes B", "1,8")
      .option("drafts", "LIST", "drafts per request T (<=16: chain, else random tree)", "16,64")
      .option("reps", "N", "timed launches per mode", "30")
      .option("max-splits", "N", "plan limit on splits", "128")
      .option("json", "FILE", "also write the results as JSON")
      .example("vattn bench --prefix 16384 --batch 1 --drafts 16", "one case");
  if (!args.parse(argc, argv)) return kExitOk;
  BenchOptions opt;
  opt.kernel = args.get("kernel", "split-v1");
  if (args.has("prefix")) opt.prefixes = parse_int_list("--prefix", args.get("prefix"), 0, 262144);
  if (args.has("batch")) opt.batches = parse_int_list("--batch", args.get("batch"), 1, 1024);
  if (args.has("drafts")) opt.drafts = parse_int_list("--drafts", args.get("drafts"), 1, 1025);
  opt.reps = static_cast<int>(args.get_int("reps", 30, 1, 100000));
  opt.max_splits = static_cast<int>(args.get_int("max-splits", 128, 1, 256));
  if (cuda_device_count() == 0) {
    std::fprintf(stderr, "vattn bench: no CUDA device visible; nothing was timed\n");
    return kExitBadInput;
  }
  const BenchReport rep = run_bench(opt, [](const BenchRow& r) {
    std::fprintf(stderr, "bench: B=%d T=%d P=%d done (graph %.1f us)\n", r.batch, r.drafts, r.prefix, r.graph_us);
  });
  std::fputs(bench_table(rep).c_str(), stdout);
  if (args.has("json")) {
    std::ofstream(args.get("json")) << bench_json(rep);
    std::printf("wrote %s\n", args.get("json").c_str());
  }
  return kExitOk;
}

}  // namespace vattn::cli
