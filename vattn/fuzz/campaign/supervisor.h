// SPDX-License-Identifier: Apache-2.0
// The campaign supervisor (`vattn fuzz`): never touches CUDA. It owns the case stream, hands
// indices to one worker process per GPU (or per host slot), watches them (a report before every
// case, heartbeats, a deadline that scales with the case's work), replaces a worker that dies or
// hangs and blames the case it was running, journals every verdict, turns failures into
// de-duplicated findings and has each new one confirmed and shrunk in fresh workers beside the
// stream (a second worker per GPU, within a share of the time), and retries a case that failed
// for want of a resource (device memory, ...) on a fresh worker instead of raising it.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace vattn::fuzz {

struct CampaignOptions {
  std::string kernel;      // revision name, .so path, or host:NAME
  std::string out_dir;     // campaign directory (created)
  std::string resume_dir;  // continue this campaign instead
  double hours = -1;       // this run's wall-time budget (-1: not set)
  int64_t cases = -1;      // the campaign's size in cases (-1: not set)
  uint64_t seed = 0;
  bool seed_given = false;
  int64_t shard_index = 0;  // --shard I/N: this campaign runs the indices i with i % N == I
  int64_t shard_count = 1;
  bool shard_given = false;
  std::string ledger;    // --ledger FILE: known, tolerated findings (campaign/ledger.h)
  std::string mix_from;  // --mix-from DIR: captured case files whose shapes take a share of the stream
  std::string budget = "large";
  // --plan-variants: whether the stream draws the plans other GPUs would make (recipe keys sms,
  // sm_blocks), which only a revision with the test plan hook can run: 1 on, 0 off, -1 not given
  // (on for GPU targets, off for host targets). A resumed campaign keeps its own.
  int plan_variants = -1;
  std::string gpus = "all";       // GPU targets: all | 0,1,...
  int workers = 1;                // host targets: worker processes
  int threads = 0;                // pool threads per worker (0: cores / workers - 1)
  int window = 0;                 // cases in flight per worker (0: 2 x threads)
  double case_timeout = 30;       // deadline floor per case, seconds
  double heartbeat_timeout = 20;  // a worker silent this long is stuck
  double startup_timeout = 120;   // a worker must be ready within this
  int max_shrink_runs = 400;
  int stop_after_findings = 0;      // stop once this many new findings of this run are investigated (0: never)
  double max_shrink_seconds = 900;  // busy seconds of the investigating worker, per finding
  // The investigating worker is busy (a run in flight or starting) at most this share of the time
  // while the stream has cases; a hang being shrunk costs it its deadline per run.
  double investigation_share = 1.0 / 3;
  bool progress = false;  // live progress line (on a terminal)
  bool report = true;     // write DIR/report.html at the end (campaign/report_runner.h)
  std::string self_exe;   // the vattn binary (workers are `vattn fuzz-worker ...`)
  std::string argv_line;  // the command as typed, for the journal
  // The run options given on the command line (their names, "workers", "case-timeout", ...):
  // --resume takes the others from the journal (campaign/run_options.h).
  std::set<std::string> given;
  // --resume loads a revision library whose bytes differ from the ones the campaign recorded (or
  // that it recorded none of): refused unless this is set (--allow-changed-kernel).
  bool allow_changed_kernel = false;
};

// Exit code: 0 nothing found, 1 findings, 2 usage or nothing could run. A crash or hang that a fresh
// worker did not repeat, and a case not run for want of a resource, are reported but are no findings.
int run_campaign(const CampaignOptions& options);

// `vattn fuzz --recipe LINE`: one case in a fresh worker, with the campaign's deadline and crash
// handling; prints the verdict. `repro_path` (optional) receives the repro when it fails.
int run_single_recipe(const CampaignOptions& options, const std::string& recipe, const std::string& repro_path);

}  // namespace vattn::fuzz
