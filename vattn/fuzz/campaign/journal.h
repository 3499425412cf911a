// SPDX-License-Identifier: Apache-2.0
// The campaign journal: an append-only JSON-lines file (DIR/journal.jsonl), one object per line.
// Every line goes to the kernel with one write() as it happens, so a kill -9 of the supervisor
// loses nothing it wrote; fsync runs at most once a second (a power cut loses at most that).
// Kinds of line ("t"):
//   campaign  once, first: schema, version, the settings that define the case stream, the kernel
//             (a library as an absolute path with its SHA-256) and the run options
//   run       each start of the supervisor (fresh or --resume), with the run options it used
//   case      one verdict: index, verdict, size class, seconds, signature and finding id when it failed
//             (or, instead of the id, k: ledger when the ledger tolerated it, k: extra when it is a
//             further bucket of a check that has its findings); why, for a suite error
//   resource  a case (or an investigation's run, or a worker start) that failed for want of a
//             resource: retried on a fresh worker, or given up (then a case line "resource" follows)
//   suite-error  the suite's own failure outside a case (a worker gone outside the code under test,
//             evidence or a file of the campaign that could not be written: fatal)
//   finding   a new signature, with its directory (findings/NNN-<class>, relative to the campaign)
//   shrink    an investigation's progress after each of its runs, so a resume continues it
//   finding-done  its investigation's outcome
//   tick      every few seconds: the run's elapsed time (a run killed with -9 has no end line)
//   end       a clean stop, with the reason
// Paths in it are relative to the campaign folder: a campaign resumes from any working directory.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "vattn/fuzz/gen/case_stream.h"
#include "vattn/fuzz/protocol/protocol.h"

namespace vattn::fuzz {

constexpr const char* kJournalSchema = "vattn-fuzz-journal";
constexpr int kJournalVersion = 1;

class Journal {
 public:
  Journal() = default;
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // Creates DIR/journal.jsonl (refuses an existing one) or opens it for appending after a torn
  // last line (a line the kill cut short) is cut off. Throws InputError naming the file.
  void create(const std::string& path);
  void open_append(const std::string& path);
  void append(const json& line);  // throws std::runtime_error on a write error
  void sync_if_due();             // fsync when the last one is over a second old
  void sync();
  void close();
  const std::string& path() const { return path_; }
  // The file's size now (what a summary records, so readers can tell it is current); -1 when unknown.
  int64_t bytes() const;

 private:
  std::string path_;
  int fd_ = -1;
  double last_sync_ = 0;
};

// What a journal says, read back for --resume, for fuzz-merge and for reports. The journal is
// untrusted: the campaign line's fields are checked like the command line's (an error names the
// file, the line and the field), a finding's directory must be findings/NAME inside the campaign,
// and a line that does not parse, or whose fields are of the wrong kind, is skipped and reported
// in `problems` (a torn last line, which a kill leaves, is expected and only counted).
// Verdict totals are over distinct case indices: a case journaled twice counts once, its first line.
// Its implicit move calls only noexcept moves; clang-tidy's exception-escape walks into
// nlohmann::json's noexcept move constructor and flags a throw there (any struct with a json member).
// NOLINTNEXTLINE(bugprone-exception-escape): a false positive, see above
struct JournalState {
  json campaign;                              // the campaign line
  std::set<int64_t> done;                     // case indices with a verdict
  std::set<int64_t> not_run;                  // of those, the cases given up for want of a resource (verdict resource)
  std::map<int64_t, uint32_t> device_errors;  // case index -> device error word, where not 0
  std::map<std::string, int64_t> by_verdict, by_class;
  std::vector<json> findings;                     // finding lines, in order ("dir" made findings/NAME)
  std::map<std::string, json> finding_done;       // finding id -> its finding-done line
  std::map<std::string, json> shrink;             // finding id -> its latest shrink line
  std::map<std::string, int64_t> hits;            // finding id -> failed cases that carry it
  std::map<std::string, int64_t> tolerated;       // signature -> failed cases the ledger tolerated
  int64_t resource_errors = 0;                    // resource lines
  int64_t resource_retried = 0;                   // resource lines that said "retry"
  std::map<std::string, int64_t> extra;           // signature -> failed cases of buckets counted, not filed
  int64_t suite_errors = 0;                       // input-error cases and suite-error lines
  json suite_error_list = json::array();          // the first 100: {index (cases), what, detail}
  json options;                                   // run options of the latest line that has them (null: none)
  int64_t options_line = 0;                       // the line they are on
  std::string kernel_sha256;                      // the kernel's digest, as last accepted (campaign or run line)
  std::string kernel_library;                     // a library a run line accepted in place of the campaign's ("": none)
  int64_t runs = 0;                               // supervisor starts
  double seconds = 0;                             // sum of the runs' elapsed time (their last tick or end line)
  int64_t last_run_cases = 0, last_run_long = 0;  // case lines after the last run line
  double last_run_seconds = 0;
  json last_end;                      // the last run's end line (null: it has none, it was killed)
  int64_t duplicate_cases = 0;        // case lines of an index journaled already (counted once)
  int64_t torn_lines = 0;             // a torn last line (a kill inside a write): 0 or 1
  int64_t problem_lines = 0;          // other lines skipped
  std::vector<std::string> problems;  // "line N: why" for the first 20 of them
};

// Reads a journal; InputError naming the file (and line and field) when it is missing, is not a
// vattn fuzz journal, or names a campaign or a finding directory that cannot be.
JournalState read_journal(const std::string& path);

// The case stream's settings a campaign line records (seed, budget, the device and plan
// variants); the mix table lives in mix.json beside the journal and is the caller's to load.
StreamConfig stream_config_of(const json& campaign);

// A finding directory as a journal line gives it, made relative to the campaign: "findings/NAME"
// (NAME like 001-wrong); a journal written before relative paths gave it as typed, which is read
// by its last two parts when those are findings/NAME. "" when it is anything else (an absolute
// path elsewhere, "..", a name that is no finding's).
std::string confined_finding_dir(const std::string& dir);

}  // namespace vattn::fuzz
