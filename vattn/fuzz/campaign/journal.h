// SPDX-License-Identifier: Apache-2.0
// The campaign journal: an append-only JSON-lines file (DIR/journal.jsonl), one object per line.
// Every line goes to the kernel with one write() as it happens, so a kill -9 of the supervisor
// loses nothing it wrote; fsync runs at most once a second (a power cut loses at most that).
// Kinds of line ("t"):
//   campaign  once, first: schema, version, the settings that define the case stream
//   run       each start of the supervisor (fresh or --resume)
//   case      one verdict: index, verdict, size class, seconds, signature and finding id when it failed
//             (or, instead of the id, k: ledger when the ledger tolerated it, k: extra when it is a
//             further bucket of a check that has its findings)
//   resource  a case (or an investigation's run, or a worker start) that failed for want of a
//             resource: retried on a fresh worker, or given up (then a case line "resource" follows)
//   finding   a new signature, with its directory;  finding-done  its investigation's outcome
//   tick      every few seconds: the run's elapsed time (a run killed with -9 has no end line)
//   end       a clean stop, with the reason
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

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

 private:
  std::string path_;
  int fd_ = -1;
  double last_sync_ = 0;
};

// What a journal says, read back for --resume and for reports.
// Its implicit move calls only noexcept moves; clang-tidy's exception-escape walks into
// nlohmann::json's noexcept move constructor and flags a throw there (any struct with a json member).
// NOLINTNEXTLINE(bugprone-exception-escape): a false positive, see above
struct JournalState {
  json campaign;           // the campaign line
  std::set<int64_t> done;  // case indices with a verdict
  std::map<std::string, int64_t> by_verdict, by_class;
  std::vector<json> findings;                // finding lines, in order
  std::map<std::string, json> finding_done;  // finding id -> its finding-done line
  std::map<std::string, int64_t> hits;       // finding id -> failed cases that carry it
  std::map<std::string, int64_t> tolerated;  // signature -> failed cases the ledger tolerated
  int64_t resource_errors = 0;               // resource lines
  int64_t resource_retried = 0;              // resource lines that said "retry"
  std::map<std::string, int64_t> extra;      // signature -> failed cases of buckets counted, not filed
  int64_t runs = 0;                          // supervisor starts
  double seconds = 0;                        // sum of the runs' elapsed time (their last tick or end line)
  int64_t torn_lines = 0;                    // lines that did not parse (a torn tail)
};

// Reads a journal; InputError naming the file when it is missing or is not a vattn fuzz journal.
JournalState read_journal(const std::string& path);

}  // namespace vattn::fuzz
