// SPDX-License-Identifier: Apache-2.0
// The A/B comparison behind `vattn bench-compare`: `vattn bench --json` reports of the same
// shapes, read as untrusted input, averaged per revision and shape, and set against one base
// revision. Host code only: it runs (and is tested) where no GPU is.
#pragma once

#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace vattn::cli {

struct CompareShape {
  int batch = 0, drafts = 0, prefix = 0;
  bool operator<(const CompareShape& o) const {
    return std::tie(batch, drafts, prefix) < std::tie(o.batch, o.drafts, o.prefix);
  }
};

// One revision at one shape, over the reports that timed it.
struct CompareCell {
  double graph_us = 0, queued_us = 0;             // means over the reports
  double ratio_graph = 0, ratio_queued = 0;       // base mean / this mean: above 1, faster than the base
  double ratio_graph_lo = 0, ratio_graph_hi = 0;  // base / this within each report: the spread
  int splits = 0;                                 // splits_used in the first report
  int reports = 0;
};

struct Comparison {
  std::string base, device;
  int reports = 0;
  std::vector<std::string> kernels;  // base first, then in the order the reports name them
  std::vector<CompareShape> shapes;  // sorted
  std::map<std::pair<std::string, CompareShape>, CompareCell> cells;
  // Geometric means of the mean-based ratios: [kernel] -> {verify graph, verify queued, decode graph,
  // decode queued, verify shapes, decode shapes}; verify shapes have T > 1, decode shapes T = 1.
  struct Geo {
    double verify_graph = 0, verify_queued = 0, decode_graph = 0, decode_queued = 0;
    int verify = 0, decode = 0;
  };
  std::map<std::string, Geo> geomean;
};

// Reads and checks every report (schema vattn-bench-report v2, one device), then compares.
// `base` empty: the first kernel of the first report. A report that cannot be used throws
// InputError (case.h), its message naming the file, and the case and field where one applies.
Comparison compare_bench_reports(const std::vector<std::string>& paths, const std::string& base);

// The table `vattn bench-compare` prints.
std::string comparison_table(const Comparison& c);

// Revisions and shapes below `min_ratio` (graph or queued), one line each; empty when none.
std::vector<std::string> below_ratio(const Comparison& c, double min_ratio);

}  // namespace vattn::cli
