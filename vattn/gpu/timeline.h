// SPDX-License-Identifier: Apache-2.0
// `vattn timeline`: where one call's time goes inside the kernels. Runs a timing-probe build of
// a revision (one that exports kernels/vattn_timeline.h's read-out: revisions/
// libvattn_rev_v2_timeline.so, built with -DVATTN_BUILD_PROBES=ON) on one `vattn bench` case
// as CUDA-graph replays, reads the stamps after each call, and summarises them
// (timeline_summary.h).
#pragma once

#include <cstdint>
#include <string>

#include "vattn/gpu/revision.h"
#include "vattn/gpu/timeline_summary.h"

namespace vattn {

struct TimelineOptions {
  std::string kernel;  // a revision library that exports VATTN_TIMELINE_SYMBOL
  int batch = 1, drafts = 64, prefix = 4096;
  int heads = 8;
  int max_splits = 128;
  int calls = 5;   // timed calls, each read out on its own
  int warmup = 5;  // untimed replays first
  uint64_t seed = 1;
};

struct TimelineReport {
  std::string device, revision, tree;
  int sms = 0;
  int splits_used = 0;
  double replay_us = 0;  // median over the timed calls of one replay, events around it (stamps included)
  TimelineSummary summary;
};

// A revision library and its read-out. Throws InputError (field "--kernel") for a library that
// does not load, or a revision without the read-out (a built-in name, a shipped build). No CUDA
// call: it can be checked before the device is.
struct TimelineRevision {
  Revision rev;
  vattn_timeline_read_fn read = nullptr;
};
TimelineRevision load_timeline_revision(const std::string& kernel);

// Throws CudaError for a CUDA failure, std::runtime_error for stamps that do not form one call.
TimelineReport run_timeline(const TimelineRevision& probe, const TimelineOptions& opt);

}  // namespace vattn
