// SPDX-License-Identifier: Apache-2.0
// The supervisor <-> worker protocol: one JSON object per line over pipes.
// supervisor -> worker (the worker's stdin):
//   {"op":"case","index":N,"recipe":LINE,"repro":PATH}   run one case; PATH: where to write a repro if it fails
//   {"op":"repro","recipe":LINE,"repro":PATH}            write a repro (inputs + oracle) without running the target
//   {"op":"known","sig":SIG}                              the campaign has evidence of SIG: write no repro for it
//   {"op":"known","sig":PATTERN,"pattern":true}          nor for what matches PATTERN (a ledger entry)
//   {"op":"quit"}
// worker -> supervisor (a dedicated pipe, fd kReportFd in the worker; its stdout/stderr go to a log):
//   {"ev":"ready","target":NAME,"device":TEXT,           once, after the target loaded; plan_hook: it can
//    "plan_hook":BOOL,...}                                run other GPUs' plans (recipe keys sms, sm_blocks)
//   {"ev":"fatal","reason":TEXT}                          the target cannot run at all (exit follows)
//   {"ev":"start","index":N}                              before the code under test runs on case N
//   {"ev":"hb","busy":N}                                  heartbeat, several times a second
//   {"ev":"result","index":N,...}                         the verdict of case N (fields: see Verdict)
//   {"ev":"crash","index":N,"what":TEXT}                  a sticky device error on case N (exit follows)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "vattn/testbed/verdict.h"

namespace vattn::fuzz {

using json = nlohmann::json;

constexpr int kReportFd = 3;  // the worker's report pipe

// Writes one message and its newline, whole (retries short writes and EINTR). False when the
// reader has gone (EPIPE) or another write error happened.
bool send_message(int fd, const json& message);

// Splits bytes from a pipe into lines; tolerates partial reads. A line that is not a JSON object
// (or nests deeper than json_read.h allows) becomes {"ev":"garbled","text":...} so a corrupted
// worker cannot derail the reader.
class LineReader {
 public:
  // Reads what is available now (one read()). Returns false at end of file or on error.
  bool fill(int fd);
  // The next complete message, if one is buffered.
  bool next(json& message);

 private:
  std::string buffer_;
};

// One case's verdict, as the worker reports it and the journal stores it: the testbed's verdict
// (vattn/testbed/verdict.h: class, check, detail, oracle, bucket, error word), and what ended a
// worker (crash | hang | died), the case's index, its repro and times.
struct Verdict : testbed::Verdict {
  Verdict() = default;
  Verdict(const testbed::Verdict& v)
      : testbed::Verdict(v) {}  // NOLINT(google-explicit-constructor): a judgement is a verdict
  int64_t index = -1;
  std::string repro;  // path of the repro the worker wrote, or ""
  // Why the repro that was asked for could not be written (a full disk, a file-size limit), or "".
  // The verdict stands whatever happened to its evidence: a failed check stays a failure.
  std::string evidence_error;
  double target_s = 0, oracle_s = 0, total_s = 0;  // time in the code under test, in the oracle, start to verdict
  // The finding's identity: one bug hit ten thousand times is one signature. Class and check
  // ("wrong: vs oracle"), then, when the check has one, " @ " and where the errors sit
  // ("wrong: vs oracle @ values heads=some rows=whole-requests cols=all").
  std::string signature() const;
  json to_json() const;
  // A verdict from before buckets (no "bucket") keeps the signature it was journaled with.
  static Verdict from_json(const json& j);
};

// Between a signature's check and its bucket.
constexpr const char* kBucketSeparator = " @ ";

// A signature's class and check (all of it when it has no bucket), and its bucket ("" when none).
std::string signature_check(const std::string& signature);
std::string signature_bucket(const std::string& signature);

// Whether a pattern (a ledger entry's signature) names `signature`: the signature itself, or an
// fnmatch glob over it ("wrong: vs oracle @ *heads=some*"). A pattern without a bucket names its
// check with any bucket, so "wrong: vs oracle" (a ledger written before buckets) means every
// wrong answer of that check.
bool signature_matches(const std::string& pattern, const std::string& signature);

// Whether a case failed the way a finding's first case did (shrinking keeps only such
// candidates): the same signature; a first signature journaled before buckets, which has none,
// is met by its check with any bucket (a finding resumed from an old journal still shrinks).
bool same_failure(const std::string& first_signature, const std::string& signature);

}  // namespace vattn::fuzz
