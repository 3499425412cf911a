// SPDX-License-Identifier: Apache-2.0
// The campaign's pure logic (vattn/fuzz/campaign): an Investigation fed synthetic verdicts (confirm,
// shrink, budgets, the repro it keeps), the case stream's determinism (seed, index) -> recipe,
// and the journal read back after a kill (a torn last line skipped, then cut by open_append).
// The processes around them (supervisor, workers) are tested through `vattn fuzz` in tests/cli.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <string>

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "tests/cpu/temp_dir.h"

#include "vattn/case/bf16.h"
#include "vattn/case/case.h"
#include "vattn/fuzz/campaign/coverage.h"
#include "vattn/fuzz/campaign/investigation.h"
#include "vattn/fuzz/campaign/journal.h"
#include "vattn/fuzz/campaign/kernel_identity.h"
#include "vattn/fuzz/gen/case_stream.h"
#include "vattn/fuzz/gen/gen_recipe.h"
#include "vattn/fuzz/protocol/protocol.h"
#include "vattn/gen/generate.h"
#include "vattn/testbed/partials.h"

using vattn::InputError;
using vattn::Recipe;
using vattn::fuzz::CaseStream;
using vattn::fuzz::Investigation;
using vattn::fuzz::InvestigationLimits;
using vattn::fuzz::StreamConfig;
using vattn::fuzz::Verdict;

namespace {

using vattn::test::TempDir;

const char* kStart =
    "B=2 H=3 P=[64,5] T=[25,17] tree=wide profile=k26 layout=reversed poison=1 seed=1910826897 "
    "scale=0.1446796 splits=2";

Verdict failing(const std::string& verdict, const std::string& check, const std::string& repro = "") {
  Verdict v;
  v.verdict = verdict;
  v.check = check;
  v.detail = check + " while running the code under test";
  v.repro = repro;
  return v;
}

Verdict passing() { return Verdict{}; }

bool has_draft(const Recipe& r, int t) {
  for (int x : r.drafts)
    if (x == t) return true;
  return false;
}

// Runs an investigation to its end, answering each recipe with `answer`; returns the runs made.
int drive(Investigation& inv, const std::function<Verdict(const Recipe&)>& answer, int max_steps = 10000) {
  int fed = 0;
  while (auto r = inv.next()) {
    REQUIRE(fed < max_steps);
    inv.feed(answer(*r));
    ++fed;
  }
  return fed;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

TEST_CASE("fuzz campaign: an investigation shrinks a wrong answer to the simplest recipe that keeps it",
          "[fuzz-campaign]") {
  const Verdict first = failing("wrong", "vs oracle_fp64", "/tmp/first.h5");
  Investigation inv(first, Recipe::parse(kStart), /*confirm_first=*/false, InvestigationLimits{});
  CHECK(inv.signature() == "wrong: vs oracle_fp64");
  CHECK_FALSE(inv.fresh_process());  // a wrong answer does not take the worker down
  CHECK(inv.confirmed());            // nothing to confirm for this class
  REQUIRE_FALSE(inv.done());
  int n = 0;
  const int fed = drive(inv, [&n](const Recipe& r) {
    ++n;
    return r.heads == 3 ? failing("wrong", "vs oracle_fp64", "/tmp/step" + std::to_string(n) + ".h5") : passing();
  });
  CHECK(inv.done());
  CHECK_FALSE(inv.next().has_value());
  CHECK(inv.runs() == fed);
  CHECK(inv.steps() >= 1);
  CHECK(inv.stop_reason() == "no simpler recipe fails the same way");
  CHECK(inv.shrunk().to_line() ==
        "B=1 H=3 P=[0] T=[1] tree=chain profile=uniform layout=contiguous poison=0 seed=1 scale=0.1446796 splits=0");
  // The repro kept is the one of the last accepted step, not the first case's.
  CHECK(starts_with(inv.shrunk_repro(), "/tmp/step"));
  // Feeding after the end changes nothing.
  inv.feed(failing("wrong", "vs oracle_fp64"));
  CHECK(inv.runs() == fed);
}

TEST_CASE("fuzz campaign: an investigation accepts only candidates that fail with the same signature",
          "[fuzz-campaign]") {
  Investigation inv(failing("wrong", "vs oracle_fp64"), Recipe::parse(kStart), false, InvestigationLimits{});
  // Every candidate fails, but with another signature: none is a step.
  drive(inv, [](const Recipe&) { return failing("wrong", "fp32 partials"); });
  CHECK(inv.done());
  CHECK(inv.steps() == 0);
  CHECK(inv.shrunk().to_line() == Recipe::parse(kStart).to_line());
  CHECK(inv.stop_reason() == "no simpler recipe fails the same way");
}

TEST_CASE("fuzz campaign: a crash is confirmed in a fresh process first, then shrunk", "[fuzz-campaign]") {
  const Verdict first = failing("crash", "signal 11 (SIGSEGV)");
  CHECK(first.signature() == "crash: signal 11 (SIGSEGV)");
  Investigation inv(first, Recipe::parse(kStart), /*confirm_first=*/true, InvestigationLimits{});
  CHECK(inv.fresh_process());
  CHECK_FALSE(inv.confirmed());
  REQUIRE(inv.next().has_value());
  CHECK(inv.next()->to_line() == Recipe::parse(kStart).to_line());  // the confirmation re-runs the first recipe
  bool first_run = true;
  drive(inv, [&first_run](const Recipe& r) {
    if (first_run) {
      first_run = false;
      CHECK(r.to_line() == Recipe::parse(kStart).to_line());
    }
    return has_draft(r, 17) ? failing("crash", "signal 11 (SIGSEGV)") : passing();
  });
  CHECK(inv.confirmed());
  CHECK(starts_with(inv.shrunk().to_line(), "B=1 H=1 P=[0] T=[17] "));
  CHECK(inv.stop_reason() == "no simpler recipe fails the same way");
}

TEST_CASE("fuzz campaign: a crash that fresh processes do not repeat is not confirmed and not shrunk",
          "[fuzz-campaign]") {
  SECTION("every re-run passes: three fresh runs, then no finding") {
    Investigation inv(failing("crash", "signal 11 (SIGSEGV)"), Recipe::parse(kStart), true, InvestigationLimits{});
    CHECK(drive(inv, [](const Recipe& r) {
            CHECK(r.to_line() == Recipe::parse(kStart).to_line());  // each confirmation run is the first recipe
            return passing();
          }) == 3);
    CHECK_FALSE(inv.confirmed());
    CHECK(inv.steps() == 0);
    CHECK(inv.shrunk().to_line() == Recipe::parse(kStart).to_line());
    CHECK(inv.stop_reason() == "not confirmed: not repeated: 3 fresh run(s) of the same recipe, the last a pass");
  }
  SECTION("resource errors are no repetition either") {
    Investigation inv(failing("hang", "deadline passed"), Recipe::parse(kStart), true, InvestigationLimits{});
    CHECK(drive(inv, [](const Recipe&) { return failing("resource", "device memory"); }) == 3);
    CHECK_FALSE(inv.confirmed());
  }
}

TEST_CASE("fuzz campaign: a timing-dependent fault is confirmed by any failure of the same recipe", "[fuzz-campaign]") {
  SECTION("the second fresh run fails another way: confirmed, and shrunk by the first signature") {
    Investigation inv(failing("hang", "deadline passed"), Recipe::parse(kStart), true, InvestigationLimits{});
    int run = 0;
    drive(inv, [&run](const Recipe& r) {
      ++run;
      if (run == 1) return passing();
      if (run == 2) return failing("crash", "signal 6 (SIGABRT)");
      return has_draft(r, 17) ? failing("hang", "deadline passed") : passing();
    });
    CHECK(inv.confirmed());
    CHECK(inv.confirmation() == "repeated as crash: signal 6 (SIGABRT) in fresh run 2 of 3");
    CHECK(starts_with(inv.shrunk().to_line(), "B=1 H=1 P=[0] T=[17] "));
  }
  SECTION("the first fresh run repeats it") {
    Investigation inv(failing("crash", "signal 11 (SIGSEGV)"), Recipe::parse(kStart), true, InvestigationLimits{});
    inv.feed(failing("crash", "signal 11 (SIGSEGV)"));
    CHECK(inv.confirmed());
    CHECK(inv.confirmation() == "repeated in fresh run 1 of 3");
  }
}

TEST_CASE("fuzz campaign: an investigation stops at its run and time budgets", "[fuzz-campaign]") {
  InvestigationLimits lim;
  lim.max_runs = 3;
  Investigation inv(failing("crash", "signal 11 (SIGSEGV)"), Recipe::parse(kStart), true, lim);
  CHECK(drive(inv, [](const Recipe&) { return passing(); }) == 3);  // not confirmed after its three fresh runs
  CHECK_FALSE(inv.confirmed());
  Investigation busy(failing("wrong", "vs oracle_fp64"), Recipe::parse(kStart), false, lim);
  CHECK(drive(busy, [](const Recipe&) { return passing(); }) == 3);
  CHECK(busy.runs() == 3);
  CHECK(busy.stop_reason() == "run budget spent (3 runs)");

  Investigation late(failing("wrong", "vs oracle_fp64"), Recipe::parse(kStart), false, InvestigationLimits{10, 5});
  REQUIRE(late.next().has_value());
  late.out_of_time();
  CHECK(late.done());
  CHECK_FALSE(late.next().has_value());
  CHECK(late.stop_reason() == "time budget spent (5 s)");
}

TEST_CASE("fuzz campaign: a finding keeps the run parameters it needs and drops the others", "[fuzz-campaign]") {
  Recipe r = Recipe::parse(kStart);
  r.slot_base = 5000000;
  r.fault = "index-neg";
  const Verdict first = failing("device-error", "error word");
  SECTION("a failure that needs the relocated pool and the fault keeps both") {
    Investigation inv(first, r, false, InvestigationLimits{});
    drive(inv, [](const Recipe& c) {
      return c.slot_base == 5000000 && c.fault == "index-neg" ? failing("device-error", "error word") : passing();
    });
    CHECK(inv.shrunk().slot_base == 5000000);
    CHECK(inv.shrunk().fault == "index-neg");
    CHECK(starts_with(inv.shrunk().to_line(), "B=1 H=1 P=[0] T=[1] tree=chain "));  // the rest still shrinks
  }
  SECTION("a failure that needs neither is shrunk to the ordinary pool without a fault") {
    Investigation inv(first, r, false, InvestigationLimits{});
    drive(inv, [](const Recipe&) { return failing("device-error", "error word"); });
    CHECK(inv.shrunk().slot_base == 0);
    CHECK(inv.shrunk().fault == "none");
  }
}

TEST_CASE("fuzz campaign: the classes that can take a worker down get fresh processes", "[fuzz-campaign]") {
  CHECK(vattn::fuzz::takes_worker_down("crash"));
  CHECK(vattn::fuzz::takes_worker_down("hang"));
  CHECK(vattn::fuzz::takes_worker_down("died"));
  CHECK_FALSE(vattn::fuzz::takes_worker_down("wrong"));
  CHECK_FALSE(vattn::fuzz::takes_worker_down("device-error"));
  CHECK_FALSE(vattn::fuzz::takes_worker_down("pass"));
}

TEST_CASE("fuzz campaign: the case stream is a pure function of (seed, index)", "[fuzz-campaign]") {
  for (const char* budget : {"small", "medium", "large"}) {
    INFO("budget " << budget);
    StreamConfig sc;
    sc.seed = 9;
    sc.budget = budget;
    const CaseStream a(sc), b(sc);
    std::set<std::string> lines;
    for (int64_t i = 199; i >= 0; --i) {  // b in the other order: no state carries from one index to the next
      const auto ca = a.at(199 - i), cb = b.at(199 - i), again = a.at(199 - i);
      REQUIRE(ca.recipe.to_line() == cb.recipe.to_line());
      REQUIRE(ca.recipe.to_line() == again.recipe.to_line());
      CHECK(ca.index == 199 - i);
      CHECK(ca.work == vattn::recipe_work(ca.recipe));
      lines.insert(ca.recipe.to_line());
    }
    CHECK(lines.size() >= 190);  // different indices: (almost always) different recipes
    for (int64_t i = 0; i < 200; ++i) CHECK(b.at(i).recipe.to_line() == a.at(i).recipe.to_line());
  }
}

TEST_CASE("fuzz campaign: another seed is another stream, and the budget decides the mix", "[fuzz-campaign]") {
  StreamConfig s1, s2;
  s1.budget = s2.budget = "small";
  s1.seed = 1;
  s2.seed = 2;
  const CaseStream a(s1), b(s2);
  int same = 0;
  for (int64_t i = 0; i < 100; ++i) same += a.at(i).recipe.to_line() == b.at(i).recipe.to_line();
  CHECK(same <= 5);
  // small: short cases inside the small budget, no device-side variants
  for (int64_t i = 0; i < 300; ++i) {
    const auto c = a.at(i);
    CHECK_FALSE(c.long_context);
    CHECK(c.recipe.slot_base == 0);
    CHECK(c.recipe.fault == "none");
    CHECK_NOTHROW(vattn::check_within_budget(c.recipe, a.envelope()));
  }
  // large: about 20% long-context cases (one P_b >= 65536) and 40% serving-shaped ones, every
  // recipe inside the envelope (tests/cpu/test_case_stream.cpp counts the shares closely)
  StreamConfig big;
  big.seed = 3;
  big.budget = "large";
  const CaseStream l(big);
  int longs = 0, serving = 0;
  for (int64_t i = 0; i < 400; ++i) {
    const auto c = l.at(i);
    longs += vattn::fuzz::size_class(c) == "long";
    serving += vattn::fuzz::size_class(c) == "serving";
    if (vattn::fuzz::size_class(c) == "long") CHECK(c.long_context);
    CHECK_NOTHROW(vattn::check_within_budget(c.recipe, l.envelope()));
  }
  CHECK(longs > 50);
  CHECK(longs < 110);
  CHECK(serving > 120);
  CHECK(serving < 200);
  StreamConfig bad;
  bad.budget = "huge";
  CHECK_THROWS_AS(CaseStream(bad), InputError);
}

TEST_CASE("fuzz campaign: a journal with a torn last line reads back without it and open_append cuts it",
          "[fuzz-campaign]") {
  TempDir dir;
  const std::string path = dir.path + "/journal.jsonl";
  {
    std::ofstream out(path);
    out << R"({"t":"campaign","schema":"vattn-fuzz-journal","version":1,"kernel":"host:faulty","seed":9,)"
        << R"("budget":"small","cases":10})"
        << "\n"
        << R"({"t":"run","run":1,"resumed":false})"
        << "\n"
        << R"({"t":"case","i":0,"v":"pass","c":"short"})"
        << "\n"
        << R"({"t":"case","i":1,"v":"wrong","c":"short","sig":"wrong: vs oracle_fp64","f":"001"})"
        << "\n"
        << R"({"t":"finding","id":"001","sig":"wrong: vs oracle_fp64","dir":"findings/001-wrong","recipe":"B=1 H=3 P=[0] T=[1]"})"
        << "\n"
        << R"({"t":"case","i":2,"v":"wrong","c":"short","sig":"wrong: vs oracle_fp64","f":"001"})"
        << "\n"
        << R"({"t":"tick","run":1,"elapsed_s":5.0,"cases":3})"
        << "\n"
        << R"({"t":"case","i":3,"v":"pass","c":"sh)";  // the kill came inside this write
  }
  auto st = vattn::fuzz::read_journal(path);
  CHECK(st.torn_lines == 1);
  CHECK(st.done == std::set<int64_t>{0, 1, 2});
  CHECK(st.by_verdict["pass"] == 1);
  CHECK(st.by_verdict["wrong"] == 2);
  CHECK(st.by_class["short"] == 3);
  CHECK(st.hits["001"] == 2);
  CHECK(st.findings.size() == 1);
  CHECK(st.finding_done.empty());
  CHECK(st.runs == 1);
  CHECK(st.seconds == Approx(5.0));
  CHECK(st.campaign.value("seed", 0) == 9);
  {
    vattn::fuzz::Journal j;
    j.open_append(path);
    j.append({{"t", "run"}, {"run", 2}, {"resumed", true}});
    j.append({{"t", "case"}, {"i", 3}, {"v", "pass"}, {"c", "short"}});
    j.append({{"t", "end"}, {"run", 2}, {"elapsed_s", 1.5}});
  }
  st = vattn::fuzz::read_journal(path);
  CHECK(st.torn_lines == 0);  // the torn line is gone, and the next line started clean
  CHECK(st.done == std::set<int64_t>{0, 1, 2, 3});
  CHECK(st.runs == 2);
  CHECK(st.seconds == Approx(6.5));
  std::ifstream in(path);
  std::string line, last;
  int lines = 0;
  while (std::getline(in, line)) {
    ++lines;
    last = line;
  }
  CHECK(lines == 10);
  CHECK(last.find("\"end\"") != std::string::npos);
}

TEST_CASE("fuzz campaign: read_journal refuses what is not a campaign journal, naming the file", "[fuzz-campaign]") {
  TempDir dir;
  const std::string path = dir.path + "/journal.jsonl";
  auto message_of = [&path]() -> std::string {
    try {
      vattn::fuzz::read_journal(path);
    } catch (const InputError& e) {
      CHECK(e.file() == path);
      return e.what();
    }
    return "(no error)";
  };
  CHECK_THAT(message_of(), Catch::Contains("no such journal"));
  std::ofstream(path) << "";
  CHECK_THAT(message_of(), Catch::Contains("empty"));
  std::ofstream(path) << R"({"t":"run","run":1})"
                      << "\n";
  CHECK_THAT(message_of(), Catch::Contains("not a vattn fuzz campaign line"));
  std::ofstream(path) << R"({"t":"campaign","schema":"vattn-fuzz-journal","version":2})"
                      << "\n";
  CHECK_THAT(message_of(), Catch::Contains("journal version 2"));
  vattn::fuzz::Journal j;
  CHECK_THROWS_AS(j.create(path), InputError);  // create refuses an existing journal
}

TEST_CASE("fuzz campaign: read_journal counts each case index once and names the lines it skips", "[fuzz-campaign]") {
  TempDir dir;
  const std::string path = dir.file("journal.jsonl");
  {
    std::ofstream out(path);
    out << R"({"t":"campaign","schema":"vattn-fuzz-journal","version":1,"kernel":"host:faulty","seed":9,"budget":"small","cases":10})"
        << "\n"
        << R"({"t":"run","run":1,"resumed":false})"
        << "\n"  // line 2
        << R"({"t":"case","i":0,"v":"pass","c":"short"})"
        << "\n"  // 3
        << R"({"t":"case","i":1,"v":"wrong","c":"short","sig":"wrong: vs oracle","f":"001"})"
        << "\n"  // 4
        << "{\"t\":\"case\",\"i\":2,\"v\":\"pass\",\"c\""
        << "\n"  // 5: garbled
        << R"({"t":"case","i":1,"v":"wrong","c":"short","sig":"wrong: vs oracle","f":"001"})"
        << "\n"  // 6: again
        << R"({"t":"case","i":"x","v":"pass"})"
        << "\n"  // 7: wrong kind
        << R"({"t":"finding","id":"001","sig":"wrong: vs oracle","dir":"findings/001-wrong","recipe":"B=1 H=3 P=[0] T=[1]"})"
        << "\n"
        << R"({"t":"case","i":3,"v":"input-error","c":"short","why":"recipe: bad"})"
        << "\n"  // 9
        << R"({"t":"suite-error","what":"worker ended outside the code under test","detail":"exit 3"})"
        << "\n";
  }
  const auto st = vattn::fuzz::read_journal(path);
  CHECK(st.done == std::set<int64_t>{0, 1, 3});
  CHECK(st.by_verdict.at("wrong") == 1);  // case 1 twice: counted once
  CHECK(st.hits.at("001") == 1);
  CHECK(st.duplicate_cases == 1);
  CHECK(st.torn_lines == 0);  // the garbled line is not the last: it is reported, not taken for a torn tail
  REQUIRE(st.problems.size() == 2);
  CHECK_THAT(st.problems[0], Catch::StartsWith("line 5: "));
  CHECK_THAT(st.problems[1], Catch::StartsWith("line 7: ") && Catch::Contains("'i'"));
  CHECK(st.suite_errors == 2);
  REQUIRE(st.suite_error_list.size() == 2);
  CHECK(st.suite_error_list[0].value("detail", "") == "recipe: bad");
  CHECK(st.findings.at(0).value("dir", "") == "findings/001-wrong");
}

TEST_CASE(
    "fuzz campaign: read_journal refuses a campaign line or a finding folder that cannot be, naming line and field",
    "[fuzz-campaign]") {
  TempDir dir;
  const std::string path = dir.file("journal.jsonl");
  const std::string head = R"({"t":"campaign","schema":"vattn-fuzz-journal","version":1,"kernel":"host:faulty",)";
  auto refusal = [&](const std::string& campaign_tail, const std::string& more = "") -> std::string {
    std::ofstream(path) << head << campaign_tail << "\n" << more;
    try {
      vattn::fuzz::read_journal(path);
    } catch (const InputError& e) {
      return e.what();
    }
    return "(no error)";
  };
  const std::string ok = R"("seed":9,"budget":"small","cases":10)";
  CHECK(refusal(ok + "}") == "(no error)");
  for (const char* shard : {"[0,0]", "[3,2]", "[-1,2]", "[0]", "\"0/2\"", "[0,2000000]"}) {
    CAPTURE(shard);
    const std::string why = refusal(ok + R"(,"shard":)" + shard + "}");
    CHECK_THAT(why, Catch::Contains("journal.jsonl:1") && Catch::Contains("'shard'"));
  }
  CHECK_THAT(refusal(R"("seed":-1,"budget":"small"})"), Catch::Contains("'seed'"));
  CHECK_THAT(refusal(R"("seed":1.5,"budget":"small"})"), Catch::Contains("'seed'"));
  CHECK_THAT(refusal(R"("seed":9,"budget":"huge"})"), Catch::Contains("'budget'"));
  CHECK_THAT(refusal(R"("seed":9,"budget":"small","cases":0})"), Catch::Contains("'cases'"));
  CHECK_THAT(refusal(R"("seed":9,"budget":"small","cases":"10"})"), Catch::Contains("'cases'"));
  for (const char* hostile : {"../../x", "/etc", "findings/../../x/findings/001-wrong/..", "findings/evil", ""}) {
    CAPTURE(hostile);
    const std::string line =
        vattn::fuzz::json{
            {"t", "finding"}, {"id", "001"}, {"sig", "crash"}, {"dir", hostile}, {"recipe", "B=1 H=1 P=[0] T=[1]"}}
            .dump();
    CHECK_THAT(refusal(ok + "}", R"({"t":"run","run":1})"
                                 "\n" +
                                     line + "\n"),
               Catch::Contains("journal.jsonl:3") && Catch::Contains("'dir'"));
  }
}

TEST_CASE("fuzz campaign: a finding folder from a journal is findings/NAME inside the campaign", "[fuzz-campaign]") {
  using vattn::fuzz::confined_finding_dir;
  CHECK(confined_finding_dir("findings/001-wrong") == "findings/001-wrong");
  // A journal from before relative paths wrote the folder as typed: its last two parts are taken.
  CHECK(confined_finding_dir("night1/findings/002-hang") == "findings/002-hang");
  CHECK(confined_finding_dir("/scratch/night1/findings/003-device-error") == "findings/003-device-error");
  for (const char* bad : {"../../x", "/etc", "findings/../x", "../findings/001-wrong", "findings/001-wrong/..",
                          "findings/x", "findings/001-WRONG", "x/001-wrong", "findings/001-wrong/finding.json"}) {
    CAPTURE(bad);
    CHECK(confined_finding_dir(bad).empty());
  }
}

TEST_CASE("fuzz campaign: an investigation goes on from its progress in another run", "[fuzz-campaign]") {
  const Verdict first = failing("crash", "signal 11 (SIGSEGV)");
  auto answer = [](const Recipe& r) { return r.heads == 3 ? failing("crash", "signal 11 (SIGSEGV)") : passing(); };
  Investigation whole(first, Recipe::parse(kStart), true, InvestigationLimits{});
  const int all_runs = drive(whole, answer);
  // The same investigation stopped after 7 runs and resumed from its progress in a new object
  // (a new supervisor) ends where the uninterrupted one did, in the same number of runs.
  Investigation part(first, Recipe::parse(kStart), true, InvestigationLimits{});
  for (int i = 0; i < 7; ++i) part.feed(answer(*part.next()));
  const vattn::fuzz::json progress = part.progress();
  CHECK(progress.value("confirmed", false));
  Investigation resumed(first, Recipe::parse(kStart), true, InvestigationLimits{});
  resumed.resume(progress);
  CHECK(resumed.fresh_process());
  CHECK(resumed.confirmed());  // not confirmed again
  CHECK(resumed.runs() == 7);
  CHECK(resumed.steps() == part.steps());
  REQUIRE(resumed.next().has_value());
  CHECK(resumed.next()->to_line() == part.next()->to_line());
  drive(resumed, answer);
  CHECK(resumed.runs() == all_runs);
  CHECK(resumed.shrunk().to_line() == whole.shrunk().to_line());
  // Progress it could not have made is refused, naming the field.
  vattn::fuzz::json bad = progress;
  bad["next"] = 100000;
  Investigation other(first, Recipe::parse(kStart), true, InvestigationLimits{});
  CHECK_THROWS_WITH(other.resume(bad), Catch::Contains("shrink.next"));
  bad = progress;
  bad["recipe"] = "B=1 H=nope";
  CHECK_THROWS_AS(other.resume(bad), InputError);
}

TEST_CASE("fuzz campaign: a revision library is told apart by its bytes' SHA-256", "[fuzz-campaign]") {
  TempDir dir;
  std::ofstream(dir.file("abc.so")) << "abc";
  CHECK(vattn::fuzz::sha256_of_file(dir.file("abc.so"), "--kernel") ==
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK_THROWS_WITH(vattn::fuzz::sha256_of_file(dir.file("none.so"), "--kernel"), Catch::Contains("cannot be read"));
  REQUIRE(::mkfifo(dir.file("fifo.so").c_str(), 0600) == 0);
  CHECK_THROWS_WITH(vattn::fuzz::sha256_of_file(dir.file("fifo.so"), "--kernel"),
                    Catch::Contains("not a regular file"));  // not waited on
  CHECK(vattn::fuzz::is_kernel_library("build/librev.so"));
  CHECK(vattn::fuzz::is_kernel_library("librev.so"));
  CHECK(vattn::fuzz::is_kernel_library("/opt/k/rev"));
  CHECK_FALSE(vattn::fuzz::is_kernel_library("split-v2"));
  CHECK_FALSE(vattn::fuzz::is_kernel_library("host:faulty:crash@T=17"));
}

namespace testbed = vattn::testbed;

// The fp32-partials property (vattn/testbed/partials.h) on synthetic zero-query outputs: the
// mean of V rows computed the way a kernel with fp32 partials does passes, one whose split means
// were stored in bf16 fails, and a cancelling mean with an fp32-sized error is not called wrong.
namespace {
struct Means {
  std::vector<float> mean, mean_abs, fp32, bf16_partials;
};
Means synthetic_means(int n, int splits, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Means m;
  for (int i = 0; i < n; ++i) {
    // Each split's mean differs from the whole mean by a zero-sum offset, as for real data.
    std::vector<double> part(static_cast<size_t>(splits));
    double whole = 0;
    for (auto& p : part) {
      p = 0.05 * u(rng);
      whole += p / splits;
    }
    m.mean.push_back(static_cast<float>(whole));
    m.mean_abs.push_back(0.5f);
    m.fp32.push_back(vattn::round_to_bf16(static_cast<float>(whole * (1 + 1e-7 * u(rng)))));
    float merged = 0;
    for (double p : part) merged += vattn::round_to_bf16(static_cast<float>(p)) / static_cast<float>(splits);
    m.bf16_partials.push_back(vattn::round_to_bf16(merged));
  }
  return m;
}
}  // namespace

TEST_CASE("fuzz campaign: the fp32-partials property passes fp32 merges and fails bf16 partials", "[fuzz]") {
  const Means m = synthetic_means(20000, 4, 7);
  const std::vector<float>& single = m.fp32;
  CHECK(testbed::partials_problem(m.fp32, single, m.mean, m.mean_abs, 4).empty());
  const std::string bad = testbed::partials_problem(m.bf16_partials, single, m.mean, m.mean_abs, 4);
  INFO(bad);
  CHECK_FALSE(bad.empty());
  const testbed::RoundingTally t = testbed::tally_rounding(m.bf16_partials, m.mean, m.mean_abs);
  CHECK(t.share() > 0.05);
  CHECK(testbed::tally_rounding(m.fp32, m.mean, m.mean_abs).share() < 0.01);
}

TEST_CASE("fuzz campaign: a cancelling mean with an fp32-sized error is not a partials failure", "[fuzz]") {
  // Seen on split-v1 (H200): 2.49594e-07 against a mean of 2.41819e-07 over values of size ~0.5 is
  // 4 bf16 ulps of the mean but 1.6e-8 of the magnitudes summed: fp32 arithmetic, not bf16 partials.
  const std::vector<float> mean{2.41819e-07f}, mean_abs{0.5f}, out{2.49594e-07f},
      single{vattn::round_to_bf16(2.41819e-07f)};
  CHECK(testbed::partials_problem(out, single, mean, mean_abs, 6).empty());
  // Without the magnitudes it would be one.
  CHECK_FALSE(testbed::partials_problem(out, single, mean, {0.0f}, 6).empty());
}

TEST_CASE("fuzz campaign: rounding ties are left out of the fp32-partials property", "[fuzz]") {
  // 0.0798340 lies on the midpoint between the bf16 values 0.0795898 and 0.0800781.
  const float tie = (0.0795898f + 0.0800781f) / 2;
  CHECK(testbed::near_bf16_tie(tie));
  CHECK_FALSE(testbed::near_bf16_tie(0.0795898f));
  CHECK(testbed::tally_rounding({0.0795898f}, {tie}, {0.5f}).checked == 0);
}

TEST_CASE("fuzz campaign: coverage counts the families, the plan limits and the SM counts", "[fuzz-campaign]") {
  StreamConfig sc;
  sc.seed = 11;
  sc.device_variants = sc.plan_variants = true;
  const CaseStream s(sc);
  vattn::fuzz::Coverage cov;
  const int64_t n = 2000;
  for (int64_t i = 0; i < n; ++i) cov.add(s.at(i), 0);
  const vattn::fuzz::json j = cov.to_json();
  auto total = [&j](const char* dim) {
    int64_t t = 0;
    for (const auto& [bucket, count] : j.at(dim).items()) t += count.get<int64_t>();
    return t;
  };
  for (const char* dim : {"family", "plan limits", "max_splits", "SMs"}) {
    INFO(dim);
    REQUIRE(j.contains(dim));
    CHECK(total(dim) == n);  // every case in one bucket
  }
  for (const char* b : {"short", "serving", "long"}) CHECK(j["family"].value(b, 0) > 0);
  for (const char* b : {"unset", "exact", "headroom"}) CHECK(j["plan limits"].value(b, 0) > 0);
  for (const char* b : {"unset", "1", "2-8", ">8"}) CHECK(j["max_splits"].value(b, 0) > 0);
  for (const char* b : {"native", "1", "132", "188", "other"}) CHECK(j["SMs"].value(b, 0) > 0);
  CHECK(j["family"].value("serving", 0) > n * 35 / 100);
  const std::string text = cov.text();
  CHECK_THAT(text, Catch::Contains("  family: long "));
  CHECK_THAT(text, Catch::Contains("  SMs: 1 "));
  CHECK_THAT(text, Catch::Contains("  plan limits: exact "));
}
