// SPDX-License-Identifier: Apache-2.0
// vattn gen: generated cases -> a case file, each with the float64 oracle's outputs, so the
// file alone is enough to check a kernel (and `vattn replay` re-checks the oracle itself).
#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "vattn/case/bf16.h"
#include "vattn/case/memory_limit.h"
#include "vattn/casefile/case_file.h"
#include "vattn/casefile/write_target.h"
#include "vattn/cli/args.h"
#include "vattn/cli/commands.h"
#include "vattn/cli/progress_line.h"
#include "vattn/gen/generate.h"
#include "vattn/oracle/cpu_oracle.h"
#include "vattn/recipe/vocab.h"

namespace vattn::cli {

namespace {

constexpr const char* kShapeOptions[] = {"profile", "seed", "requests", "heads",  "prefix",
                                         "drafts",  "tree", "layout",   "poison", "scale"};

Args gen_args() {
  Args a("gen", "-o FILE [options]",
         "Writes generated verify-attention cases (valid by construction, deterministic from their recipe)\n"
         "to an HDF5 case file (schema: docs/case-format.md), each with outputs/oracle_fp64 from the\n"
         "float64 CPU oracle. Every case stores its recipe line in the attribute `recipe`; that line\n"
         "re-creates it: vattn replay --recipe \"LINE\".");
  a.option("output", "FILE", "case file to write (replaced if it exists)", "", 'o')
      .option("profile", "NAME", std::string("value profile: ") + vocab::kProfiles, "uniform")
      .option("seed", "N", "seed of the first case; case k uses seed+k", "1")
      .option("requests", "B", "requests per case; lists of one value are broadcast to B",
              "the length of --prefix/--drafts, else 1")
      .option("heads", "H", "query heads", "8")
      .option("prefix", "LIST", "prefix lengths P_b, comma separated (0 allowed)", "4099")
      .option("drafts", "LIST", "draft tokens T_b, comma separated (>= 1)", "16")
      .option("tree", "KIND", std::string("draft tree: ") + vocab::kTreeKinds, "chain")
      .option("layout", "KIND", std::string("KV pool layout: ") + vocab::kLayouts, "scattered")
      .flag("poison",
            "NaN/Inf in every pool row, draft row and query row outside every K(b,i) "
            "(always on for the adversarial profile)")
      .option("scale", "X", "softmax scale sm_scale", "0.1446796, Kimi K2.6 with yarn factor 64")
      .option("cases", "N", "number of cases, seeds seed..seed+N-1", "1")
      .option("recipe", "LINE", "one recipe line instead of the shape options above (see vattn info)")
      .option("model", "NAME", "optional root attribute `model`, e.g. Kimi-K2.6")
      .option("notes", "TEXT", "optional root attribute `notes`")
      .note(
          "Profiles: uniform U(-1,1); k26 a K2.6-like latent cache (outlier channels, attention sink at\n"
          "token 0, RoPE pairs in the last 64 columns); adversarial logits near the float32 exp overflow\n"
          "edge, exact ties, poison; huge all logits around +-70; ties three distinct KV rows; tiny\n"
          "magnitudes ~1e-30 with bf16 subnormals.\n"
          "Trees: chain, random, star, ddtree (best-first by path probability), deep, wide, padded\n"
          "(graph-padding nodes that see nothing). Layouts: contiguous, scattered (kv_slot_ids from a\n"
          "larger pool), reversed, sparse (pool 4x larger than needed).")
      .example("vattn gen -o k26.h5 --profile k26 --requests 4 --prefix 4099,0,77,70001 --drafts 16 --tree ddtree",
               "four requests, one of them with an empty prefix")
      .example("vattn gen -o chains.h5 --cases 10 --seed 100 --tree chain --prefix 1000 --drafts 17",
               "ten cases, seeds 100..109")
      .example(
          "vattn gen -o one.h5 --recipe \"B=2 H=8 P=[4099,0] T=[17,1] tree=random profile=k26 layout=scattered "
          "poison=0 seed=7 scale=0.1446796 splits=3\"",
          "re-create a case from its recipe line");
  add_memory_option(a);
  add_oracle_work_option(a);
  a.note(std::string("environment:\n") + kProgressIntervalHelp);
  return a;
}

// What the whole run holds at its peak: every case (they are written together), the file's image
// (about as large again: bf16 values barely compress), and one case's oracle working set.
uint64_t gen_memory_estimate(const Recipe& r, long long count) {
  const long double bytes = static_cast<long double>(recipe_memory_estimate(r)) +
                            (2.0L * count - 1) * static_cast<long double>(recipe_case_bytes(r));
  return bytes > 1.8e19L ? UINT64_MAX : static_cast<uint64_t>(bytes);
}

Recipe recipe_from_options(const Args& a) {
  if (a.has("recipe")) {
    for (const char* opt : kShapeOptions) {
      if (a.has(opt)) throw UsageError(std::string("--recipe replaces --") + opt + "; give one or the other");
    }
    try {
      return Recipe::parse(a.get("recipe"));
    } catch (const InputError& e) {
      throw UsageError("--recipe: field '" + e.field() + "': " + e.reason());
    }
  }
  Recipe r;
  r.profile = a.get("profile", r.profile);
  if (!vocab::is_profile(r.profile))
    throw UsageError("--profile: unknown profile '" + r.profile + "' (" + vocab::kProfiles + ")");
  r.tree = a.get("tree", r.tree);
  if (!vocab::is_tree_kind(r.tree))
    throw UsageError("--tree: unknown tree kind '" + r.tree + "' (" + vocab::kTreeKinds + ")");
  r.layout = a.get("layout", r.layout);
  if (!vocab::is_layout(r.layout))
    throw UsageError("--layout: unknown layout '" + r.layout + "' (" + vocab::kLayouts + ")");
  r.heads = static_cast<int>(a.get_int("heads", 8, 1, vocab::kMaxHeads));
  r.poison = a.has("poison") || r.profile == "adversarial";
  const std::string seed_text = a.get("seed", "1");
  if (seed_text.empty() || seed_text.find_first_not_of("0123456789") != std::string::npos) {
    throw UsageError("--seed: '" + seed_text + "' is not an unsigned integer");
  }
  try {
    r.seed = std::stoull(seed_text);
  } catch (const std::exception&) {
    throw UsageError("--seed: '" + seed_text + "' does not fit in 64 bits");
  }
  r.sm_scale = a.get_double("scale", r.sm_scale);
  if (!(r.sm_scale > 0)) throw UsageError("--scale must be > 0");
  auto prefix = parse_int_list("prefix", a.get("prefix", "4099"), 0, vocab::kMaxPrefix);
  auto drafts = parse_int_list("drafts", a.get("drafts", "16"), 1, vocab::kMaxDrafts);
  const long long implied = static_cast<long long>(std::max(prefix.size(), drafts.size()));
  const auto B = static_cast<size_t>(a.get_int("requests", implied, 1, vocab::kMaxBatch));
  for (auto* list : {&prefix, &drafts}) {
    if (list->size() == 1) list->assign(B, list->front());
    if (list->size() != B) {
      throw UsageError(std::string(list == &prefix ? "--prefix" : "--drafts") + " has " + std::to_string(list->size()) +
                       " values for " + std::to_string(B) + " requests (give one value or B values)");
    }
  }
  r.prefix = prefix;
  r.drafts = drafts;
  return r;
}

// The oracle's progress callback (cpu_oracle.h): its share of the case's work, on the progress line.
struct OracleProgress {
  ProgressLine* line;
  std::string prefix;
  int64_t done, total;
  static void on_work(void* self, int64_t work) {
    auto* p = static_cast<OracleProgress*>(self);
    p->done += work;
    char pct[32];
    std::snprintf(pct, sizeof pct, " %.0f%%",
                  p->total > 0 ? 100.0 * static_cast<double>(p->done) / static_cast<double>(p->total) : 100.0);
    p->line->show(p->prefix + pct);
  }
};

StoredOutput oracle_output(const Case& c) {
  const Reference ref = oracle_fp64(c);
  StoredOutput o;
  o.producer = kOracleProducer;
  o.description = "float64 CPU oracle (vattn " VATTN_VERSION "), out stored as float32";
  o.out_is_bf16 = false;
  o.out.resize(ref.out.size());
  for (size_t i = 0; i < ref.out.size(); ++i) o.out[i] = static_cast<float>(ref.out[i]);
  o.lse.resize(ref.lse.size());
  for (size_t i = 0; i < ref.lse.size(); ++i) o.lse[i] = static_cast<float>(ref.lse[i]);
  return o;
}

}  // namespace

int cmd_gen(int argc, char** argv) {
  Args a = gen_args();
  Recipe base;
  long long count = 1;
  try {
    if (!a.parse(argc, argv)) return kExitOk;
    if (!a.has("output") || a.get("output").empty()) throw UsageError("-o FILE is required");
    if (const std::string why = write_target_problem(a.get("output")); !why.empty())
      throw UsageError("-o " + a.get("output") + ": " + why);
    base = recipe_from_options(a);
    count = a.get_int("cases", 1, 1, 100000);
    if (base.seed > UINT64_MAX - static_cast<uint64_t>(count - 1)) {
      throw UsageError("--seed " + std::to_string(base.seed) + " with --cases " + std::to_string(count) +
                       ": the seeds seed..seed+cases-1 do not fit in 64 bits");
    }
    // Held to the limits replay holds a case to, before anything is generated.
    try {
      (void)progress_interval_from_environment();
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
    apply_memory_option(a);
    apply_oracle_work_option(a);
    const std::string what = std::string(a.has("recipe") ? "--recipe" : "the requested shape") +
                             (count > 1 ? ", " + std::to_string(count) + " cases," : "");
    if (const std::string why = case_memory_problem(gen_memory_estimate(base, count), "generated, checked and written");
        !why.empty())
      throw UsageError(what + " " + why);
    if (const std::string why = oracle_work_problem(oracle_work(base.heads, base.prefix, base.drafts)); !why.empty())
      throw UsageError(what + (count > 1 ? " each" : "") + " " + why);
  } catch (const UsageError& e) {
    return a.usage_error(e.what());
  }

  CaseFileHeader header;
  header.source = "synthetic:" + base.profile;
  header.generator = "vattn " VATTN_VERSION;
  if (a.has("model")) header.optional["model"] = a.get("model");
  if (a.has("notes")) header.optional["notes"] = a.get("notes");

  std::vector<Case> cases;
  // Names sort in generation order (case-format.md): as many digits as the last index needs.
  const size_t width = std::max<size_t>(4, std::to_string(count - 1).size());
  // The oracle's share done on a long context: on a terminal, and in a log once it runs long.
  ProgressLine progress(true, "vattn gen");
  OracleProgress oracle_progress{&progress, "", 0, 0};
  for (long long k = 0; k < count; ++k) {
    Recipe r = base;
    r.seed = base.seed + static_cast<uint64_t>(k);
    std::string index = std::to_string(k);
    index.insert(0, width - index.size(), '0');
    const std::string name = "case" + index + "_seed" + std::to_string(r.seed);
    Case c;
    try {
      c = generate_case(r, name);
    } catch (const InputError& e) {
      if (e.field().empty())
        std::fprintf(stderr, "vattn gen: %s\n", e.what());
      else
        std::fprintf(stderr, "vattn gen: recipe field '%s': %s\n", e.field().c_str(), e.reason().c_str());
      return kExitBadInput;
    }
    oracle_progress.prefix = "case " + std::to_string(k + 1) + "/" + std::to_string(count) + " " + name + ": oracle";
    oracle_progress.done = 0;
    oracle_progress.total = oracle_work(c);
    progress.show(oracle_progress.prefix, true);
    set_oracle_progress(&OracleProgress::on_work, &oracle_progress);
    c.outputs.push_back(oracle_output(c));
    set_oracle_progress(nullptr, nullptr);
    cases.push_back(std::move(c));
  }
  progress.clear();
  const std::string path = a.get("output");
  write_case_file(write_target(path), header, cases);  // a link the user named is written through
  std::printf("wrote %s: %zu case%s (%s)\n", path.c_str(), cases.size(), cases.size() == 1 ? "" : "s",
              header.source.c_str());
  for (const auto& c : cases) std::printf("  %s  %s\n", c.name.c_str(), c.describe().c_str());
  return kExitOk;
}

}  // namespace vattn::cli
