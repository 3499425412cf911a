// SPDX-License-Identifier: Apache-2.0
#include "vattn/fuzz/campaign/mix_file.h"


#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <system_error>
#include <tuple>

#include "vattn/case/case.h"
#include "vattn/case/fd_write.h"
#include "vattn/case/file_read.h"
#include "vattn/casefile/isolated_reader.h"
#include "vattn/fuzz/gen/stream_pick.h"
#include "vattn/fuzz/protocol/json_read.h"
#include "vattn/recipe/vocab.h"

namespace vattn::fuzz {

namespace fs = std::filesystem;

namespace {

// Larger than any table check_mix_table accepts, written out (4M requests of two numbers).
constexpr uintmax_t kMaxMixFileBytes = uintmax_t{128} << 20;

// Whether request b's mask is a chain: row i sees exactly the drafts 0..i.
bool is_chain(const Case& c, int b) {
  const int t = c.drafts(b);
  for (int i = 0; i < t; ++i)
    for (int j = 0; j < t; ++j)
      if (c.visible(b, i, j) != (j <= i)) return false;
  return true;
}

MixShape shape_of(const Case& c) {
  MixShape s;
  s.heads = c.num_heads;
  for (int b = 0; b < c.num_requests(); ++b) {
    s.prefix.push_back(c.prefix_len(b));
    s.drafts.push_back(c.drafts(b));
    s.tree = s.tree || !is_chain(c, b);
  }
  return s;
}

[[noreturn]] void bad(const std::string& path, const std::string& field, const std::string& why) {
  throw InputError(path, "", field, why);
}

int64_t int_of(const json& v, const std::string& path, const std::string& field, int64_t lo, int64_t hi) {
  if (!v.is_number_integer()) bad(path, field, "must be an integer");
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi))
    bad(path, field, "is outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  const int64_t x = v.get<int64_t>();
  if (x < lo || x > hi)
    bad(path, field, std::to_string(x) + " is outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return x;
}

const json& member(const json& o, const char* key, const std::string& path, const std::string& where) {
  const std::string field = where.empty() ? key : where + "." + key;
  if (!o.contains(key)) bad(path, field, "missing");
  return o.at(key);
}

std::vector<int> int_list(const json& v, const std::string& path, const std::string& field, int lo, int hi) {
  if (!v.is_array() || v.empty() || v.size() > static_cast<size_t>(vocab::kMaxBatch))
    bad(path, field, "must be an array of 1 to " + std::to_string(vocab::kMaxBatch) + " integers");
  std::vector<int> out;
  out.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    out.push_back(static_cast<int>(int_of(v[i], path, field + "[" + std::to_string(i) + "]", lo, hi)));
  return out;
}

}  // namespace

MixSource read_mix_dir(const std::string& dir, uint64_t seed) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw InputError(dir, "", "--mix-from", "is not a directory (captured case files)");
  std::vector<std::string> files;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    if (p.extension() == ".h5" && it->is_regular_file(ec)) files.push_back(p.string());
  }
  if (ec) throw InputError(dir, "", "--mix-from", "cannot be listed: " + ec.message());
  if (files.empty()) throw InputError(dir, "", "--mix-from", "holds no case files (*.h5)");
  std::sort(files.begin(), files.end());
  MixSource src;
  src.dir = fs::absolute(dir, ec).lexically_normal().string();
  if (ec) src.dir = dir;
  src.files = static_cast<int64_t>(files.size());
  // A uniform sample of every case read, whatever their number: a night of traffic is far more
  // than a table needs, and its first hour is not the night.
  Pick pick(gen::sub_seed(seed, 20, 0));
  std::vector<MixShape> sample;
  for (const std::string& f : files) {
    try {
      IsolatedCaseReader reader(f, "");
      Case c;
      while (reader.next(c)) {
        const MixShape s = shape_of(c);
        ++src.cases;
        if (sample.size() < kMaxMixShapes) {
          sample.push_back(s);
        } else {
          const auto j = static_cast<size_t>(pick.in(0, src.cases - 1));
          if (j < kMaxMixShapes) sample[j] = s;
        }
      }
    } catch (const InputError& e) {
      const std::string what = e.what();  // names the file when the reader knew it
      src.skipped.push_back(what.rfind(f, 0) == 0 ? what : f + ": " + what);
    }
  }
  if (sample.empty()) {
    throw InputError(dir, "", "--mix-from",
                     "none of its " + std::to_string(files.size()) + " case file(s) gave a readable case" +
                         (src.skipped.empty() ? std::string() : " (first: " + printable(src.skipped.front()) + ")"));
  }
  src.sampled = static_cast<int64_t>(sample.size());
  // Equal shapes as one entry with their count, in a fixed order.
  std::map<std::tuple<int, bool, std::vector<int>, std::vector<int>>, int64_t> counts;
  for (const MixShape& s : sample) ++counts[{s.heads, s.tree, s.prefix, s.drafts}];
  for (const auto& [key, n] : counts) {
    MixShape s;
    std::tie(s.heads, s.tree, s.prefix, s.drafts) = key;
    s.count = n;
    src.table.shapes.push_back(std::move(s));
  }
  src.table.share_percent = kMixSharePercent;
  check_mix_table(src.table, dir);
  return src;
}

json mix_to_json(const MixSource& source) {
  json shapes = json::array();
  for (const MixShape& s : source.table.shapes)
    shapes.push_back({{"H", s.heads}, {"P", s.prefix}, {"T", s.drafts}, {"tree", s.tree}, {"count", s.count}});
  return {{"schema", kMixSchema},      {"version", kMixVersion},
          {"source", source.dir},      {"files", source.files},
          {"cases", source.cases},     {"sampled", source.sampled},
          {"skipped", source.skipped}, {"share_percent", source.table.share_percent},
          {"shapes", shapes}};
}

std::string mix_digest(const std::string& bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : bytes) h = (h ^ c) * 0x100000001b3ull;
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, h);
  return buf;
}

std::string write_mix_file(const std::string& path, const json& doc) {
  const std::string text = doc.dump() + "\n";
  const std::string why = replace_file(path, text, Durability::kSynced);
  if (!why.empty()) throw InputError(path, "", "mix", why);
  return mix_digest(text);
}

MixTable load_mix_file(const std::string& path, const std::string& digest) {
  const std::string bytes = read_input_file(path, kMaxMixFileBytes, "mix");
  if (!digest.empty() && mix_digest(bytes) != digest)
    bad(path, "digest",
        "is " + mix_digest(bytes) + ", the journal recorded " + digest +
            ": the file changed since the campaign started, and the case stream with it");
  std::string why;
  const json j = parse_json_bounded<json>(bytes, &why);
  if (j.is_discarded() || !j.is_object()) bad(path, "mix", "is not a JSON object" + (why.empty() ? "" : ": " + why));
  if (!j.contains("schema") || j.at("schema") != kMixSchema)
    bad(path, "schema", std::string("must be '") + kMixSchema + "'");
  if (int_of(member(j, "version", path, ""), path, "version", 0, INT32_MAX) != kMixVersion)
    bad(path, "version", "this vattn reads mix version " + std::to_string(kMixVersion));
  MixTable t;
  t.share_percent = static_cast<int>(int_of(member(j, "share_percent", path, ""), path, "share_percent", 1, 100));
  const json& shapes = member(j, "shapes", path, "");
  if (!shapes.is_array()) bad(path, "shapes", "must be an array");
  if (shapes.size() > kMaxMixShapes)
    bad(path, "shapes",
        "has " + std::to_string(shapes.size()) + " entries, more than " + std::to_string(kMaxMixShapes));
  for (size_t i = 0; i < shapes.size(); ++i) {
    const std::string at = "shapes[" + std::to_string(i) + "]";
    const json& e = shapes[i];
    if (!e.is_object()) bad(path, at, "must be an object");
    MixShape s;
    s.heads = static_cast<int>(int_of(member(e, "H", path, at), path, at + ".H", 1, vocab::kMaxHeads));
    s.prefix = int_list(member(e, "P", path, at), path, at + ".P", 0, vocab::kMaxPrefix);
    s.drafts = int_list(member(e, "T", path, at), path, at + ".T", 1, vocab::kMaxDrafts);
    const json& tree = member(e, "tree", path, at);
    if (!tree.is_boolean()) bad(path, at + ".tree", "must be true or false");
    s.tree = tree.get<bool>();
    s.count = int_of(member(e, "count", path, at), path, at + ".count", 1, kMaxMixCount);
    t.shapes.push_back(std::move(s));
  }
  check_mix_table(t, path);
  return t;
}

}  // namespace vattn::fuzz
