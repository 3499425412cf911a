// SPDX-License-Identifier: Apache-2.0
// vattn bench: kernel-level timings against a roofline measured in the same run.
#include <algorithm>
#include <cstdio>

#include "kernels/vattn_revisions.h"
#include "vattn/case/case.h"
#include "vattn/cli/args.h"
#include "vattn/cli/commands.h"
#include "vattn/cli/json.h"
#if VATTN_HAVE_CUDA
#include "vattn/cli/report_file.h"
#include "vattn/gpu/bench.h"
#include "vattn/gpu/cuda_check.h"
#include "vattn/gpu/revision.h"
#endif

namespace vattn::cli {

#if VATTN_HAVE_CUDA
namespace {

// The report (schema vattn-bench-report, docs/reports.md). Rates of a row whose time is 0 come
// out as Infinity, written as such.
json bench_report_json(const BenchReport& r) {
  json j = report_head("vattn-bench-report", 2);
  j["device"] = r.device;
  j["sms"] = r.sms;
  j["kernel"] = r.kernels.front();
  j["kernels"] = r.kernels;
  j["gate_us"] = r.gate_us;
  j["copy_gbps"] = json_number(r.copy_gbps);
  j["mma_tflops"] = json_number(r.mma_tflops);
  json cases = json::array();
  for (const BenchRow& x : r.rows) {
    cases.push_back({{"kernel", x.kernel},
                     {"batch", x.batch},
                     {"drafts", x.drafts},
                     {"tree", x.tree},
                     {"prefix", x.prefix},
                     {"splits_used", x.splits_used},
                     {"eager_us", json_number(x.eager_us)},
                     {"graph_us", json_number(x.graph_us)},
                     {"queued_us", json_number(x.queued_us)},
                     {"bytes", json_number(x.bytes)},
                     {"flops", json_number(x.flops)},
                     {"gbps", json_number(x.bytes / (x.graph_us * 1e-6) / 1e9)},
                     {"tflops", json_number(x.flops / (x.graph_us * 1e-6) / 1e12)},
                     {"roofline_us", json_number(x.roofline_us)},
                     {"pct_roofline_eager", json_number(100 * x.roofline_us / x.eager_us)},
                     {"pct_roofline_graph", json_number(100 * x.roofline_us / x.graph_us)},
                     {"pct_roofline_queued", json_number(100 * x.roofline_us / x.queued_us)}});
  }
  j["cases"] = cases;
  return j;
}

}  // namespace
#endif

int cmd_bench(int argc, char** argv) {
  Args args("bench", "[options]",
            "Times kernel revisions on K2.6 verify shapes (H=8, d_qk 576, d_v 512, scattered KV slots).\n"
            "Median of CUDA-event timings after warm-up in three modes: eager calls, CUDA-graph replay,\n"
            "and the replay queued behind a gate kernel (no host launch latency: its cost inside a\n"
            "larger graph). GB/s counts unique bytes (KV + q + out); TFLOP/s = B*T*H*(P+T)*2*(d_qk+d_v);\n"
            "roofline = max(bytes / copy bandwidth, flops / mma.sync peak), both ceilings measured at\n"
            "the start of the run. Several revisions (--kernel A,B) are timed in turn on the same\n"
            "inputs of each case, and the table adds each one's speed against the first. Needs a CUDA device.");
  args.option("kernel", "LIST",
              "kernel revisions, comma-separated: built-in names (" VATTN_REVISION_LIST ") or revision libraries",
              VATTN_REVISION_DEFAULT, 'k')
      .option("prefix", "LIST", "prefix lengths P", "4096,16384,65536,91000,131072")
      .option("batch", "LIST", "batch sizes B", "1,8")
      .option("drafts", "LIST", "drafts per request T (<=16: chain, else random tree)", "16,64")
      .option("reps", "N", "timed launches per mode", "30")
      .option("max-splits", "N", "plan limit on splits", "128")
      .option("json", "FILE", "also write the results as JSON")
      .example("vattn bench --prefix 16384 --batch 1 --drafts 16", "one case")
      .example("vattn bench --kernel " VATTN_REVISION_BASELINE "," VATTN_REVISION_DEFAULT " --json ab.json",
               "both in-tree revisions, side by side");
#if !VATTN_HAVE_CUDA
  return args.refuse_without_cuda(argc, argv, "nothing was timed");
#else
  BenchOptions opt;
  try {
    if (!args.parse(argc, argv)) return kExitOk;
    opt.kernels.clear();
    const std::string list = args.get("kernel", VATTN_REVISION_DEFAULT);
    size_t at = 0;
    while (at <= list.size()) {
      const size_t comma = std::min(list.find(',', at), list.size());
      const std::string name = list.substr(at, comma - at);
      if (name.empty()) throw UsageError("--kernel: empty revision name in '" + list + "'");
      if (std::find(opt.kernels.begin(), opt.kernels.end(), name) != opt.kernels.end())
        throw UsageError("--kernel: '" + name + "' named twice");
      opt.kernels.push_back(name);
      at = comma + 1;
    }
    if (args.has("prefix")) opt.prefixes = parse_int_list("prefix", args.get("prefix"), 0, 262144);
    if (args.has("batch")) opt.batches = parse_int_list("batch", args.get("batch"), 1, 1024);
    if (args.has("drafts")) opt.drafts = parse_int_list("drafts", args.get("drafts"), 1, 1025);
    opt.reps = static_cast<int>(args.get_int("reps", 30, 1, 100000));
    opt.max_splits = static_cast<int>(args.get_int("max-splits", 128, 1, 256));
  } catch (const UsageError& e) {
    return args.usage_error(e.what());
  }
  // The revision is checked before the device, the output path before the first timing.
  for (const std::string& k : opt.kernels) {
    try {
      (void)load_revision(k);
    } catch (const InputError& e) {
      std::fprintf(stderr, "vattn bench: --kernel %s: %s\n", k.c_str(), e.reason().c_str());
      return kExitBadInput;
    }
  }
  if (cuda_device_count() == 0) {
    std::fprintf(stderr, "vattn bench: no CUDA device visible; nothing was timed\n");
    return kExitBadInput;
  }
  const std::string json_path = args.has("json") ? args.get("json") : "";
  if (args.has("json")) {
    const std::string why = report_path_problem(json_path);
    if (!why.empty()) return args.usage_error("--json " + json_path + ": " + why);
  }
  const BenchReport rep = run_bench(opt, [](const BenchRow& r) {
    std::fprintf(stderr, "bench: %s B=%d T=%d P=%d done (graph %.1f us)\n", r.kernel.c_str(), r.batch, r.drafts,
                 r.prefix, r.graph_us);
  });
  std::fputs(bench_table(rep).c_str(), stdout);
  if (!json_path.empty()) {
    const std::string why = write_report(json_path, report_text(bench_report_json(rep)));
    if (!why.empty()) {
      std::fprintf(stderr, "vattn bench: --json %s: %s\n", json_path.c_str(), why.c_str());
      return kExitBadInput;
    }
    std::printf("wrote %s\n", json_path.c_str());
  }
  return kExitOk;
#endif
}

}  // namespace vattn::cli
