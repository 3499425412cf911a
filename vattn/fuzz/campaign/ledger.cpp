// SPDX-License-Identifier: Apache-2.0
#include "vattn/fuzz/campaign/ledger.h"

#include <fnmatch.h>

#include <fstream>
#include <sstream>

#include "vattn/case/case.h"

namespace vattn::fuzz {

namespace {

std::string required_string(const json& e, const char* key, const std::string& path, const std::string& where) {
  if (!e.contains(key)) throw InputError(path, "", where + "." + key, "missing (every entry needs it)");
  if (!e.at(key).is_string() || e.at(key).get<std::string>().empty())
    throw InputError(path, "", where + "." + key, "must be a non-empty string");
  return e.at(key).get<std::string>();
}

}  // namespace

Ledger Ledger::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path, "", "ledger", "cannot be read (no such file?)");
  std::stringstream text;
  text << in.rdbuf();
  const json j = json::parse(text.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw InputError(path, "", "ledger", "is not a JSON object");
  if (j.value("schema", "") != kLedgerSchema)
    throw InputError(path, "", "schema", std::string("must be '") + kLedgerSchema + "'");
  if (!j.contains("version") || !j.at("version").is_number_integer() || j.at("version").get<int>() < 1 ||
      j.at("version").get<int>() > kLedgerVersion)
    throw InputError(path, "", "version", "this vattn reads ledger versions 1 to " + std::to_string(kLedgerVersion));
  if (!j.contains("entries") || !j.at("entries").is_array())
    throw InputError(path, "", "entries", "must be an array (it may be empty)");
  Ledger l;
  l.path_ = path;
  const json& entries = j.at("entries");
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string where = "entries[" + std::to_string(i) + "]";
    const json& e = entries[i];
    if (!e.is_object()) throw InputError(path, "", where, "must be an object");
    LedgerEntry le;
    le.signature = required_string(e, "signature", path, where);
    le.reason = required_string(e, "reason", path, where);
    if (e.contains("kernel")) le.kernel = required_string(e, "kernel", path, where);
    if (e.contains("added")) le.added = required_string(e, "added", path, where);
    for (const LedgerEntry& other : l.entries_)
      if (other.signature == le.signature && other.kernel == le.kernel)
        throw InputError(path, "", where, "repeats the entry for '" + le.signature + "' on kernel '" + le.kernel + "'");
    l.entries_.push_back(le);
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
