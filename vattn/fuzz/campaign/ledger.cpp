// SPDX-License-Identifier: Apache-2.0
#include "vattn/fuzz/campaign/ledger.h"

#include <fnmatch.h>

#include <unordered_map>
#include <utility>

#include "vattn/case/case.h"
#include "vattn/case/file_read.h"
#include "vattn/fuzz/protocol/json_read.h"

namespace vattn::fuzz {

namespace {

std::string entry_field(size_t i, const char* key) {
  return "entries[" + std::to_string(i) + "]" + (key != nullptr ? std::string(".") + key : "");
}

// Entry i's string `key`, moved out of the parsed file (one lookup, no copy: a ledger may hold
// hundreds of thousands of entries); `fallback` when it is absent and optional.
std::string take_string(json& e, const char* key, const std::string& path, size_t i, const char* fallback = nullptr) {
  const auto it = e.find(key);
  if (it == e.end()) {
    if (fallback != nullptr) return fallback;
    throw InputError(path, "", entry_field(i, key), "missing (every entry needs it)");
  }
  if (!it->is_string() || it->get_ref<const std::string&>().empty())
    throw InputError(path, "", entry_field(i, key), "must be a non-empty string");
  return std::move(it->get_ref<std::string&>());
}

}  // namespace

Ledger Ledger::load(const std::string& path) {
  std::string why;
  json j = parse_json_bounded<json>(read_input_file(path, kMaxLedgerBytes, "ledger"), &why);
  if (j.is_discarded()) throw InputError(path, "", "ledger", "is not a JSON object: " + why);
  if (!j.is_object()) throw InputError(path, "", "ledger", "is not a JSON object");
  if (j.value("schema", "") != kLedgerSchema)
    throw InputError(path, "", "schema", std::string("must be '") + kLedgerSchema + "'");
  if (!j.contains("version") || !j.at("version").is_number_integer() || j.at("version").get<int>() < 1 ||
      j.at("version").get<int>() > kLedgerVersion)
    throw InputError(path, "", "version", "this vattn reads ledger versions 1 to " + std::to_string(kLedgerVersion));
  if (!j.contains("entries") || !j.at("entries").is_array())
    throw InputError(path, "", "entries", "must be an array (it may be empty)");
  json& entries = j.at("entries");
  if (entries.size() > kMaxLedgerEntries)
    throw InputError(path, "", "entries",
                     "has " + std::to_string(entries.size()) + " entries, more than a ledger may hold (" +
                         std::to_string(kMaxLedgerEntries) + ")");
  Ledger l;
  l.path_ = path;
  l.entries_.reserve(entries.size());
  // (signature, kernel) -> its entry's index: a repeat is found by a hash, not by a scan of every
  // entry before it (a 200,000-entry ledger took minutes that way). The key carries the
  // signature's length, so no signature and kernel run into each other.
  std::unordered_map<std::string, size_t> seen;
  seen.reserve(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    json& e = entries[i];
    if (!e.is_object()) throw InputError(path, "", entry_field(i, nullptr), "must be an object");
    LedgerEntry le;
    le.signature = take_string(e, "signature", path, i);
    le.reason = take_string(e, "reason", path, i);
    le.kernel = take_string(e, "kernel", path, i, "*");
    le.added = take_string(e, "added", path, i, "");
    const auto [at, added] = seen.emplace(std::to_string(le.signature.size()) + ':' + le.signature + le.kernel, i);
    if (!added)
      throw InputError(path, "", entry_field(i, nullptr),
                       "repeats the entry for '" + le.signature + "' on kernel '" + le.kernel + "' (" +
                           entry_field(at->second, nullptr) + ")");
    l.entries_.push_back(std::move(le));
  }
  return l;
}

LedgerEntry* Ledger::match(const std::string& signature, const std::string& kernel) {
  for (LedgerEntry& e : entries_)
    if (signature_matches(e.signature, signature) && ::fnmatch(e.kernel.c_str(), kernel.c_str(), 0) == 0) return &e;
  return nullptr;
}

LedgerEntry* Ledger::tolerate(const std::string& signature, const std::string& kernel, int64_t cases) {
  LedgerEntry* e = match(signature, kernel);
  if (e != nullptr) {
    e->count += cases;
    e->matched[signature] += cases;
  }
  return e;
}

json Ledger::to_json() const {
  json entries = json::array();
  for (const LedgerEntry& e : entries_)
    entries.push_back({{"signature", e.signature},
                       {"kernel", e.kernel},
                       {"reason", e.reason},
                       {"added", e.added},
                       {"count", e.count},
                       {"matched", e.matched}});
  return {{"file", path_}, {"entries", entries}};
}

}  // namespace vattn::fuzz
