// SPDX-License-Identifier: Apache-2.0
// vattn replay: validate case files, recompute the oracles, and hold every stored output (and
// every live producer that can run here) to the tolerance model. A file that does not validate
// is not replayed at all.
#include <cstdio>
#include <memory>
#include <set>
#include <stdexcept>

#include "kernels/vattn_revisions.h"
#include "vattn/case/memory_limit.h"
#include "vattn/casefile/case_file.h"
#include "vattn/casefile/isolated_reader.h"
#include "vattn/cli/args.h"
#include "vattn/cli/commands.h"
#include "vattn/cli/json.h"
#include "vattn/cli/junit.h"
#include "vattn/cli/progress_line.h"
#include "vattn/gen/generate.h"
#include "vattn/oracle/cpu_oracle.h"
#include "vattn/recipe/vocab.h"
#if VATTN_HAVE_CUDA
#include "vattn/gpu/cuda_check.h"
#include "vattn/gpu/naive_runner.h"
#endif
#include "vattn/check/tolerance.h"
#include "vattn/cli/producers.h"
#include "vattn/cli/report_file.h"
#include "vattn/cli/stored_oracle_check.h"

namespace vattn::cli {

namespace {

enum class RowKind { kStored, kStoredOracle, kLive };

struct ReplayRow {
  std::string source;  // file path, or "recipe"
  std::string case_name, recipe, producer;
  RowKind kind = RowKind::kStored;
  CompareReport report;
};

std::string fmt(double v, const char* spec = "%.3g") {
  char buf[32];
  std::snprintf(buf, sizeof buf, spec, v);
  return buf;
}

int forced_splits_of(const Case& c) {
  if (c.recipe.empty()) return 0;
  try {
    return Recipe::parse(c.recipe).splits;
  } catch (const InputError&) {
    return 0;  // a recipe this version cannot parse still replays, with the kernel's own split choice
  }
}

class Replayer {
 public:
  Replayer(bool verbose, bool gpu_oracle, int splits_override, std::vector<std::unique_ptr<LiveProducer>> file_live,
           std::vector<std::unique_ptr<LiveProducer>> recipe_live)
      : verbose_(verbose), file_live_(std::move(file_live)), recipe_live_(std::move(recipe_live)),
        gpu_oracle_(gpu_oracle), splits_override_(splits_override) {}

  void print_table_header() const {
    std::printf("%-28s %-28s %-6s %15s %10s %11s %10s\n", "case", "producer", "result", "worst err/bound", "score",
                "ratio/bf16", "lse err");
  }

  // Says once per producer why a live producer is not running here.
  void announce_unavailable() {
    for (const auto* list : {&file_live_, &recipe_live_}) {
      for (const auto& p : *list) {
        const std::string why = p->unavailable_reason();
        if (why.empty() || !announced_.insert(p->name()).second) continue;
        std::printf("%s: not run (%s)\n", p->name().c_str(), why.c_str());
        not_run_.push_back({{"producer", p->name()}, {"reason", why}});
      }
    }
  }

  void replay_case(const std::string& source, const Case& c, bool from_recipe) {
    if (verbose_)
      std::printf("-- %s: %s  %s\n", printable(source).c_str(), printable(c.name).c_str(), c.describe().c_str());
    // Decided before the oracle runs (it may take minutes): whether anything can be compared,
    // and whether the CPU oracle may take the case on.
    if (const std::string why = nothing_to_compare(c, from_recipe); !why.empty()) {
      if (only_producer_.empty())
        std::printf("%-28s (nothing to compare: %s)\n", printable(c.name).c_str(), why.c_str());
      const std::string what =
          source + ": case '" + c.name + "': " + (only_producer_.empty() ? "nothing to compare (" + why + ")" : why);
      std::fprintf(stderr, "vattn replay: %s\n", printable(what).c_str());
      unusable_.push_back({{"input", source}, {"case", c.name}, {"message", what}});
      return;
    }
    if (!gpu_oracle_) {
      if (const std::string why = oracle_work_problem(oracle_work(c)); !why.empty()) {
        const std::string what = source + ": case '" + c.name + "': " + why +
                                 "; raise the limit, or give the case to the naive GPU oracle (--oracle gpu)";
        std::fprintf(stderr, "vattn replay: %s\n", printable(what).c_str());
        unusable_.push_back({{"input", source}, {"case", c.name}, {"message", what}});
        return;
      }
    }
    Reference ref64, bf16;
    if (gpu_oracle_) {
#if VATTN_HAVE_CUDA
      const DeviceCase dc(c);
      ref64 = naive_gpu_reference(dc);
      bf16 = ref64;
#endif
    } else {
      // Both CPU oracles sweep every (row, key) once: the progress line shows their share done.
      progress_done_ = 0;
      progress_total_ = 0;
      for (int b = 0; b < c.num_requests(); ++b)
        progress_total_ += 2 * int64_t{c.drafts(b)} * c.num_heads * c.prefix_len(b);
      if (progress_ && progress_->enabled()) set_oracle_progress(&Replayer::on_oracle_progress, this);
      if (progress_) progress_->show(progress_prefix_ + ": oracle", true);
      ref64 = oracle_fp64(c);
      bf16 = reference_bf16_emulated(c);
      set_oracle_progress(nullptr, nullptr);
    }
    // The naive GPU oracle (float32 math, float64 sums) is not a bf16-emulating reference: no
    // yardstick, no ratio check then.
    const testbed::References refs = gpu_oracle_ ? testbed::References{&ref64, nullptr, testbed::kNaiveGpuOracle}
                                                 : testbed::References{&ref64, &bf16, testbed::kOracleFp64};
    const std::string bad_input = c.first_nonfinite_input();
    if (!bad_input.empty())
      std::printf("%-28s note: non-finite input at %s (legal; the oracle's output is NaN/Inf wherever it is read)\n",
                  printable(c.name).c_str(), printable(bad_input).c_str());
    const size_t before = rows_.size(), unusable_before = unusable_.size();
    for (const auto& o : c.outputs) {
      if (!only_producer_.empty() && o.producer != only_producer_) continue;
      ReplayRow row{source, c.name, c.recipe, o.producer, RowKind::kStored, {}};
      if (o.producer == kOracleProducer && !gpu_oracle_) {
        row.kind = RowKind::kStoredOracle;
        row.producer = "oracle_fp64 (stored)";
        row.report = check_stored_oracle(c, ref64, o);
      } else {
        row.report = testbed::compare_to(c, refs, o.out, o.lse, o.producer);
      }
      emit(std::move(row));
    }
    const int splits = splits_override_ >= 0 ? splits_override_ : forced_splits_of(c);
    const ReplayContext ctx{c, ref64, bf16, refs, splits, testbed::case_plan_of_line(c.recipe)};
    for (const auto& p : from_recipe ? recipe_live_ : file_live_) {
      if (!p->unavailable_reason().empty()) continue;
      if (!only_producer_.empty() && p->name() != only_producer_) continue;
      ReplayRow row{source, c.name, c.recipe, p->name(), RowKind::kLive, {}};
      try {
        row.report = p->check(ctx);
      } catch (const InputError& e) {  // asked for what it cannot do (another GPU's plan, ...): not a result
        const std::string what = source + ": case '" + c.name + "': " + p->name() + ": " + e.what();
        std::fprintf(stderr, "vattn replay: %s\n", printable(what).c_str());
        unusable_.push_back({{"input", source}, {"case", c.name}, {"message", what}});
        continue;
      } catch (const CaseNotSupported& e) {
        std::printf("%-28s %-28s %-6s (%s)\n", printable(c.name).c_str(), printable(p->name()).c_str(), "SKIP",
                    printable(e.what()).c_str());
        not_run_.push_back({{"producer", p->name()}, {"case", c.name}, {"reason", e.what()}});
        continue;
      } catch (const std::exception& e) {
        row.report.case_name = c.name;
        row.report.label = p->name();
        row.report.pass = false;
        row.report.failures.push_back(std::string("run: ") + e.what());
      }
      emit(std::move(row));
    }
    if (unusable_.size() != unusable_before) return;  // said why above
    if (rows_.size() == before) {  // every live producer skipped the case: as unusable as an unreadable file
      std::printf("%-28s (nothing to compare: no live producer ran)\n", printable(c.name).c_str());
      const std::string what = source + ": case '" + c.name + "': nothing to compare (no live producer ran)";
      std::fprintf(stderr, "vattn replay: %s\n", printable(what).c_str());
      unusable_.push_back({{"input", source}, {"case", c.name}, {"message", what}});
    }
  }

  // Why nothing of `c` can be compared here, or "": no stored output and no live producer that
  // runs here (or none named --producer). A live producer may still skip the case when it runs
  // (CaseNotSupported): replay_case says so after.
  std::string nothing_to_compare(const Case& c, bool from_recipe) const {
    for (const auto& o : c.outputs)
      if (only_producer_.empty() || o.producer == only_producer_) return "";
    for (const auto& p : from_recipe ? recipe_live_ : file_live_)
      if (p->unavailable_reason().empty() && (only_producer_.empty() || p->name() == only_producer_)) return "";
    if (!only_producer_.empty())
      return "no producer '" + only_producer_ + "' (neither stored with the case nor a live producer that runs here)";
    return "no stored outputs, no live producer runs here";
  }

  // Why the live producer whose name starts with `prefix` (e.g. "kernel:") cannot run here; empty if it can.
  std::string unavailable(const std::string& prefix) const {
    for (const auto& p : file_live_)
      if (p->name().rfind(prefix, 0) == 0 && !p->unavailable_reason().empty())
        return p->name() + ": " + p->unavailable_reason();
    return "";
  }

  void unusable(const std::string& source, const std::string& message) {
    std::fprintf(stderr, "vattn replay: %s (nothing more replayed from this input)\n", message.c_str());
    unusable_.push_back({{"input", source}, {"message", message}});
  }

  // The progress line (on a terminal) and --quiet (no PASS rows, no progress line).
  void progress(ProgressLine* line, bool quiet) {
    progress_ = line;
    quiet_ = quiet;
  }
  void at(const std::string& where) { progress_prefix_ = where; }

  // --producer NAME: only that producer's rows (a stored output group, or a live producer).
  void only_producer(const std::string& name) { only_producer_ = name; }

  int passed() const { return count(true); }
  int failed() const { return count(false); }
  size_t unusable_count() const { return unusable_.size(); }

  // The report (schema vattn-replay-report, docs/reports.md).
  json report() const {
    json results = json::array();
    for (const auto& r : rows_) results.push_back(row_json(r));
    json top = report_head("vattn-replay-report", 1);
    top["passed"] = passed();
    top["failed"] = failed();
    top["results"] = results;
    top["not_run"] = not_run_;
    top["unusable"] = unusable_;
    return top;
  }
  std::vector<JunitCase> junit_cases() const {
    std::vector<JunitCase> out;
    for (const ReplayRow& row : rows_) {
      JunitCase c;
      c.suite = row.source;
      c.name = row.case_name + " / " + row.producer + (row.kind == RowKind::kStored ? " (stored)" : "");
      c.passed = row.report.pass;
      if (!c.passed) {
        for (const std::string& f : row.report.failures) c.message += (c.message.empty() ? "" : "; ") + f;
        const bool oracle = row.kind == RowKind::kStoredOracle;
        c.detail =
            (oracle ? stored_oracle_detail(row.report) : row.report.detail()) + "re-run: " + rerun_line(row) + "\n";
      }
      out.push_back(c);
    }
    for (const json& u : unusable_) {
      JunitCase c;
      c.suite = u.value("input", "");
      c.name = u.contains("case") ? u.value("case", "") + " (unusable)" : "(the input)";
      c.passed = false;
      c.error = true;
      c.message = u.value("message", "");
      c.detail = c.message;
      out.push_back(c);
    }
    return out;
  }

 private:
  int count(bool pass) const {
    int n = 0;
    for (const auto& r : rows_) n += r.report.pass == pass ? 1 : 0;
    return n;
  }

  static void on_oracle_progress(void* self, int64_t work) {
    auto* r = static_cast<Replayer*>(self);
    r->progress_done_ += work;
    char pct[32];
    std::snprintf(pct, sizeof pct, ": oracle %.0f%%",
                  r->progress_total_ > 0
                      ? 100.0 * static_cast<double>(r->progress_done_) / static_cast<double>(r->progress_total_)
                      : 100.0);
    r->progress_->show(r->progress_prefix_ + pct);
  }

  void emit(ReplayRow row) {
    const CompareReport& r = row.report;
    if (progress_) progress_->clear();
    if (quiet_ && r.pass) {  // --quiet: failures only (they still count, and go to the reports)
      rows_.push_back(std::move(row));
      return;
    }
    const bool oracle = row.kind == RowKind::kStoredOracle;
    // A stored output says so: "kernel:split-v1" read from the file is not a run of the kernel.
    const std::string shown = row.kind == RowKind::kStored ? row.producer + " (stored)" : row.producer;
    std::printf("%-28s %-28s %-6s %15s %10s %11s %10s\n", printable(row.case_name).c_str(), printable(shown).c_str(),
                r.pass ? "PASS" : "FAIL", fmt(r.worst_err_over_bound).c_str(), fmt(r.score).c_str(),
                oracle ? "-" : fmt(r.ratio_vs_bf16_ref).c_str(), r.lse_checked ? fmt(r.lse_max_err).c_str() : "no lse");
    if (!r.pass || verbose_) {
      const std::string detail = oracle ? stored_oracle_detail(r) : r.detail();
      std::printf("%s", indent(printable(detail, true)).c_str());
      if (!r.pass) std::printf("    re-run: %s\n", printable(rerun_line(row)).c_str());
    }
    std::fflush(stdout);
    rows_.push_back(std::move(row));
  }

  // Stored outputs live only in their file; a live producer's case follows from its recipe.
  static std::string rerun_line(const ReplayRow& row) {
    if (row.kind == RowKind::kLive && !row.recipe.empty()) return "vattn replay --recipe " + shell_quote(row.recipe);
    return "vattn replay " + shell_quote(row.source) + " --case " + shell_quote(row.case_name);
  }

  static std::string indent(const std::string& text) {
    std::string out = "    ";
    for (size_t i = 0; i < text.size(); ++i) {
      out += text[i];
      if (text[i] == '\n' && i + 1 < text.size()) out += "    ";
    }
    return out;
  }

  static json pos_json(const ElementPos& p) {
    return {{"index", static_cast<int64_t>(p.index)},
            {"request", p.request},
            {"draft", p.draft},
            {"head", p.head},
            {"column", p.column}};
  }

  // Counts of the elements over bound per request, row, head and 64-column block, largest first
  // (at most 64 of each).
  static json where_json(const OverBoundMap& m) {
    auto list = [](const auto& counts, auto key) {
      std::vector<std::pair<int64_t, json>> v;
      v.reserve(counts.size());
      for (const auto& [k, n] : counts) v.emplace_back(n, key(k));
      std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
      json out = json::array();
      for (size_t i = 0; i < v.size() && i < 64; ++i) out.push_back({{"at", v[i].second}, {"count", v[i].first}});
      return out;
    };
    return {{"requests", list(m.by_request, [](int r) { return json(r); })},
            {"rows", list(m.by_row,
                          [](const std::pair<int, int>& k) {
                            return json{{"request", k.first}, {"draft", k.second}};
                          })},
            {"heads", list(m.by_head, [](int h) { return json(h); })},
            {"column_blocks", list(m.by_block, [](int b) {
               return json{b * OverBoundMap::kBlock, b * OverBoundMap::kBlock + OverBoundMap::kBlock - 1};
             })}};
  }

  static json row_json(const ReplayRow& row) {
    const CompareReport& r = row.report;
    const bool oracle = row.kind == RowKind::kStoredOracle;
    return json{{"source", row.source},
                {"case", row.case_name},
                {"producer", row.producer},
                {"kind", row.kind == RowKind::kLive ? "live"
                         : oracle                   ? "stored_oracle"
                                                    : "stored"},
                {"pass", r.pass},
                {"failures", r.failures},
                {"worst_err_over_bound", json_number(r.worst_err_over_bound)},
                {"max_abs_err", json_number(r.max_abs_err)},
                {"elements_over_bound", static_cast<int64_t>(r.elements_over_bound)},
                {"nonfinite_mismatch", static_cast<int64_t>(r.nonfinite_mismatch)},
                {"score", json_number(r.score)},
                {"rms_err", json_number(r.rms_err)},
                {"rms_err_bf16_ref", oracle ? json(nullptr) : json_number(r.rms_err_bf16_ref)},
                {"ratio_vs_bf16_ref", oracle ? json(nullptr) : json_number(r.ratio_vs_bf16_ref)},
                {"lse_checked", r.lse_checked},
                {"lse_max_err", r.lse_checked ? json_number(r.lse_max_err) : json(nullptr)},
                {"lse_worst_err_over_bound", r.lse_checked ? json_number(r.lse_worst_err_over_bound) : json(nullptr)},
                {"ref_norm", json_number(r.ref_norm)},
                {"worst", pos_json(r.worst)},
                {"worst_value", json_number(r.worst_value)},
                {"worst_ref", json_number(r.worst_ref)},
                {"worst_bound", json_number(r.worst_bound)},
                {"lse_worst", pos_json(r.lse_worst)},
                {"elements_compared", r.elements_compared},
                {"over_bound_where", where_json(r.over_where)},
                {"recipe", row.recipe}};
  }

  bool verbose_;
  bool quiet_ = false;
  ProgressLine* progress_ = nullptr;
  std::string progress_prefix_;  // "file 1/3, case 2/300 NAME"
  int64_t progress_done_ = 0, progress_total_ = 0;
  std::string only_producer_;
  std::vector<std::unique_ptr<LiveProducer>> file_live_, recipe_live_;
  std::set<std::string> announced_;
  std::vector<ReplayRow> rows_;
  json not_run_ = json::array(), unusable_ = json::array();
  bool gpu_oracle_ = false;
  int splits_override_ = -1;
};

Args replay_args() {
  Args a("replay",
         "[FILE...] [--case NAME] [--recipe \"LINE\"] [--kernel NAME|LIB.so] [--oracle cpu|gpu] [--splits N]\n"
         "                    [--json OUT] [--verbose]",
         "Reads and validates each case file (a file that fails validation is not replayed: exit 2,\n"
         "naming file, case and field), recomputes the float64 oracle and the bf16-emulating reference\n"
         "for every case, and compares every stored output group under the tolerance model\n"
         "(docs/tolerance.md). A stored oracle_fp64 is held to float32-storage accuracy instead.\n"
         "Live producers (a kernel on a GPU machine) are compared the same way; those that cannot run\n"
         "here say why in one line.");
  a.positionals("FILE...", "case files to replay (none needed with --recipe)", 0)
      .option("case", "NAME", "replay only this case of each file (a file without it is an error)")
      .option("recipe", "LINE",
              "generate the case from its one-line recipe and replay it; the bf16-emulating reference "
              "is compared as its producer. The kernel runs as the line says: splits=, the plan limits "
              "limits=R/Q/T/S, and sms=/sm_blocks= (another GPU's plan; refused by a revision without "
              "the test plan hook). A case file's recipe line is honoured the same way")
      .option("json", "OUT",
              "also write a machine-readable report (docs/reports.md); '-': to stdout, the table then goes to stderr")
      .flag("quiet", "print failures and the summary only (no PASS rows, no progress line)")
      .option("producer", "NAME",
              "compare only this producer (a stored output group, e.g. serving, or kernel:" VATTN_REVISION_DEFAULT ")")
      .option("junit", "FILE", "also write JUnit XML for CI systems (a testcase per case x producer)")
      .option("kernel", "NAME|LIB.so",
              "kernel revision run on a GPU machine: a built-in name (" VATTN_REVISION_LIST ") or a revision library",
              VATTN_REVISION_DEFAULT, 'k')
      .option("oracle", "cpu|gpu", "reference: the float64 CPU oracle, or the naive GPU oracle (long captures)", "cpu")
      .option("splits", "N", "force the kernel's split count (0: the kernel picks; default: the recipe's splits=)")
      .flag("verbose", "print each case's shape and the full figures of every comparison, passing or not")
      .example("vattn replay fixtures/*.h5", "replay the committed fixtures")
      .example("vattn replay capture.h5 --case step000120_layer07 --json report.json", "one case, with a JSON report")
      .example(
          "vattn replay --recipe \"B=2 H=8 P=[4099,0] T=[17,1] tree=random profile=k26 layout=scattered "
          "poison=0 seed=7 scale=0.1446796 splits=3\"",
          "re-create a case from the line a test printed, and check it");
  add_case_reading_options(a);
  add_oracle_work_option(a);
  a.note(kProgressIntervalHelp);
  return a;
}

}  // namespace

int cmd_replay(int argc, char** argv) {
  Args a = replay_args();
  Recipe recipe;
  try {
    if (!a.parse(argc, argv)) return kExitOk;
    if (a.positional().empty() && !a.has("recipe")) throw UsageError("give case files, --recipe \"LINE\", or both");
    if (a.has("case") && a.positional().empty())
      throw UsageError("--case picks a case of the case files; none were given");
    if (a.has("recipe")) {
      try {
        recipe = Recipe::parse(a.get("recipe"));
      } catch (const InputError& e) {
        throw UsageError("--recipe: field '" + e.field() + "': " + e.reason());
      }
    }
  } catch (const UsageError& e) {
    return a.usage_error(e.what());
  }

  ProducerOptions file_opts, recipe_opts;
  int splits_override = -1;
  try {
    file_opts.kernel = a.get("kernel", VATTN_REVISION_DEFAULT);
    file_opts.oracle = a.get("oracle", "cpu");
    if (file_opts.oracle != "cpu" && file_opts.oracle != "gpu") throw UsageError("--oracle: expected cpu or gpu");
    if (a.has("splits")) splits_override = static_cast<int>(a.get_int("splits", 0, 0, vocab::kMaxSplits));
#if VATTN_HAVE_CUDA
    if (file_opts.oracle == "gpu" && cuda_device_count() == 0)
      throw UsageError("--oracle gpu needs a CUDA device, and none is visible");
#else
    if (file_opts.oracle == "gpu") throw UsageError(std::string("--oracle gpu: ") + kNoCuda);
#endif
    for (const char* report : {"json", "junit"}) {  // checked now: a long replay must not end in an unwritable report
      if (!a.has(report) || (std::string(report) == "json" && a.get(report) == "-")) continue;
      const std::string why = report_path_problem(a.get(report), a.positional());
      if (!why.empty()) throw UsageError(std::string("--") + report + " " + a.get(report) + ": " + why);
    }
    if (a.has("json") && a.has("junit") && a.get("json") == a.get("junit"))
      throw UsageError("--json and --junit name the same file");
    apply_case_reading_options(a);
    apply_oracle_work_option(a);
    try {
      (void)progress_interval_from_environment();
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
    // A recipe is held to the same limits as a case file, before anything is generated.
    if (a.has("recipe")) {
      std::string why = case_memory_problem(recipe_memory_estimate(recipe), "generated and checked");
      if (why.empty() && file_opts.oracle == "cpu")
        why = oracle_work_problem(oracle_work(recipe.heads, recipe.prefix, recipe.drafts));
      if (!why.empty()) throw UsageError("--recipe " + why);
    }
  } catch (const UsageError& e) {
    return a.usage_error(e.what());
  }
  // --json -: the report alone goes to stdout; what would be printed there goes to stderr.
  StdoutForReport json_to_stdout(a.has("json") && a.get("json") == "-");
  recipe_opts = file_opts;
  recipe_opts.bf16_reference = file_opts.oracle == "cpu";
  std::vector<std::unique_ptr<LiveProducer>> file_live, recipe_live;
  try {
    file_live = make_live_producers(file_opts);
    recipe_live = make_live_producers(recipe_opts);
  } catch (const InputError& e) {
    if (e.field() == "--kernel")  // worded as bench and graph-check word it
      std::fprintf(stderr, "vattn replay: --kernel %s: %s\n", file_opts.kernel.c_str(), e.reason().c_str());
    else
      std::fprintf(stderr, "vattn replay: %s\n", e.what());
    return kExitBadInput;
  }
  Replayer replayer(a.has("verbose"), file_opts.oracle == "gpu", splits_override, std::move(file_live),
                    std::move(recipe_live));
  if (a.has("producer")) replayer.only_producer(a.get("producer"));
  // Which file and case is running, and the oracle's share done on long contexts: on a terminal
  // a line rewritten in place, in a log a line every VATTN_PROGRESS_INTERVAL seconds of a long step.
  ProgressLine progress(!a.has("quiet"), "vattn replay");
  replayer.progress(&progress, a.has("quiet"));
  // Asked for by name, the kernel must run: "not run" would otherwise end in exit 0.
  if (a.has("kernel")) {
    const std::string why = replayer.unavailable("kernel:");
    if (!why.empty()) {
      std::fprintf(stderr,
                   "vattn replay: --kernel %s cannot run here (%s); without --kernel, replay checks the "
                   "stored outputs and reports the kernel as not run\n",
                   a.get("kernel").c_str(), why.c_str());
      return kExitBadInput;
    }
  }
  replayer.announce_unavailable();
  replayer.print_table_header();

  // One case at a time, each file read by an isolated child (isolated_reader.h): a case is
  // read, checked, reported and freed before the next; a file that turns out unusable half-way
  // keeps what was reported for its earlier cases.
  size_t file_number = 0;
  for (const auto& path : a.positional()) {
    try {
      progress.clear();
      IsolatedCaseReader reader(path, a.get("case"));
      const size_t n = reader.case_count();
      if (n == 0) {
        replayer.unusable(path, path + ": the file has no cases under /cases");
        continue;
      }
      std::printf("== %s: %zu case%s, source %s\n", printable(path).c_str(), n, n == 1 ? "" : "s",
                  printable(reader.header().source).c_str());
      std::fflush(stdout);
      Case c;
      size_t k = 0;
      const std::string where = "file " + std::to_string(++file_number) + "/" + std::to_string(a.positional().size());
      progress.show(where + ": reading", true);
      while (reader.next(c)) {
        const std::string shape = c.describe();
        replayer.at(where + ", case " + std::to_string(++k) + "/" + std::to_string(n) + " " + printable(c.name) + " (" +
                    shape.substr(0, shape.find("  ")) + ")");
        replayer.replay_case(path, c, false);
        progress.show(where + ": reading", true);
      }
      progress.clear();
    } catch (const std::exception& e) {
      const std::string msg = e.what();
      replayer.unusable(path, msg.find(path) == std::string::npos ? path + ": " + msg : msg);
    }
  }
  if (a.has("recipe")) {
    std::printf("== --recipe %s\n", recipe.to_line().c_str());
    replayer.at("--recipe");
    try {
      replayer.replay_case("recipe", generate_case(recipe, "recipe"), true);
    } catch (const InputError& e) {
      replayer.unusable("recipe", std::string("--recipe: ") + e.what());
    }
  }

  std::printf("replay: %d passed, %d failed\n", replayer.passed(), replayer.failed());
  if (replayer.unusable_count() > 0)
    std::printf("replay: %zu input(s) unusable (see above)\n", replayer.unusable_count());
  if (a.has("junit")) {
    const std::string why = write_report(a.get("junit"), junit_xml("vattn replay", replayer.junit_cases()));
    if (!why.empty()) {
      std::fprintf(stderr, "vattn replay: --junit %s: %s\n", a.get("junit").c_str(), why.c_str());
      return kExitBadInput;
    }
  }
  if (json_to_stdout.active()) {
    if (!json_to_stdout.write(report_text(replayer.report()))) {
      std::fprintf(stderr, "vattn replay: --json -: cannot write to standard output\n");
      return kExitBadInput;
    }
  } else if (a.has("json")) {
    const std::string why = write_report(a.get("json"), report_text(replayer.report()));
    if (!why.empty()) {
      std::fprintf(stderr, "vattn replay: --json %s: %s\n", a.get("json").c_str(), why.c_str());
      return kExitBadInput;
    }
  }
  // An unusable input (or case) makes the run incomplete: 2 takes precedence over 1; the
  // summary above and the JSON report count both.
  if (replayer.unusable_count() > 0) return kExitBadInput;
  return replayer.failed() > 0 ? kExitCheckFailed : kExitOk;
}

}  // namespace vattn::cli
