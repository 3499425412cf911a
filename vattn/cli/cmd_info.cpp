// SPDX-License-Identifier: Apache-2.0
// vattn info: what a case file holds, one line per case, without computing anything.
#include <algorithm>
#include <cstdio>
#include <numeric>
#include <sstream>

#include "vattn/casefile/case_file.h"
#include "vattn/casefile/isolated_reader.h"
#include "vattn/cli/args.h"
#include "vattn/cli/commands.h"

namespace vattn::cli {

namespace {

// Short enough for one line: the list itself up to 8 requests, else its range and total.
std::string lengths(const std::vector<int>& v) {
  std::ostringstream os;
  if (v.size() <= 8) {
    os << '[';
    for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << v[i];
    os << ']';
  } else {
    const auto mm = std::minmax_element(v.begin(), v.end());
    os << '[' << *mm.first << ".." << *mm.second << " over " << v.size() << ", sum "
       << std::accumulate(v.begin(), v.end(), 0LL) << ']';
  }
  return os.str();
}

std::string header_line(const std::string& path, const CaseFileHeader& header, size_t cases) {
  std::ostringstream os;
  os << printable(path) << ": format " << kCaseFormatName << " v" << header.format_version << ", source "
     << printable(header.source) << ", created " << printable(header.created) << ", generator "
     << printable(header.generator);
  for (const char* key : {"model", "gpu"}) {
    const auto it = header.optional.find(key);
    if (it != header.optional.end()) os << ", " << key << " " << printable(it->second);
  }
  os << ", " << cases << " case" << (cases == 1 ? "" : "s");
  if (const auto it = header.optional.find("notes"); it != header.optional.end())
    os << "\n  notes: " << printable(it->second);
  return os.str();
}

std::string case_line(const Case& c) {
  std::vector<int> p, t;
  int padded = 0;
  for (int b = 0; b < c.num_requests(); ++b) {
    p.push_back(c.prefix_len(b));
    t.push_back(c.drafts(b));
    for (int i = 0; i < c.drafts(b); ++i) padded += c.visible(b, i, i) ? 0 : 1;
  }
  std::ostringstream os;
  os << "  " << printable(c.name) << "  B=" << c.num_requests() << " H=" << c.num_heads << " d_qk/d_v=" << c.d_qk << "/"
     << c.d_v << " P=" << lengths(p) << " T=" << lengths(t);
  if (padded) os << " padded=" << padded;
  char scale[32];
  std::snprintf(scale, sizeof scale, "%.9g", c.sm_scale);
  os << " rows=" << c.n_rows() << " sm_scale=" << scale;
  for (const auto& kv : c.int_attrs) os << " " << kv.first << "=" << kv.second;
  os << " outputs=";
  if (c.outputs.empty()) os << "(none)";
  for (size_t i = 0; i < c.outputs.size(); ++i) os << (i ? "," : "") << printable(c.outputs[i].producer);
  if (!c.recipe.empty()) os << "\n      recipe: " << printable(c.recipe);
  return os.str();
}

}  // namespace

int cmd_info(int argc, char** argv) {
  Args a("info", "FILE...",
         "Prints each case file's header (format, version, source, created, generator, model) and one\n"
         "line per case: name, B, H, d_qk/d_v, prefix and draft lengths, sm_scale, stored producers,\n"
         "and the recipe that re-creates a generated case. Every case is validated while reading.");
  a.positionals("FILE...", "case files (HDF5, schema: docs/case-format.md)", 1)
      .example("vattn info fixtures/*.h5", "list the fixtures");
  add_case_reading_options(a);
  try {
    if (!a.parse(argc, argv)) return kExitOk;
    apply_case_reading_options(a);
  } catch (const UsageError& e) {
    return a.usage_error(e.what());
  }
  int rc = kExitOk;
  for (const auto& path : a.positional()) {
    try {
      // One case at a time, in an isolated child (isolated_reader.h): the first line comes at once.
      IsolatedCaseReader reader(path, "");
      std::printf("%s\n", header_line(path, reader.header(), reader.case_count()).c_str());
      std::fflush(stdout);
      Case c;
      while (reader.next(c)) {
        std::printf("%s\n", case_line(c).c_str());
        std::fflush(stdout);
      }
    } catch (const std::exception& e) {
      const std::string msg = e.what();  // InputError names the file; anything else gets it here
      std::fprintf(stderr, "vattn info: %s%s\n", msg.find(path) == std::string::npos ? (path + ": ").c_str() : "",
                   msg.c_str());
      rc = kExitBadInput;
    }
  }
  return rc;
}

}  // namespace vattn::cli
