// SPDX-License-Identifier: Apache-2.0
#include "vattn/cli/bench_compare.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <set>
#include <sstream>

#include "vattn/case/case.h"  // InputError, printable()
#include "vattn/case/file_read.h"
#include "vattn/cli/json.h"
#include "vattn/fuzz/protocol/json_read.h"

namespace vattn::cli {

namespace {

namespace fs = std::filesystem;

constexpr uint64_t kMaxReportBytes = 64ull << 20;  // a 20-shape report of many revisions is ~100 KB

struct Row {
  std::string kernel;
  CompareShape shape;
  double graph_us = 0, queued_us = 0;
  int splits = 0;
};

[[noreturn]] void fail(const std::string& path, const std::string& what) { throw InputError(path, "", "", what); }

json read_json(const std::string& path) {
  std::string why;
  json j = fuzz::parse_json_bounded<json>(read_input_file(path, kMaxReportBytes, ""), &why);
  if (j.is_discarded()) fail(path, "not JSON that vattn can read (" + why + ")");
  return j;
}

// An integer field in [lo, hi].
int int_field(const std::string& path, const json& c, size_t i, const char* field, long long lo, long long hi) {
  const std::string where = "case " + std::to_string(i) + ": field '" + field + "'";
  if (!c.contains(field)) fail(path, where + " is missing");
  const json& v = c[field];
  if (!v.is_number_integer()) fail(path, where + " is not an integer");
  const long long x = v.get<long long>();
  if (x < lo || x > hi)
    fail(path,
         where + " is " + std::to_string(x) + ", outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return static_cast<int>(x);
}

// A time in microseconds: a number above 0 and at most 1e9 (a report writes NaN and infinities as
// strings; the bound keeps sums over many reports finite).
double time_field(const std::string& path, const json& c, size_t i, const char* field) {
  const std::string where = "case " + std::to_string(i) + ": field '" + field + "'";
  if (!c.contains(field)) fail(path, where + " is missing");
  const json& v = c[field];
  if (!v.is_number()) fail(path, where + " is not a number (" + printable(v.dump()) + ")");
  const double x = v.get<double>();
  if (!std::isfinite(x) || x <= 0 || x > 1e9)
    fail(path, where + " is " + printable(v.dump()) + ", not a time in (0, 1e9] us");
  return x;
}

std::vector<Row> read_report(const std::string& path, std::string& device) {
  const json j = read_json(path);
  if (!j.is_object()) fail(path, "is not a JSON object");
  if (!j.contains("schema") || j["schema"] != "vattn-bench-report")
    fail(path,
         "is not a vattn bench report (field 'schema' is not \"vattn-bench-report\"; `vattn bench --json` writes one)");
  if (!j.contains("version") || !j["version"].is_number_integer() || j["version"].get<long long>() != 2)
    fail(path, "field 'version': this vattn reads vattn-bench-report version 2");
  if (!j.contains("device") || !j["device"].is_string()) fail(path, "field 'device' is missing or not a string");
  device = j["device"].get<std::string>();
  if (!j.contains("cases") || !j["cases"].is_array() || j["cases"].empty())
    fail(path, "field 'cases' is missing, not a list, or empty");
  std::vector<Row> rows;
  std::set<std::pair<std::string, CompareShape>> seen;
  const json& cases = j["cases"];
  for (size_t i = 0; i < cases.size(); ++i) {
    const json& c = cases[i];
    if (!c.is_object()) fail(path, "case " + std::to_string(i) + " is not an object");
    if (!c.contains("kernel") || !c["kernel"].is_string() || c["kernel"].get<std::string>().empty())
      fail(path, "case " + std::to_string(i) + ": field 'kernel' is missing, not a string, or empty");
    Row r;
    r.kernel = c["kernel"].get<std::string>();
    r.shape.batch = int_field(path, c, i, "batch", 1, std::numeric_limits<int>::max());
    r.shape.drafts = int_field(path, c, i, "drafts", 1, std::numeric_limits<int>::max());
    r.shape.prefix = int_field(path, c, i, "prefix", 0, std::numeric_limits<int>::max());
    r.splits = int_field(path, c, i, "splits_used", 0, std::numeric_limits<int>::max());
    r.graph_us = time_field(path, c, i, "graph_us");
    r.queued_us = time_field(path, c, i, "queued_us");
    if (!seen.insert({r.kernel, r.shape}).second)
      fail(path, "case " + std::to_string(i) + ": revision '" + printable(r.kernel) +
                     "' at B=" + std::to_string(r.shape.batch) + " T=" + std::to_string(r.shape.drafts) +
                     " P=" + std::to_string(r.shape.prefix) + " appears twice");
    rows.push_back(r);
  }
  return rows;
}

// "a (b)" with `decimals` places: a graph figure and its queued one.
std::string pair_text(double a, double b, int decimals) {
  char buf[80];
  std::snprintf(buf, sizeof buf, "%.*f (%.*f)", decimals, a, decimals, b);
  return buf;
}

std::string shape_text(const CompareShape& s) {
  return "B=" + std::to_string(s.batch) + " T=" + std::to_string(s.drafts) + " P=" + std::to_string(s.prefix);
}

}  // namespace

Comparison compare_bench_reports(const std::vector<std::string>& paths, const std::string& base_given) {
  if (paths.empty()) throw InputError("", "", "", "no report given");
  for (size_t i = 0; i < paths.size(); ++i)  // one run counted twice would weigh double
    for (size_t k = 0; k < i; ++k) {
      std::error_code ec;
      if (paths[i] == paths[k] || fs::equivalent(paths[i], paths[k], ec))
        fail(paths[i], "is given twice (as " + printable(paths[k]) + " too)");
    }
  std::vector<std::vector<Row>> reports;
  std::string device0;
  for (const std::string& path : paths) {
    std::string device;
    reports.push_back(read_report(path, device));
    if (reports.size() == 1)
      device0 = device;
    else if (device != device0)
      fail(path, "was timed on " + printable(device) + ", " + printable(paths.front()) + " on " + printable(device0) +
                     ": times from different GPUs do not compare");
  }
  Comparison c;
  c.device = device0;
  c.reports = static_cast<int>(paths.size());
  c.base = base_given.empty() ? reports.front().front().kernel : base_given;
  c.kernels.push_back(c.base);
  bool base_seen = false;
  for (const auto& rows : reports)
    for (const Row& r : rows) base_seen = base_seen || r.kernel == c.base;
  if (!base_seen) {
    std::string names;
    for (const auto& rows : reports)
      for (const Row& r : rows)
        if (names.find("'" + r.kernel + "'") == std::string::npos)
          names += (names.empty() ? "'" : ", '") + r.kernel + "'";
    throw InputError("", "", "", "no report times the base revision '" + c.base + "' (revisions: " + names + ")");
  }
  // Per (kernel, shape): sums of this kernel's times and of the base's in the same reports.
  struct Acc {
    double g = 0, q = 0, bg = 0, bq = 0, lo = 0, hi = 0;
    int n = 0, splits = 0;
  };
  std::map<std::pair<std::string, CompareShape>, Acc> acc;
  std::set<CompareShape> shapes;
  for (size_t f = 0; f < reports.size(); ++f) {
    std::map<CompareShape, const Row*> base_rows;
    for (const Row& r : reports[f])
      if (r.kernel == c.base) base_rows[r.shape] = &r;
    for (const Row& r : reports[f]) {
      const auto b = base_rows.find(r.shape);
      if (b == base_rows.end())
        fail(paths[f], "revision '" + printable(r.kernel) + "' at " + shape_text(r.shape) + ": the base revision '" +
                           printable(c.base) +
                           "' was not timed at this shape in this report (a ratio needs both from one run)");
      bool listed = false;
      for (const auto& k : c.kernels) listed = listed || k == r.kernel;
      if (!listed) c.kernels.push_back(r.kernel);
      shapes.insert(r.shape);
      Acc& a = acc[{r.kernel, r.shape}];
      const double ratio = b->second->graph_us / r.graph_us;
      a.lo = a.n == 0 ? ratio : std::min(a.lo, ratio);
      a.hi = a.n == 0 ? ratio : std::max(a.hi, ratio);
      if (a.n == 0) a.splits = r.splits;
      a.g += r.graph_us;
      a.q += r.queued_us;
      a.bg += b->second->graph_us;
      a.bq += b->second->queued_us;
      ++a.n;
    }
  }
  c.shapes.assign(shapes.begin(), shapes.end());
  for (const auto& [key, a] : acc) {
    CompareCell cell;
    cell.graph_us = a.g / a.n;
    cell.queued_us = a.q / a.n;
    cell.ratio_graph = a.bg / a.g;  // the same reports on both sides: equal to the ratio of the means
    cell.ratio_queued = a.bq / a.q;
    cell.ratio_graph_lo = a.lo;
    cell.ratio_graph_hi = a.hi;
    cell.splits = a.splits;
    cell.reports = a.n;
    c.cells[key] = cell;
  }
  for (const std::string& k : c.kernels) {
    if (k == c.base) continue;
    Comparison::Geo g;
    double lvg = 0, lvq = 0, ldg = 0, ldq = 0;
    for (const CompareShape& s : c.shapes) {
      const auto it = c.cells.find({k, s});
      if (it == c.cells.end()) continue;
      if (s.drafts > 1) {
        lvg += std::log(it->second.ratio_graph);
        lvq += std::log(it->second.ratio_queued);
        ++g.verify;
      } else {
        ldg += std::log(it->second.ratio_graph);
        ldq += std::log(it->second.ratio_queued);
        ++g.decode;
      }
    }
    if (g.verify > 0) g.verify_graph = std::exp(lvg / g.verify), g.verify_queued = std::exp(lvq / g.verify);
    if (g.decode > 0) g.decode_graph = std::exp(ldg / g.decode), g.decode_queued = std::exp(ldq / g.decode);
    c.geomean[k] = g;
  }
  return c;
}

std::string comparison_table(const Comparison& c) {
  std::ostringstream os;
  char line[400];
  os << "vattn bench-compare: " << c.reports << (c.reports == 1 ? " report" : " reports") << ", device "
     << printable(c.device) << ", base " << printable(c.base) << "\n"
     << "ratio = base time / revision time (above 1: the revision is faster), from the means over the reports;\n"
     << "graph replay (queued in brackets); [lo-hi]: the graph ratio within each report, its spread between runs\n";
  if (c.kernels.size() == 1) {
    os << "only the base revision was timed: nothing to compare\n";
    return os.str();
  }
  for (const std::string& k : c.kernels) {
    if (k == c.base) continue;
    os << "\n" << printable(k) << " against " << printable(c.base) << ":\n";
    std::snprintf(line, sizeof line, "%5s %5s %8s %9s %20s %20s %17s %15s %8s\n", "B", "T", "P", "splits", "base us",
                  "revision us", "ratio", "[lo-hi]", "reports");
    os << line;
    for (const CompareShape& s : c.shapes) {
      const auto it = c.cells.find({k, s});
      const auto b = c.cells.find({c.base, s});
      if (it == c.cells.end() || b == c.cells.end()) continue;
      const CompareCell& x = it->second;
      const double base_g = x.graph_us * x.ratio_graph, base_q = x.queued_us * x.ratio_queued;
      const std::string splits = std::to_string(b->second.splits) + "/" + std::to_string(x.splits);
      std::snprintf(line, sizeof line, "%5d %5d %8d %9s %20s %20s %17s [%5.3f-%5.3f] %8d\n", s.batch, s.drafts,
                    s.prefix, splits.c_str(), pair_text(base_g, base_q, 1).c_str(),
                    pair_text(x.graph_us, x.queued_us, 1).c_str(), pair_text(x.ratio_graph, x.ratio_queued, 3).c_str(),
                    x.ratio_graph_lo, x.ratio_graph_hi, x.reports);
      os << line;
    }
    const Comparison::Geo& g = c.geomean.at(k);
    if (g.verify > 0) {
      std::snprintf(line, sizeof line, "  verify (T > 1), %d shape%s: geomean %.4f (queued %.4f)\n", g.verify,
                    g.verify == 1 ? "" : "s", g.verify_graph, g.verify_queued);
      os << line;
    }
    if (g.decode > 0) {
      std::snprintf(line, sizeof line, "  decode (T = 1), %d shape%s: geomean %.4f (queued %.4f)\n", g.decode,
                    g.decode == 1 ? "" : "s", g.decode_graph, g.decode_queued);
      os << line;
    }
  }
  return os.str();
}

std::vector<std::string> below_ratio(const Comparison& c, double min_ratio) {
  std::vector<std::string> out;
  char line[300];
  for (const std::string& k : c.kernels) {
    if (k == c.base) continue;
    for (const CompareShape& s : c.shapes) {
      const auto it = c.cells.find({k, s});
      if (it == c.cells.end()) continue;
      const CompareCell& x = it->second;
      if (x.ratio_graph >= min_ratio && x.ratio_queued >= min_ratio) continue;
      std::snprintf(line, sizeof line, "%s at %s: %.3f (queued %.3f), below %g", printable(k).c_str(),
                    shape_text(s).c_str(), x.ratio_graph, x.ratio_queued, min_ratio);
      out.push_back(line);
    }
  }
  return out;
}

}  // namespace vattn::cli
