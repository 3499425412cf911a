// SPDX-License-Identifier: Apache-2.0
// The ledger of known, tolerated findings (vattn/fuzz/ledger.json, `vattn fuzz --ledger FILE`): each
// entry names a signature (or a glob over signatures), the kernels it applies to (a glob) and why
// it is tolerated. A failed case whose signature matches an entry is counted against that entry
// and journaled, but it is not raised again: no finding directory, no shrinking, and it does not
// make the exit code 1. Every summary and report lists the whole ledger with its counts, and each
// entry the signatures it tolerated, so an entry that tolerates more than its author meant shows.
// A wrong answer's signature carries its bucket ("wrong: vs oracle @ values heads=some ..."): an
// entry that names it, or globs over it, tolerates that bucket only; an entry without a bucket
// ("wrong: vs oracle", all a version 1 file could say) tolerates every bucket of its check
// (signature_matches() in protocol.h). Version 2 files may use buckets and globs; version 1
// files are read the same way.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "vattn/fuzz/protocol/protocol.h"

namespace vattn::fuzz {

constexpr const char* kLedgerSchema = "vattn-fuzz-ledger";
constexpr int kLedgerVersion = 2;  // 1 (before buckets) is read too
// A ledger is a hand-kept list: far below these, and a file past them is refused unread.
constexpr uint64_t kMaxLedgerBytes = uint64_t{64} << 20;
constexpr size_t kMaxLedgerEntries = 1000000;

struct LedgerEntry {
  std::string signature;                   // a signature or a glob over them (fnmatch), e.g. "wrong: fp32 partials"
  std::string kernel = "*";                // glob over the --kernel text (fnmatch), e.g. "split-v1" or "*"
  std::string reason;                      // why it is tolerated (required, shown everywhere)
  std::string added;                       // who/when, free text (optional)
  int64_t count = 0;                       // cases of this campaign that matched
  std::map<std::string, int64_t> matched;  // those cases by their own signature
};

class Ledger {
 public:
  // An empty ledger (no file): matches nothing.
  Ledger() = default;
  // Reads and validates FILE (a regular file of at most kMaxLedgerBytes, JSON nested no deeper
  // than json_read.h allows); InputError naming the file and the field (e.g. entries[2].reason).
  static Ledger load(const std::string& path);

  // The entry that tolerates `signature` on `kernel` (the first that matches), or nullptr.
  LedgerEntry* match(const std::string& signature, const std::string& kernel);
  // Counts `cases` failed cases of `signature` against the entry that tolerates them, if any.
  LedgerEntry* tolerate(const std::string& signature, const std::string& kernel, int64_t cases = 1);
  const std::vector<LedgerEntry>& entries() const { return entries_; }
  const std::string& path() const { return path_; }
  bool empty() const { return entries_.empty(); }
  // {"file", "entries": [{signature, kernel, reason, added, count, matched}]} for summary.json.
  json to_json() const;

 private:
  std::string path_;
  std::vector<LedgerEntry> entries_;
};

}  // namespace vattn::fuzz
