// SPDX-License-Identifier: Apache-2.0
// Bounded work and memory (issue 51): files the suite is handed are regular files of bounded size
// (vattn/case/file_read.h), JSON nested no deeper than json_read.h allows, a ledger of 200,000
// entries loads in well under a second (its time is printed), and a recipe over --max-memory or a
// case over --max-oracle-work is refused before anything is allocated or computed.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/cpu/temp_dir.h"

#include "vattn/case/case.h"
#include "vattn/case/fd_write.h"
#include "vattn/case/file_read.h"
#include "vattn/case/memory_limit.h"
#include "vattn/fuzz/campaign/ledger.h"
#include "vattn/fuzz/protocol/json_read.h"
#include "vattn/fuzz/protocol/protocol.h"
#include "vattn/gen/generate.h"
#include "vattn/oracle/cpu_oracle.h"

using vattn::Case;
using vattn::InputError;
using vattn::read_input_file;
using vattn::fuzz::json;
using vattn::fuzz::Ledger;
using vattn::test::TempDir;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The reason of the InputError `f` throws (FAIL when it throws none), after checking it names `path`.
template <class F>
std::string refusal(F&& f, const std::string& path) {
  try {
    f();
  } catch (const InputError& e) {
    CHECK(e.file() == path);
    CHECK_THAT(e.what(), Catch::Contains(path));
    return e.reason();
  }
  FAIL("no InputError for " + path);
  return "";
}

std::string nested(int depth) { return std::string(static_cast<size_t>(depth), '[') + std::string(depth, ']'); }

}  // namespace

TEST_CASE("read_input_file: a regular file is read whole and anything else is refused at once", "[bounds]") {
  TempDir dir;
  const std::string file = dir.file("small.json");
  std::ofstream(file) << "{\"a\": 1}\n";
  CHECK(read_input_file(file, 1024, "f") == "{\"a\": 1}\n");
  // A link to a regular file is read (a ledger kept elsewhere).
  const std::string link = dir.file("link.json");
  std::filesystem::create_symlink(file, link);
  CHECK(read_input_file(link, 1024, "f") == "{\"a\": 1}\n");

  CHECK_THAT(refusal([&] { read_input_file(file, 4, "f"); }, file),
             Catch::Contains("is 9 bytes, more than such a file may hold (4 bytes)"));
  CHECK_THAT(refusal([&] { read_input_file(dir.path, 1024, "f"); }, dir.path), Catch::Contains("is a directory"));
  CHECK_THAT(refusal([&] { read_input_file(dir.file("absent"), 1024, "f"); }, dir.file("absent")),
             Catch::Contains("No such file or directory"));
  // /dev/zero never ends and a FIFO without a writer never answers: both refused before a read.
  const auto t0 = Clock::now();
  CHECK_THAT(refusal([&] { read_input_file("/dev/zero", 1 << 20, "f"); }, "/dev/zero"),
             Catch::Contains("not a regular file"));
  const std::string fifo = dir.file("fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THAT(refusal([&] { read_input_file(fifo, 1 << 20, "f"); }, fifo), Catch::Contains("not a regular file"));
  CHECK(seconds_since(t0) < 5);
  // A file of gigabytes (sparse: no disk used) is refused from its size alone.
  const std::string huge = dir.file("huge.json");
  std::ofstream(huge).close();
  std::filesystem::resize_file(huge, uint64_t{8} << 30);
  CHECK_THAT(refusal([&] { read_input_file(huge, 1 << 20, "f"); }, huge),
             Catch::Contains("is 8589934592 bytes, more than such a file may hold (1 MiB)"));
}

TEST_CASE("parse_json_bounded: nesting past the limit is refused while parsing and never overflows the stack",
          "[bounds]") {
  std::string why;
  const json ok = vattn::fuzz::parse_json_bounded<json>(nested(vattn::fuzz::kMaxJsonDepth), &why);
  REQUIRE_FALSE(ok.is_discarded());
  CHECK(json(ok) == ok);  // a copy and a comparison recurse once per level: fine at the limit
  CHECK(vattn::fuzz::parse_json_bounded<json>(nested(vattn::fuzz::kMaxJsonDepth + 1), &why).is_discarded());
  CHECK(why == "nested deeper than 64 levels");
  // A million levels: refused quickly (the callback stops the parser at level 65).
  const auto t0 = Clock::now();
  why.clear();
  CHECK(vattn::fuzz::parse_json_bounded<json>(nested(1000000), &why).is_discarded());
  CHECK(why == "nested deeper than 64 levels");
  CHECK(seconds_since(t0) < 5);
  // Objects count as arrays do; the ordered flavour (the CLI's reports) too.
  std::string deep_object;
  for (int i = 0; i < 100; ++i) deep_object += "{\"a\":";
  deep_object += "1" + std::string(100, '}');
  CHECK(vattn::fuzz::parse_json_bounded<nlohmann::ordered_json>(deep_object, &why).is_discarded());
  CHECK(why == "nested deeper than 64 levels");
  CHECK(vattn::fuzz::parse_json_bounded<json>("{\"a\": [1, 2", &why).is_discarded());
  CHECK_THAT(why, Catch::StartsWith("not valid JSON (") && Catch::Contains("parse error"));
}

TEST_CASE("LineReader: a worker line nested 200000 deep is garbled and not a message", "[bounds]") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  std::thread writer([&] {
    const std::string line = "{\"ev\":" + nested(200000) + "}\n{\"ev\":\"hb\"}\n";
    vattn::write_all(fds[1], line.data(), line.size());
    ::close(fds[1]);
  });
  vattn::fuzz::LineReader reader;
  std::vector<json> messages;
  json m;
  while (true) {
    while (reader.next(m)) messages.push_back(m);
    if (!reader.fill(fds[0])) break;
  }
  while (reader.next(m)) messages.push_back(m);
  writer.join();
  ::close(fds[0]);
  REQUIRE(messages.size() == 2);
  CHECK(messages[0].at("ev") == "garbled");
  CHECK(messages[1].at("ev") == "hb");
}

TEST_CASE("Ledger::load: /dev/zero or a FIFO or a directory or a huge or deeply nested file is refused naming it",
          "[bounds]") {
  TempDir dir;
  const std::string fifo = dir.file("fifo.json");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  for (const std::string& path : {std::string("/dev/zero"), fifo, dir.path}) {
    const std::string why = refusal([&] { Ledger::load(path); }, path);
    CHECK_THAT(why, Catch::Contains("not a regular file") || Catch::Contains("is a directory"));
  }
  const std::string huge = dir.file("huge.json");
  std::ofstream(huge).close();
  std::filesystem::resize_file(huge, vattn::fuzz::kMaxLedgerBytes + 1);
  CHECK_THAT(refusal([&] { Ledger::load(huge); }, huge), Catch::Contains("more than such a file may hold (64 MiB)"));
  const std::string deep = dir.file("deep.json");
  std::ofstream(deep) << R"({"schema": "vattn-fuzz-ledger", "version": 2, "entries": [{"signature": "s", "reason": )"
                      << nested(100000) << "}]}";
  CHECK_THAT(refusal([&] { Ledger::load(deep); }, deep), Catch::Contains("nested deeper than 64 levels"));
}

TEST_CASE("Ledger::load: 200000 entries in well under a second and a repeat still names both entries", "[bounds]") {
  TempDir dir;
  const std::string path = dir.file("big.json");
  constexpr int kEntries = 200000;
  {
    std::ofstream out(path);
    out << R"({"schema": "vattn-fuzz-ledger", "version": 2, "entries": [)";
    for (int i = 0; i < kEntries; ++i)
      out << (i ? ",\n" : "\n") << R"({"signature": "wrong: vs oracle @ values heads=some rows=)" << i
          << R"(", "kernel": "split-v*", "reason": "tolerated bucket )" << i << R"(", "added": "test"})";
    out << "]}\n";
  }
  auto t0 = Clock::now();
  Ledger l = Ledger::load(path);
  const double load_s = seconds_since(t0);
  REQUIRE(l.entries().size() == kEntries);
  t0 = Clock::now();
  const vattn::fuzz::LedgerEntry* hit = l.match("wrong: vs oracle @ values heads=some rows=199999", "split-v2");
  const double match_s = seconds_since(t0);
  REQUIRE(hit != nullptr);
  CHECK(hit->reason == "tolerated bucket 199999");
  std::printf("ledger of %d entries (%.1f MB): loaded in %.3f s, its last entry matched in %.4f s\n", kEntries,
              static_cast<double>(std::filesystem::file_size(path)) / 1e6, load_s, match_s);
  CHECK(load_s < 5.0);  // generous for sanitizer builds; the number printed above is the measure

  std::ofstream(path) << R"({"schema": "vattn-fuzz-ledger", "version": 2, "entries": [
    {"signature": "a", "reason": "r"}, {"signature": "b", "reason": "r"}, {"signature": "a", "reason": "again"}]})";
  try {
    Ledger::load(path);
    FAIL("a repeated entry was accepted");
  } catch (const InputError& e) {
    CHECK(e.field() == "entries[2]");
    CHECK_THAT(e.reason(), Catch::Contains("repeats the entry for 'a' on kernel '*' (entries[0])"));
  }
}

TEST_CASE("generate_case and the CPU oracles refuse work over their limits before they start", "[bounds]") {
  // 60 GiB with its oracle: refused from the line alone, before a byte is allocated.
  const vattn::Recipe huge = vattn::Recipe::parse("B=1 H=1024 P=[0] T=[4096]");
  CHECK(vattn::recipe_memory_estimate(huge) > (uint64_t{60} << 30));
  vattn::set_case_memory_limit(uint64_t{8} << 30);
  try {
    vattn::generate_case(huge, "huge");
    FAIL("a 60 GiB case was generated");
  } catch (const InputError& e) {
    CHECK(e.case_name() == "huge");
    CHECK_THAT(e.reason(),
               Catch::Contains("to be generated and checked, more than the limit of 8.00 GiB (--max-memory)"));
  }
  vattn::set_case_memory_limit(0);
  // A file may claim a negative dim (num_heads = -1): no estimate then (validate() names the dim),
  // never a negative number cast to a huge one.
  CHECK(vattn::case_memory_estimate(4, -1, 576, 512, 10, 10, 16, 1) == 0);

  const Case c = vattn::generate_case(vattn::Recipe::parse("B=2 H=4 P=[100,7] T=[5,3]"), "small");
  CHECK(vattn::oracle_work(c) == 5 * 4 * 105 + 3 * 4 * 10);
  vattn::set_oracle_work_limit(vattn::oracle_work(c) - 1);
  CHECK_THAT(vattn::oracle_work_problem(vattn::oracle_work(c)), Catch::Contains("(--max-oracle-work)"));
  for (int which = 0; which < 2; ++which) {
    try {
      (void)(which == 0 ? vattn::oracle_fp64(c) : vattn::reference_bf16_emulated(c));
      FAIL("the oracle ran past its limit");
    } catch (const InputError& e) {
      CHECK(e.case_name() == "small");
      CHECK_THAT(e.reason(), Catch::Contains("units of CPU-oracle work") && Catch::Contains("(--max-oracle-work)"));
    }
  }
  vattn::set_oracle_work_limit(vattn::oracle_work(c));
  CHECK(vattn::oracle_fp64(c).out.size() == static_cast<size_t>(c.n_q()) * 4 * 512);
  vattn::set_oracle_work_limit(0);
  CHECK(vattn::oracle_work_limit() == vattn::kDefaultOracleWorkLimit);
  // The work saturates rather than wraps.
  CHECK(vattn::oracle_work(1024, std::vector<int>(65536, 1 << 30), std::vector<int>(65536, 4096)) == INT64_MAX);
}
