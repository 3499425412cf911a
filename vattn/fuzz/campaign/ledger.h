// SPDX-License-Identifier: Apache-2.0
// The ledger of known, tolerated findings (vattn/fuzz/ledger.json, `vattn fuzz --ledger FILE`): each
// entry names a signature, the kernels it applies to (a glob) and why it is tolerated. A failed
// case whose signature matches an entry is counted against that entry and journaled, but it is
// not raised again: no finding directory, no shrinking, and it does not make the exit code 1.
// Every summary and report lists the whole ledger with its counts, so nothing is hidden.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vattn/fuzz/protocol/protocol.h"

namespace vattn::fuzz {

constexpr const char* kLedgerSchema = "vattn-fuzz-ledger";
constexpr int kLedgerVersion = 1;

struct LedgerEntry {
  std::string signature;     // exact, e.g. "wrong: fp32 partials"
  std::string kernel = "*";  // glob over the --kernel text (fnmatch), e.g. "split-v1" or "*"
  std::string reason;        // why it is tolerated (required, shown everywhere)
  std::string added;         // who/when, free text (optional)
  int64_t count = 0;         // cases of this campaign that matched
};

class Ledger {
 public:
  // An empty ledger (no file): matches nothing.
  Ledger() = default;
  // Reads and validates FILE; InputError naming the file and the field (e.g. entries[2].reason).
  static Ledger load(const std::string& path);

  // The entry that tolerates `signature` on `kernel`, or nullptr.
  LedgerEntry* match(const std::string& signature, const std::string& kernel);
  const std::vector<LedgerEntry>& entries() const { return entries_; }
  const std::string& path() const { return path_; }
  bool empty() const { return entries_.empty(); }
  // {"file", "entries": [{signature, kernel, reason, added, count}]} for summary.json.
  json to_json() const;

 private:
  std::string path_;
  std::vector<LedgerEntry> entries_;
};

}  // namespace vattn::fuzz
