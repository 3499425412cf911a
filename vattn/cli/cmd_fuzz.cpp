// SPDX-License-Identifier: Apache-2.0
// vattn fuzz: the overnight campaign (vattn/fuzz/campaign/supervisor.h), and `vattn fuzz-worker`, the
// worker process it starts (not for people: the supervisor speaks to it over pipes).
#include <chrono>
#include <cstdio>
#include <random>

#include <unistd.h>

#include "kernels/vattn_revisions.h"
#include "vattn/cli/args.h"
#include "vattn/cli/commands.h"
#include "vattn/fuzz/gen/case_stream.h"
#if VATTN_HAVE_CUDA
#include "vattn/fuzz/worker/gpu_target.h"
#endif
#include "vattn/fuzz/campaign/run_options.h"
#include "vattn/fuzz/campaign/supervisor.h"
#include "vattn/fuzz/worker/worker.h"

namespace vattn::cli {

namespace {

// The stream's limits, widened so one given recipe fits them too (`--recipe`, shrink candidates).
GenBudget widen(GenBudget b, const Recipe& r) {
  b.max_batch = std::max<int>(b.max_batch, static_cast<int>(r.prefix.size()));
  b.max_heads = std::max(b.max_heads, r.heads);
  int64_t sum_t = 0;
  for (size_t i = 0; i < r.drafts.size(); ++i) {
    b.max_drafts = std::max(b.max_drafts, r.drafts[i]);
    sum_t += r.drafts[i];
  }
  b.max_total_drafts = std::max(b.max_total_drafts, sum_t);
  b.max_splits = std::max(b.max_splits, r.splits);
  return b;
}

// --shard I/N: two whole numbers, 0 <= I < N <= 2^20.
void parse_shard(const std::string& text, fuzz::CampaignOptions& o) {
  const size_t slash = text.find('/');
  auto whole = [](const std::string& s) {
    return !s.empty() && s.size() <= 7 && s.find_first_not_of("0123456789") == std::string::npos;
  };
  const std::string i = slash == std::string::npos ? "" : text.substr(0, slash);
  const std::string n = slash == std::string::npos ? "" : text.substr(slash + 1);
  if (!whole(i) || !whole(n)) throw UsageError("--shard must be I/N with whole numbers, e.g. 0/4 (got '" + text + "')");
  o.shard_index = std::stoll(i);
  o.shard_count = std::stoll(n);
  if (o.shard_count < 1 || o.shard_count > (1 << 20) || o.shard_index >= o.shard_count)
    throw UsageError("--shard I/N needs 0 <= I < N <= 1048576 (got '" + text + "')");
  o.shard_given = true;
}

}  // namespace

int cmd_fuzz(int argc, char** argv) {
  Args args("fuzz", "--kernel NAME|LIB.so|host:NAME [options]",
            "An overnight fuzz campaign against one kernel revision. A supervisor that never touches CUDA\n"
            "hands generated cases (campaign seed + case index -> one recipe) to one worker process per GPU;\n"
            "a worker that crashes, hangs or is killed is replaced and the case it was running becomes a\n"
            "finding. Findings are de-duplicated by signature (class, check and, for a wrong answer, where\n"
            "its errors sit: heads, rows, column blocks), confirmed in a fresh worker and shrunk beside the\n"
            "stream (a second worker on the GPU, within --investigation-share of the time), and written to\n"
            "DIR/findings/NNN-<class>/ (finding.json, repro.h5, shrunk.h5, the command that re-runs it); a\n"
            "check gets three findings at most, further buckets are counted. DIR/journal.jsonl records every\n"
            "verdict as it comes: --resume DIR continues the same stream after a stop or a kill -9. Host\n"
            "targets (no GPU): host:bf16-reference, and\n"
            "host:faulty[:RULES] (crashes, hangs or answers wrong on chosen cases; for tests).\n"
            "On a terminal a progress line and one line per finding; otherwise only the closing summary.\n"
            "Docs: vattn/fuzz/README.md.");
  args.option("kernel", "NAME|LIB.so|host:NAME", "what to fuzz (built in: " VATTN_REVISION_LIST ")", "", 'k')
      .option("hours", "H", "stop after H hours of this run", "8 (unless --cases)")
      .option("cases", "N", "the campaign's size: run case indices 0..N-1")
      .option("out", "DIR", "campaign directory (created; must not hold a campaign)", "fuzz-<UTC time>")
      .option("resume", "DIR",
              "continue the campaign in DIR from any working directory (same kernel, seed, budget; totals carried\n"
              "over; the run options its last run used unless given again; a revision library only if its SHA-256\n"
              "is the one recorded)")
      .flag("allow-changed-kernel",
            "with --resume: load the revision library the campaign names even though its bytes differ from the\n"
            "ones it recorded (or it recorded none): its later cases then test that library")
      .option("seed", "S", "campaign seed", "random")
      .option("shard", "I/N", "run only the indices i with i % N == I (N hosts, one stream: give each the same --seed)")
      .option("ledger", "FILE", "known, tolerated findings (vattn/fuzz/ledger.json): counted, not raised again")
      .option("budget", "small|medium|large", "case mix (vattn/fuzz/README.md)", "large")
      .option("mix-from", "DIR",
              "draw half of the cases shaped like the case files (*.h5) in DIR, e.g. captured traffic: their\n"
              "B, H, P_b, T_b and chain or tree, fitted into the budget (the shapes are kept in DIR/mix.json)")
      .option("plan-variants", "on|off",
              "draw the plans other GPUs would make (sms=, sm_blocks=; needs a revision with the test plan "
              "hook, kernels/vattn_abi.h: a campaign stops at one without it)",
              "on for GPU revisions, off for host:*")
      .option("gpus", "all|0,1,..", "GPU workers, one per GPU", "all")
      .option("workers", "N", "worker processes for a host:* target", "1")
      .option("threads", "N", "pool threads per worker (generation, CPU oracles)", "cores / workers - 1")
      .option("window", "N", "cases in flight per worker", "2 x threads + 2")
      .option("case-timeout", "SECONDS", "deadline floor per case (the deadline grows with the case's work)", "30")
      .option("heartbeat-timeout", "SECONDS", "a worker silent this long is taken as hung", "20")
      .option("max-shrink-runs", "N", "runs spent shrinking one finding", "400")
      .option("max-shrink-seconds", "SECONDS", "time the investigating worker spends busy on one finding", "900")
      .option("investigation-share", "F",
              "share of the time a finding's investigation (a second worker per GPU, beside the stream) may be "
              "busy while the stream has cases, in (0, 1]",
              "0.33")
      .option("stop-after-findings", "N",
              "stop once N new findings are confirmed and shrunk (e.g. 1: is it broken at all?)")
      .flag("no-report", "do not write DIR/report.html at the end (vattn report DIR makes it later)")
      .option("recipe", "LINE", "run only this case, in a fresh worker, and print its verdict (re-runs a finding)")
      .option("repro", "FILE", "with --recipe: write the repro here when it fails")
      .example("vattn fuzz --kernel " VATTN_REVISION_DEFAULT " --hours 8 --out night1", "a night on every GPU")
      .example("vattn fuzz --resume night1", "continue after a stop or a crash of the machine")
      .example("vattn fuzz --kernel build/revisions/librev.so --cases 100000", "a fixed-size campaign")
      .example("vattn fuzz --kernel host:faulty --budget small --cases 200", "the supervisor without a GPU")
      .example("vattn fuzz --kernel " VATTN_REVISION_DEFAULT " --mix-from captured_tensors --hours 8 --out night2",
               "half the cases shaped like captured traffic")
      .example("vattn fuzz --kernel " VATTN_REVISION_DEFAULT " --recipe \"B=1 H=1 P=[0] T=[17]\"", "re-run one case")
      .example("vattn fuzz --kernel " VATTN_REVISION_DEFAULT " --seed 7 --shard 2/8 --hours 8 --out night1/task-2",
               "host 2 of 8 (scripts/slurm/); merge with vattn fuzz-merge")
      .note(
          "exit codes: 0 nothing found, 1 findings (the summary lists them), 2 usage, nothing could run\n"
          "(the kernel does not load, no CUDA device for a GPU revision, workers cannot start), or the campaign\n"
          "could not keep its record (evidence or journal not written: a full disk); then it stops at once,\n"
          "says why, and a failed case stays a failure");
  fuzz::CampaignOptions o;
  std::string recipe, repro;
  try {
    if (!args.parse(argc, argv)) return kExitOk;
    if (!args.positional().empty()) throw UsageError("unexpected argument '" + args.positional().front() + "'");
    o.kernel = args.get("kernel");
    o.resume_dir = args.get("resume");
    if (o.kernel.empty() && o.resume_dir.empty()) throw UsageError("--kernel is required (or --resume DIR)");
    if (!o.resume_dir.empty() &&
        (args.has("seed") || args.has("budget") || args.has("out") || args.has("shard") || args.has("plan-variants")))
      throw UsageError(
          "--resume keeps the campaign's seed, budget, shard, plan variants and directory; leave --seed, --budget, "
          "--shard, --plan-variants and --out out");
    if (!o.resume_dir.empty() && args.has("mix-from"))
      throw UsageError("--resume keeps the campaign's mix (its mix.json); leave --mix-from out");
    o.allow_changed_kernel = args.has("allow-changed-kernel");
    if (o.allow_changed_kernel && o.resume_dir.empty())
      throw UsageError("--allow-changed-kernel goes with --resume (a new campaign records the library it loads)");
    // Run options given here; --resume takes the others from the journal (campaign/run_options.h).
    for (const char* name : {"cases", "gpus", "workers", "threads", "window", "case-timeout", "heartbeat-timeout",
                             "max-shrink-runs", "max-shrink-seconds", "investigation-share", "stop-after-findings"})
      if (args.has(name)) o.given.insert(name);
    o.mix_from = args.get("mix-from");
    if (args.has("plan-variants")) {
      const std::string pv = args.get("plan-variants");
      if (pv != "on" && pv != "off") throw UsageError("--plan-variants must be on or off (got '" + pv + "')");
      o.plan_variants = pv == "on" ? 1 : 0;
    }
    if (args.has("shard")) parse_shard(args.get("shard"), o);
    o.ledger = args.get("ledger");
    o.report = !args.has("no-report");
    if (args.has("hours")) {
      o.hours = args.get_double("hours", 8);
      if (!(o.hours > 0) || o.hours > 24 * 365) throw UsageError("--hours must be > 0 (got " + args.get("hours") + ")");
    }
    if (args.has("cases")) o.cases = args.get_int("cases", 0, 1, fuzz::run_limits::kMaxCases);
    if (o.hours < 0 && o.cases < 0 && o.resume_dir.empty()) o.hours = 8;  // a resumed campaign keeps its --cases
    if (args.has("seed")) {
      o.seed = static_cast<uint64_t>(args.get_int("seed", 1, 0, INT64_MAX));
      o.seed_given = true;
    } else {
      o.seed = std::random_device{}() ^
               (static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count()) << 20);
      o.seed &= 0x7fffffffffffffffull;
    }
    o.budget = args.get("budget", "large");
    if (o.budget != "small" && o.budget != "medium" && o.budget != "large")
      throw UsageError("--budget must be small, medium or large (got '" + o.budget + "')");
    o.gpus = args.get("gpus", "all");
    using namespace fuzz::run_limits;
    o.workers = static_cast<int>(args.get_int("workers", 1, 1, kMaxWorkers));
    o.threads = static_cast<int>(args.get_int("threads", 0, 1, kMaxThreads));
    o.window = static_cast<int>(args.get_int("window", 0, 1, kMaxWindow));
    o.case_timeout = args.get_double("case-timeout", 30);
    o.heartbeat_timeout = args.get_double("heartbeat-timeout", 20);
    if (!(o.case_timeout > 0) || !(o.heartbeat_timeout > 0) || o.case_timeout > kMaxSeconds ||
        o.heartbeat_timeout > kMaxSeconds)
      throw UsageError("timeouts must be > 0 seconds (and at most 10^7)");
    o.max_shrink_runs = static_cast<int>(args.get_int("max-shrink-runs", 400, 0, kMaxShrinkRuns));
    o.max_shrink_seconds = args.get_double("max-shrink-seconds", 900);
    if (!(o.max_shrink_seconds >= 0) || o.max_shrink_seconds > kMaxSeconds)
      throw UsageError("--max-shrink-seconds must be >= 0 (and at most 10^7; got " + args.get("max-shrink-seconds") +
                       ")");
    o.investigation_share = args.get_double("investigation-share", 1.0 / 3);
    if (!(o.investigation_share > 0) || o.investigation_share > 1)
      throw UsageError("--investigation-share must be in (0, 1] (got " + args.get("investigation-share") + ")");
    if (args.has("stop-after-findings"))
      o.stop_after_findings = static_cast<int>(args.get_int("stop-after-findings", 0, 1, kMaxStopAfterFindings));
    recipe = args.get("recipe");
    repro = args.get("repro");
    if (!repro.empty() && recipe.empty()) throw UsageError("--repro goes with --recipe");
    if (!recipe.empty() && !o.resume_dir.empty())
      throw UsageError("--recipe runs one case; it does not go with --resume");
    if (!recipe.empty() && !o.mix_from.empty())
      throw UsageError("--recipe runs one case; it does not go with --mix-from (which shapes a campaign's stream)");
    if (!recipe.empty() && args.has("plan-variants"))
      throw UsageError("--plan-variants chooses a campaign's stream; --recipe runs the plan its line names");
#if !VATTN_HAVE_CUDA
    if (!o.kernel.empty() && o.kernel.rfind("host:", 0) != 0) {
      std::fprintf(stderr, "vattn fuzz: --kernel %s: %s; only host:* targets run\n", o.kernel.c_str(), kNoCuda);
      return kExitBadInput;
    }
#endif
    if (args.has("out")) {
      o.out_dir = args.get("out");
    } else {
      char buf[64];
      const std::time_t t = std::time(nullptr);
      std::strftime(buf, sizeof buf, "fuzz-%Y%m%dT%H%M%SZ", std::gmtime(&t));
      o.out_dir = buf;
    }
  } catch (const UsageError& e) {
    return args.usage_error(e.what());
  }
  o.self_exe = self_exe();
  for (int i = 0; i < argc; ++i) o.argv_line += (i ? " " : "vattn ") + std::string(argv[i]);
  o.progress = ::isatty(STDERR_FILENO) != 0;
  try {
    if (!recipe.empty()) return fuzz::run_single_recipe(o, recipe, repro);
    return fuzz::run_campaign(o);
  } catch (const InputError& e) {
    std::fprintf(stderr, "vattn fuzz: %s\n", e.what());
    return kExitBadInput;
  }
}

int cmd_fuzz_worker(int argc, char** argv) {
  Args args("fuzz-worker", "--kernel K [--budget B] [--threads N] [--envelope-recipe LINE]",
            "The worker process of `vattn fuzz` (started by it; speaks JSON lines on stdin and fd 3).");
  args.option("kernel", "K", "target")
      .option("budget", "B", "stream budget (plan limits)", "large")
      .option("threads", "N", "pool threads", "cores - 1")
      .option("envelope-recipe", "LINE", "widen the plan limits so this recipe fits");
  fuzz::WorkerOptions w;
  try {
    if (!args.parse(argc, argv)) return kExitOk;
    w.target.spec = args.get("kernel");
    fuzz::StreamConfig sc;
    sc.budget = args.get("budget", "large");
    w.target.envelope = fuzz::CaseStream(sc).envelope();
    if (args.has("envelope-recipe"))
      w.target.envelope = widen(w.target.envelope, Recipe::parse(args.get("envelope-recipe")));
    w.threads = static_cast<int>(args.get_int("threads", 0, 0, 1024));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vattn fuzz-worker: %s\n", e.what());
    return kExitBadInput;
  }
#if VATTN_HAVE_CUDA
  return fuzz::worker_main(w, [](const fuzz::TargetOptions& t) { return fuzz::make_gpu_target(t); });
#else
  return fuzz::worker_main(w, nullptr);  // host:* targets only
#endif
}

}  // namespace vattn::cli
