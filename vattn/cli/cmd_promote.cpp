// SPDX-License-Identifier: Apache-2.0
// vattn promote: a fuzz finding becomes a regression case. Its shrunk case file (inputs and the
// float64 oracle's output; the failing target's output is left behind, it is the bug) is copied
// into the regression corpus (fixtures/regressions/), which ctest replays: on the CPU against the
// stored oracle, on a GPU with the kernel. The file's notes say where it came from.
#include <cstdio>
#include <filesystem>
#include <system_error>

#include "vattn/case/case.h"
#include "vattn/case/file_read.h"
#include "vattn/casefile/case_file.h"
#include "vattn/cli/args.h"
#include "vattn/cli/commands.h"
#include "vattn/fuzz/protocol/json_read.h"
#include "vattn/fuzz/protocol/protocol.h"

namespace vattn::cli {

namespace fs = std::filesystem;
using fuzz::json;

namespace {

constexpr const char* kOracleProducer = "oracle_fp64";
// The corpus when --corpus is not given: the repository's, from its root (where the README's
// commands run). Relative on purpose: a compiled-in checkout path would name the build machine's
// tree in every installed vattn.
constexpr const char* kDefaultCorpus = "fixtures/regressions";

// What a promoted file says of where it came from, without the machine's paths: a kernel library
// by its file name ("fuzz:libmine.so"; a built-in revision or host target by its name), a finding
// by its campaign folder's name and its own ("night1/findings/002-wrong").
std::string kernel_label(const std::string& kernel) {
  return kernel.find('/') == std::string::npos ? kernel : fs::path(kernel).filename().string();
}
std::string finding_label(const std::string& finding_dir) {
  fs::path p = fs::absolute(finding_dir).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();  // "DIR/findings/002-wrong/"
  const fs::path campaign = p.parent_path().parent_path().filename();
  return (campaign / p.parent_path().filename() / p.filename()).string();
}

// A finding.json holds one finding and its investigation: kilobytes. A file past this is not one.
constexpr uint64_t kMaxFindingBytes = uint64_t{16} << 20;

json read_finding(const std::string& dir) {
  const std::string path = dir + "/finding.json";
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec)))
    throw InputError(path, "", "finding.json", "missing: not a finding directory (DIR/findings/NNN-<class>/)");
  std::string why;
  json j = fuzz::parse_json_bounded<json>(read_input_file(path, kMaxFindingBytes, "finding.json"), &why);
  if (j.is_discarded()) throw InputError(path, "", "finding.json", "is " + why);
  if (!j.is_object() || j.value("schema", "") != "vattn-fuzz-finding" || j.value("version", 0) != 1)
    throw InputError(path, "", "schema", "not a vattn-fuzz-finding version 1");
  return j;
}

// "wrong: vs oracle @ BUCKET" + recipe -> "wrong-vs-oracle-1a2b3c4d": readable, and stable for one
// recipe (the bucket is left out: it would be cut short, and the recipe's hash tells files apart).
std::string default_name(const json& finding, const std::string& recipe) {
  std::string slug;
  for (const char ch : fuzz::signature_check(finding.value("signature", "finding"))) {
    const bool word = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || (ch >= 'A' && ch <= 'Z');
    if (word)
      slug += static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
    else if (!slug.empty() && slug.back() != '-')
      slug += '-';
    if (slug.size() >= 48) break;
  }
  while (!slug.empty() && slug.back() == '-') slug.pop_back();
  uint32_t h = 2166136261u;  // FNV-1a of the recipe line
  for (const char ch : recipe) h = (h ^ static_cast<unsigned char>(ch)) * 16777619u;
  char hex[16];
  std::snprintf(hex, sizeof hex, "%08x", h);
  return slug + "-" + hex;
}

bool valid_name(const std::string& n) {
  if (n.empty() || n.size() > 100 || n[0] == '.' || n[0] == '-') return false;
  for (const char ch : n) {
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' ||
                    ch == '_' || ch == '.';
    if (!ok) return false;
  }
  return true;
}

// The corpus file that already holds a case with this recipe, or "".
std::string already_there(const std::string& corpus, const std::string& recipe) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(corpus, ec)) {
    if (e.path().extension() != ".h5") continue;
    try {
      for (const Case& c : read_case_file(e.path().string()).cases)
        if (c.recipe == recipe) return e.path().string();
    } catch (const InputError&) {
      // a broken corpus file is the corpus test's to report, not promote's
    }
  }
  return "";
}

}  // namespace

int cmd_promote(int argc, char** argv) {
  Args args("promote", "FINDING_DIR [--corpus DIR] [--name NAME] [--first]",
            "Copies a fuzz finding's shrunk case (FINDING_DIR/shrunk.h5: inputs and the float64 oracle's\n"
            "output) into the regression corpus, which ctest replays on the CPU (the stored oracle) and on\n"
            "a GPU (the kernel: test regressions_gpu). The target's failing output is not copied. The new\n"
            "file's notes name the campaign, the finding, its signature and its first case. A recipe that is\n"
            "already in the corpus is not added twice.");
  args.positionals("FINDING_DIR", "a finding of a campaign: DIR/findings/NNN-<class>", 1)
      .option("corpus", "DIR", "the regression folder",
              std::string(kDefaultCorpus) + ", which must exist: run from the repository's root")
      .option("name", "NAME", "file name without .h5 (letters, digits, - _ .)", "<signature>-<hash of the recipe>")
      .flag("first", "promote the first failing case (repro.h5) instead of the shrunk one")
      .example("vattn promote night1/findings/002-wrong", "adds fixtures/regressions/wrong-vs-oracle-1a2b3c4d.h5")
      .note("exit codes: 0 promoted (or already there), 2 not a finding directory, no repro file, or a bad name");
  std::string finding_dir, corpus, name;
  try {
    if (!args.parse(argc, argv)) return kExitOk;
    if (args.positional().size() != 1) throw UsageError("one finding directory, please");
    finding_dir = args.positional().front();
    corpus = args.get("corpus");
    if (corpus.empty()) {
      std::error_code ec;
      if (!fs::is_directory(kDefaultCorpus, ec))
        throw UsageError(std::string("no ") + kDefaultCorpus +
                         " here: run from the repository's root, or give --corpus DIR");
      corpus = kDefaultCorpus;
    }
    name = args.get("name");
    if (!name.empty() && !valid_name(name))
      throw UsageError("--name '" + printable(name) +
                       "': use letters, digits, '-', '_' and '.' (not first), at most 100");
  } catch (const UsageError& e) {
    return args.usage_error(e.what());
  }
  try {
    const json finding = read_finding(finding_dir);
    const std::string file_key = args.has("first") ? "repro" : "shrunk_repro";
    const std::string repro = finding.value(file_key, "");
    if (repro.empty() || repro.find('/') != std::string::npos)
      throw InputError(finding_dir + "/finding.json", "", file_key,
                       "names no repro file (the finding's investigation did not finish?)");
    CaseFile f = read_case_file(finding_dir + "/" + repro);
    if (f.cases.size() != 1)
      throw InputError(f.path, "", "cases", "a repro holds one case; this file has " + std::to_string(f.cases.size()));
    Case c = f.cases.front();
    std::vector<StoredOutput> keep;
    for (const StoredOutput& o : c.outputs)
      if (o.producer == kOracleProducer) keep.push_back(o);
    if (keep.empty())
      throw InputError(f.path, c.name, "outputs", "has no oracle_fp64 output: nothing to hold a kernel to");
    c.outputs = keep;
    fs::create_directories(corpus);
    if (const std::string there = already_there(corpus, c.recipe); !there.empty() && !c.recipe.empty()) {
      std::printf("vattn promote: this case is already in the corpus: %s (nothing written)\n", there.c_str());
      return kExitOk;
    }
    if (name.empty()) name = default_name(finding, c.recipe);
    const std::string out = corpus + "/" + name + ".h5";
    if (fs::exists(out)) throw InputError(out, "", "--name", "exists already (choose another --name)");
    c.name = name;
    const json first = finding.value("first_case", json::object());
    CaseFileHeader h;
    h.source = "fuzz:" + kernel_label(finding.value("kernel", "unknown"));
    h.optional["notes"] = "regression case promoted from " + finding_label(finding_dir) + ": finding " +
                          finding.value("id", "?") + ", " + finding.value("signature", "?") + " (x" +
                          std::to_string(finding.value("count", int64_t{0})) + "), first seen on case " +
                          std::to_string(first.value("index", int64_t{-1})) + ": " + first.value("recipe", "") +
                          (args.has("first") ? "" : "; this is its shrunk case");
    write_case_file(out, h, {c});
    (void)read_case_file(out);  // what ctest will read: it must validate
    std::printf("vattn promote: %s -> %s\n  case %s: %s\n  ctest replays it (tests regressions_cpu, regressions_gpu)\n",
                finding_dir.c_str(), out.c_str(), name.c_str(), printable(c.recipe).c_str());
  } catch (const InputError& e) {
    std::fprintf(stderr, "vattn promote: %s\n", e.what());
    return kExitBadInput;
  } catch (const fs::filesystem_error& e) {
    std::fprintf(stderr, "vattn promote: %s\n", e.what());
    return kExitBadInput;
  }
  if (std::fflush(stdout) != 0) return kExitBadInput;
  return kExitOk;
}

}  // namespace vattn::cli
