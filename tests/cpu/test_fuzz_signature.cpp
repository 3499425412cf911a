// SPDX-License-Identifier: Apache-2.0
// A finding's signature is class, check and bucket (where a wrong answer's errors sit): the
// signature's parts, its JSON round trip, a verdict journaled before buckets, what a ledger entry
// tolerates (an exact signature, a glob, a check without bucket), shrinking that keeps the bucket,
// and a journal with extra buckets and signatures of both kinds read back.
#include <fstream>
#include <string>

#include <catch2/catch.hpp>

#include "tests/cpu/temp_dir.h"

#include "vattn/case/case.h"
#include "vattn/fuzz/campaign/investigation.h"
#include "vattn/fuzz/campaign/journal.h"
#include "vattn/fuzz/campaign/ledger.h"
#include "vattn/fuzz/protocol/protocol.h"
#include "vattn/gen/generate.h"

using vattn::InputError;
using vattn::Recipe;
using vattn::fuzz::Investigation;
using vattn::fuzz::InvestigationLimits;
using vattn::fuzz::json;
using vattn::fuzz::Ledger;
using vattn::fuzz::Verdict;
using vattn::test::TempDir;

namespace {

const std::string kHeadBug = "values heads=some rows=whole-requests cols=all";
const std::string kRequestBug = "values heads=all rows=whole-requests cols=all";

Verdict wrong(const std::string& bucket) {
  Verdict v;
  v.verdict = "wrong";
  v.check = "vs oracle";
  v.detail = "FAIL [planted]";
  v.bucket = bucket;
  return v;
}

Ledger ledger_file(const TempDir& dir, const std::string& text) {
  const std::string path = dir.file("ledger.json");
  std::ofstream(path) << text;
  return Ledger::load(path);
}

}  // namespace

TEST_CASE("signature: class, check and bucket, and back from JSON", "[fuzz-signature]") {
  const Verdict v = wrong(kHeadBug);
  CHECK(v.signature() == "wrong: vs oracle @ " + kHeadBug);
  CHECK(vattn::fuzz::signature_check(v.signature()) == "wrong: vs oracle");
  CHECK(vattn::fuzz::signature_bucket(v.signature()) == kHeadBug);
  const json j = v.to_json();
  CHECK(j.at("bucket") == kHeadBug);
  CHECK(Verdict::from_json(j).signature() == v.signature());
  // Checks without a bucket keep the signatures they had.
  Verdict crash;
  crash.verdict = "crash";
  crash.check = "signal 11 (SIGSEGV)";
  crash.detail = "worker died";
  CHECK(crash.signature() == "crash: signal 11 (SIGSEGV)");
  CHECK(vattn::fuzz::signature_bucket(crash.signature()).empty());
  CHECK(vattn::fuzz::signature_check(crash.signature()) == crash.signature());
  CHECK_FALSE(crash.to_json().contains("bucket"));
  Verdict partials = wrong("");
  partials.check = "fp32 partials";
  CHECK(partials.signature() == "wrong: fp32 partials");
}

TEST_CASE("signature: a verdict journaled before buckets keeps its signature", "[fuzz-signature]") {
  const json old =
      json::parse(R"({"index":4,"verdict":"wrong","check":"vs oracle","detail":"FAIL","oracle":"oracle_fp64",
                                   "target_s":0.01,"oracle_s":0.02,"total_s":0.03})");
  const Verdict v = Verdict::from_json(old);
  CHECK(v.bucket.empty());
  CHECK(v.signature() == "wrong: vs oracle");
}

TEST_CASE("signature: what a ledger pattern names", "[fuzz-signature]") {
  using vattn::fuzz::signature_matches;
  const std::string head = wrong(kHeadBug).signature(), request = wrong(kRequestBug).signature();
  // The full signature: that bucket and no other.
  CHECK(signature_matches(head, head));
  CHECK_FALSE(signature_matches(head, request));
  // A glob over signatures.
  CHECK(signature_matches("wrong: vs oracle @ *heads=some*", head));
  CHECK_FALSE(signature_matches("wrong: vs oracle @ *heads=some*", request));
  CHECK(signature_matches("wrong: vs oracle @ *", request));
  // A check without bucket (a ledger from before buckets): every bucket of that check, no other check.
  CHECK(signature_matches("wrong: vs oracle", head));
  CHECK(signature_matches("wrong: vs oracle", request));
  CHECK(signature_matches("wrong: vs oracle", "wrong: vs oracle"));
  CHECK_FALSE(signature_matches("wrong: vs oracle", "wrong: fp32 partials"));
  CHECK_FALSE(
      signature_matches("wrong: vs oracle", "wrong: injected fault index-neg: other rows vs oracle @ " + kHeadBug));
  CHECK(signature_matches("wrong: fp32 partials", "wrong: fp32 partials"));
  CHECK(signature_matches("crash: *", "crash: signal 11 (SIGSEGV)"));
  // A legacy signature (no bucket) is not named by a bucketed pattern.
  CHECK_FALSE(signature_matches(head, "wrong: vs oracle"));
}

TEST_CASE("signature: a ledger entry tolerates its bucket, and says what it tolerated", "[fuzz-signature]") {
  TempDir dir;
  const std::string head = wrong(kHeadBug).signature(), request = wrong(kRequestBug).signature();
  SECTION("an entry naming one bucket") {
    Ledger l = ledger_file(dir, R"({"schema": "vattn-fuzz-ledger", "version": 2, "entries": [
      {"signature": "wrong: vs oracle @ )" +
                                    kHeadBug + R"(", "reason": "the head bug, known"}]})");
    CHECK(l.tolerate(head, "split-v2") != nullptr);
    CHECK(l.tolerate(request, "split-v2") == nullptr);
    CHECK(l.entries()[0].count == 1);
    CHECK(l.entries()[0].matched.at(head) == 1);
  }
  SECTION("a version 1 entry naming the check: every bucket of it, each counted by its signature") {
    Ledger l = ledger_file(dir, R"({"schema": "vattn-fuzz-ledger", "version": 1, "entries": [
      {"signature": "wrong: vs oracle", "kernel": "split-*", "reason": "written before buckets"}]})");
    CHECK(l.tolerate(head, "split-v2") != nullptr);
    CHECK(l.tolerate(request, "split-v2", 3) != nullptr);
    CHECK(l.tolerate(request, "host:faulty") == nullptr);  // the kernel glob still applies
    CHECK(l.entries()[0].count == 4);
    CHECK(l.entries()[0].matched.at(head) == 1);
    CHECK(l.entries()[0].matched.at(request) == 3);
    CHECK(l.to_json()["entries"][0]["matched"][request] == 3);
  }
  SECTION("a version this vattn does not know is refused, naming the field") {
    try {
      ledger_file(dir, R"({"schema": "vattn-fuzz-ledger", "version": 3, "entries": []})");
      FAIL("no error");
    } catch (const InputError& e) {
      CHECK(e.field() == "version");
      CHECK(std::string(e.what()).find("versions 1 to 2") != std::string::npos);
    }
  }
}

TEST_CASE("signature: shrinking keeps the bucket, but a finding from before buckets takes any bucket of its check",
          "[fuzz-signature]") {
  const Recipe start = Recipe::parse("B=2 H=3 P=[77,5] T=[3,2] tree=chain seed=5");
  // Candidates with H=3 fail in the head bucket, the others (P=77) in the request bucket.
  auto answer = [](const Recipe& r) { return r.heads == 3 ? wrong(kHeadBug) : wrong(kRequestBug); };
  SECTION("a bucketed finding takes no candidate of another bucket") {
    Investigation inv(wrong(kHeadBug), start, false, InvestigationLimits{});
    while (auto r = inv.next()) inv.feed(answer(*r));
    CHECK(inv.shrunk().heads == 3);
  }
  SECTION("a legacy finding shrinks as it did before buckets") {
    Investigation inv(wrong(""), start, false, InvestigationLimits{});
    CHECK(inv.signature() == "wrong: vs oracle");
    while (auto r = inv.next()) inv.feed(answer(*r));
    CHECK(inv.shrunk().heads == 1);
    CHECK(inv.steps() > 0);
  }
  CHECK(vattn::fuzz::same_failure("wrong: vs oracle", wrong(kHeadBug).signature()));
  CHECK_FALSE(vattn::fuzz::same_failure(wrong(kHeadBug).signature(), wrong(kRequestBug).signature()));
  CHECK_FALSE(vattn::fuzz::same_failure("wrong: vs oracle", "wrong: fp32 partials"));
}

TEST_CASE("signature: a journal with old and bucketed signatures, ledger and extra lines reads back",
          "[fuzz-signature]") {
  TempDir dir;
  const std::string path = dir.file("journal.jsonl");
  const std::string head = wrong(kHeadBug).signature(), request = wrong(kRequestBug).signature();
  {
    std::ofstream out(path);
    out << R"({"t":"campaign","schema":"vattn-fuzz-journal","version":1,"kernel":"host:faulty","seed":3,"budget":"small","cases":6})"
        << "\n"
        << R"({"t":"case","i":0,"v":"wrong","c":"short","sig":"wrong: vs oracle","f":"001"})"
        << "\n"
        << R"({"t":"finding","id":"001","sig":"wrong: vs oracle","dir":"findings/001-wrong","recipe":"B=1 H=3 P=[0] T=[1]"})"
        << "\n"
        << json{{"t", "case"}, {"i", 1}, {"v", "wrong"}, {"c", "short"}, {"sig", head}, {"f", "002"}}.dump() << "\n"
        << json{{"t", "case"}, {"i", 2}, {"v", "wrong"}, {"c", "short"}, {"sig", request}, {"k", "extra"}}.dump()
        << "\n"
        << json{{"t", "case"}, {"i", 3}, {"v", "wrong"}, {"c", "short"}, {"sig", request}, {"k", "extra"}}.dump()
        << "\n"
        << json{{"t", "case"}, {"i", 4}, {"v", "wrong"}, {"c", "short"}, {"sig", head}, {"k", "ledger"}}.dump() << "\n";
  }
  const auto st = vattn::fuzz::read_journal(path);
  CHECK(st.done.size() == 5);
  CHECK(st.hits.at("001") == 1);
  CHECK(st.hits.at("002") == 1);
  CHECK(st.extra.at(request) == 2);
  CHECK(st.extra.size() == 1);
  CHECK(st.tolerated.at(head) == 1);
  CHECK(st.findings.at(0).value("sig", "") == "wrong: vs oracle");
}
