// SPDX-License-Identifier: Apache-2.0
// `vattn fuzz --mix-from DIR` without the supervisor (vattn/fuzz/campaign/mix_file.h): a folder of
// case files written here becomes a shape table (B, H, P_b, T_b, chain or tree, counts), the case
// stream draws its share of cases shaped like it, mix.json round-trips and is refused when it
// was changed or does not hold a table, and folders with nothing to read are refused.
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/cpu/temp_dir.h"

#include "vattn/case/case.h"
#include "vattn/casefile/case_file.h"
#include "vattn/fuzz/campaign/mix_file.h"
#include "vattn/fuzz/gen/case_stream.h"
#include "vattn/gen/generate.h"

using vattn::InputError;
using vattn::Recipe;
using vattn::fuzz::CaseStream;
using vattn::fuzz::MixSource;
using vattn::fuzz::StreamConfig;
using vattn::test::TempDir;

namespace {

vattn::CaseFileHeader capture_header() {
  vattn::CaseFileHeader h;
  h.source = "capture:test";
  return h;
}

// Case files as a capture would leave them: a DDTree step of 32 drafts behind 1000 keys three
// times, a batch of two chains once, and a file that is not HDF5 at all.
void write_traffic(const TempDir& dir) {
  std::vector<vattn::Case> steps;
  for (int k = 0; k < 3; ++k) {
    Recipe r = Recipe::parse("B=1 H=8 P=[1000] T=[32] tree=ddtree seed=" + std::to_string(k + 1));
    steps.push_back(vattn::generate_case(r, "step" + std::to_string(k)));
  }
  vattn::write_case_file(dir.file("a.h5"), capture_header(), steps);
  const Recipe pair = Recipe::parse("B=2 H=8 P=[3000,700] T=[16,1] tree=chain seed=9");
  vattn::write_case_file(dir.file("b.h5"), capture_header(), {vattn::generate_case(pair, "pair")});
  std::ofstream(dir.file("c.h5")) << "not a case file\n";
  std::ofstream(dir.file("notes.txt")) << "ignored: not *.h5\n";
}

void refused(const std::function<void()>& f, const std::string& field, const std::string& text) {
  try {
    f();
    FAIL("accepted; expected a refusal of " << field);
  } catch (const InputError& e) {
    CHECK(e.field() == field);
    CHECK_THAT(e.what(), Catch::Contains(text));
  }
}

}  // namespace

TEST_CASE("mix-from: a folder of case files becomes a shape table that the stream follows", "[mix-from]") {
  TempDir dir("vattn_mix");
  write_traffic(dir);
  const MixSource src = vattn::fuzz::read_mix_dir(dir.path, 1);
  CHECK(src.files == 3);
  CHECK(src.cases == 4);
  CHECK(src.sampled == 4);
  REQUIRE(src.skipped.size() == 1);
  CHECK_THAT(src.skipped[0], Catch::Contains("c.h5"));
  REQUIRE(src.table.shapes.size() == 2);
  std::map<size_t, vattn::fuzz::MixShape> by_batch;
  for (const auto& s : src.table.shapes) by_batch[s.prefix.size()] = s;
  CHECK(by_batch[1].prefix == std::vector<int>{1000});
  CHECK(by_batch[1].drafts == std::vector<int>{32});
  CHECK(by_batch[1].tree);
  CHECK(by_batch[1].count == 3);
  CHECK(by_batch[2].prefix == std::vector<int>{3000, 700});
  CHECK(by_batch[2].drafts == std::vector<int>{16, 1});
  CHECK_FALSE(by_batch[2].tree);
  CHECK(by_batch[2].count == 1);
  for (const auto& s : src.table.shapes) CHECK(s.heads == 8);

  StreamConfig sc;
  sc.seed = 5;
  sc.device_variants = sc.plan_variants = true;
  sc.mix = std::make_shared<const vattn::fuzz::MixTable>(src.table);
  const CaseStream stream(sc);
  int64_t captured = 0, step = 0, pair = 0;
  for (int64_t i = 0; i < 4000; ++i) {
    const auto c = stream.at(i);
    if (c.family != "captured") continue;
    ++captured;
    const Recipe& r = c.recipe;
    CAPTURE(r.to_line());
    CHECK(r.heads == 8);
    if (r.prefix.size() == 1) {
      ++step;
      CHECK(r.drafts == std::vector<int>{32});
      CHECK(std::abs(r.prefix[0] - 1000) <= 1000 / 32);
      CHECK(r.tree != "chain");
    } else {
      ++pair;
      CHECK(r.drafts == std::vector<int>{16, 1});
      CHECK(std::abs(r.prefix[0] - 3000) <= 3000 / 32);
      CHECK(r.tree == "chain");
    }
  }
  CAPTURE(captured, step, pair);
  CHECK(captured > 1880);  // half of 4000
  CHECK(captured < 2120);
  CHECK(step > 3 * pair * 85 / 100);  // 3 : 1, as captured
  CHECK(step < 3 * pair * 115 / 100);
}

TEST_CASE("mix-from: mix.json round-trips and is refused when changed or malformed", "[mix-from]") {
  TempDir dir("vattn_mix");
  write_traffic(dir);
  const MixSource src = vattn::fuzz::read_mix_dir(dir.path, 1);
  TempDir camp("vattn_mix_camp");
  const std::string path = camp.file("mix.json");
  const std::string digest = vattn::fuzz::write_mix_file(path, vattn::fuzz::mix_to_json(src));
  const vattn::fuzz::MixTable back = vattn::fuzz::load_mix_file(path, digest);
  REQUIRE(back.shapes.size() == src.table.shapes.size());
  for (size_t i = 0; i < back.shapes.size(); ++i) {
    CHECK(back.shapes[i].prefix == src.table.shapes[i].prefix);
    CHECK(back.shapes[i].drafts == src.table.shapes[i].drafts);
    CHECK(back.shapes[i].heads == src.table.shapes[i].heads);
    CHECK(back.shapes[i].tree == src.table.shapes[i].tree);
    CHECK(back.shapes[i].count == src.table.shapes[i].count);
  }
  CHECK(back.share_percent == 50);
  // The journal's digest holds the file to what the campaign started with.
  refused([&] { vattn::fuzz::load_mix_file(path, "0000000000000000"); }, "digest", "changed since the campaign");
  // Untrusted fields: each named.
  auto doc_with = [&](const std::function<void(vattn::fuzz::json&)>& change) {
    vattn::fuzz::json j = vattn::fuzz::mix_to_json(src);
    change(j);
    std::ofstream(path) << j.dump();
  };
  auto refused_doc = [&](const std::function<void(vattn::fuzz::json&)>& change, const std::string& field,
                         const std::string& text) {
    doc_with(change);
    refused([&] { vattn::fuzz::load_mix_file(path, ""); }, field, text);
  };
  refused_doc([](auto& j) { j["schema"] = "other"; }, "schema", "vattn-fuzz-mix");
  refused_doc([](auto& j) { j["version"] = 2; }, "version", "version 1");
  refused_doc([](auto& j) { j["share_percent"] = 0; }, "share_percent", "outside [1, 100]");
  refused_doc([](auto& j) { j.erase("shapes"); }, "shapes", "missing");
  refused_doc([](auto& j) { j["shapes"] = vattn::fuzz::json::array(); }, "shapes", "is empty");
  refused_doc([](auto& j) { j["shapes"][1]["H"] = "eight"; }, "shapes[1].H", "must be an integer");
  refused_doc([](auto& j) { j["shapes"][0]["P"][0] = -5; }, "shapes[0].P[0]", "outside");
  refused_doc([](auto& j) { j["shapes"][0]["T"][0] = 1e30; }, "shapes[0].T[0]", "must be an integer");
  refused_doc([](auto& j) { j["shapes"][0]["T"] = {1, 2, 3}; }, "shapes[0].T", "entries");
  refused_doc([](auto& j) { j["shapes"][1]["count"] = 18446744073709551615ull; }, "shapes[1].count", "outside");
  refused_doc([](auto& j) { j["shapes"][1].erase("tree"); }, "shapes[1].tree", "missing");
  std::ofstream(path) << "{\"schema\": ";
  refused([&] { vattn::fuzz::load_mix_file(path, ""); }, "mix", "not a JSON object");
  refused([&] { vattn::fuzz::load_mix_file(camp.file("none.json"), ""); }, "mix",
          "cannot be opened: No such file or directory");
}

TEST_CASE("mix-from: folders with nothing to read are refused", "[mix-from]") {
  TempDir dir("vattn_mix");
  refused([&] { vattn::fuzz::read_mix_dir(dir.file("missing"), 1); }, "--mix-from", "is not a directory");
  refused([&] { vattn::fuzz::read_mix_dir(dir.path, 1); }, "--mix-from", "holds no case files");
  std::ofstream(dir.file("x.h5")) << "not a case file\n";
  refused([&] { vattn::fuzz::read_mix_dir(dir.path, 1); }, "--mix-from", "none of its 1 case file(s)");
}
