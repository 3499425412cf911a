// SPDX-License-Identifier: Apache-2.0
// Recipe <-> one line. The line is the case's name for people and its seed for machines:
// to_line() prints every field in a fixed order, parse() accepts exactly what it prints
// (plus keys in any order, a missing B, and single-value lists broadcast over B).
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <set>
#include <sstream>

#include "vattn/recipe/recipe.h"
#include "vattn/recipe/vocab.h"

namespace vattn {

namespace {

[[noreturn]] void bad(const std::string& field, const std::string& reason) { throw InputError("", "", field, reason); }

// Shortest decimal that reads back to the same double, so scale=0.1446796 stays that way.
std::string shortest_double(double v) {
  char buf[40];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

std::string list_text(const std::vector<int>& v) {
  bool all_same = !v.empty();
  for (int x : v) all_same = all_same && x == v.front();
  std::ostringstream os;
  os << '[';
  if (all_same) {
    os << v.front();  // "[16]" with B > 1 means every request; parse() broadcasts it back
  } else {
    for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << v[i];
  }
  os << ']';
  return os.str();
}

int64_t parse_int(const std::string& key, const std::string& text, int64_t lo, int64_t hi) {
  if (text.empty()) bad(key, "empty value");
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (*end != '\0' || errno == ERANGE || text[0] == '+' || std::isspace(static_cast<unsigned char>(text[0]))) {
    bad(key, "'" + text + "' is not an integer");
  }
  if (v < lo || v > hi) {
    bad(key, std::to_string(v) + " is outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return v;
}

uint64_t parse_u64(const std::string& key, const std::string& text) {
  if (text.empty() || text[0] == '-' || text[0] == '+' || std::isspace(static_cast<unsigned char>(text[0]))) {
    bad(key, "'" + text + "' is not an unsigned integer");
  }
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (*end != '\0' || errno == ERANGE) bad(key, "'" + text + "' is not an unsigned 64-bit integer");
  return v;
}

std::vector<int> parse_list(const std::string& key, const std::string& text, int lo, int hi) {
  std::string body = text;
  if (body.size() >= 2 && body.front() == '[' && body.back() == ']') {
    body = body.substr(1, body.size() - 2);
  } else if (body.find(',') != std::string::npos) {
    bad(key, "a list needs brackets, e.g. " + key + "=[4099,0]");
  }
  std::vector<int> out;
  size_t start = 0;
  while (true) {
    const size_t comma = body.find(',', start);
    const std::string item = body.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    out.push_back(static_cast<int>(parse_int(key, item, lo, hi)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// "R/Q/T/S": max_requests/max_total_drafts/max_drafts_per_request/max_splits, each >= 1.
Recipe::PlanLimits parse_limits(const std::string& key, const std::string& text) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t slash = text.find('/', start);
    parts.push_back(text.substr(start, slash == std::string::npos ? std::string::npos : slash - start));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  if (parts.size() != 4)
    bad(key, "'" + text + "' is not R/Q/T/S (max_requests/max_total_drafts/max_drafts_per_request/max_splits)");
  Recipe::PlanLimits l;
  l.max_requests = static_cast<int>(parse_int(key, parts[0], 1, vocab::kMaxBatch));
  l.max_total_drafts = parse_int(key, parts[1], 1, vocab::kMaxPlanTotalDrafts);
  l.max_drafts_per_request = static_cast<int>(parse_int(key, parts[2], 1, vocab::kMaxDrafts));
  l.max_splits = static_cast<int>(parse_int(key, parts[3], 1, vocab::kMaxSplits));
  return l;
}

}  // namespace

std::string Recipe::to_line() const {
  std::ostringstream os;
  os << "B=" << prefix.size() << " H=" << heads << " P=" << list_text(prefix) << " T=" << list_text(drafts)
     << " tree=" << tree << " profile=" << profile << " layout=" << layout << " poison=" << (poison ? 1 : 0)
     << " seed=" << seed << " scale=" << shortest_double(sm_scale) << " splits=" << splits;
  if (slot_base != 0) os << " slot_base=" << slot_base;
  if (fault != "none") os << " fault=" << fault;
  if (limits.set())
    os << " limits=" << limits.max_requests << '/' << limits.max_total_drafts << '/' << limits.max_drafts_per_request
       << '/' << limits.max_splits;
  if (sms != 0) os << " sms=" << sms;
  if (sm_blocks != 0) os << " sm_blocks=" << sm_blocks;
  return os.str();
}

Recipe Recipe::parse(const std::string& line) {
  Recipe r;
  std::istringstream in(line);
  std::string token;
  std::set<std::string> seen;
  int64_t batch = -1;
  std::vector<int> prefix, drafts;
  while (in >> token) {
    const size_t eq = token.find('=');
    if (eq == std::string::npos || eq == 0) bad(token, "expected key=value, got '" + token + "'");
    const std::string key = token.substr(0, eq), value = token.substr(eq + 1);
    if (!seen.insert(key).second) bad(key, "given twice");
    if (key == "B") {
      batch = parse_int(key, value, 1, vocab::kMaxBatch);
    } else if (key == "H") {
      r.heads = static_cast<int>(parse_int(key, value, 1, vocab::kMaxHeads));
    } else if (key == "P") {
      prefix = parse_list(key, value, 0, vocab::kMaxPrefix);
    } else if (key == "T") {
      drafts = parse_list(key, value, 1, vocab::kMaxDrafts);
    } else if (key == "tree") {
      if (!vocab::is_tree_kind(value)) bad(key, "unknown tree kind '" + value + "' (" + vocab::kTreeKinds + ")");
      r.tree = value;
    } else if (key == "profile") {
      if (!vocab::is_profile(value)) bad(key, "unknown profile '" + value + "' (" + vocab::kProfiles + ")");
      r.profile = value;
    } else if (key == "layout") {
      if (!vocab::is_layout(value)) bad(key, "unknown layout '" + value + "' (" + vocab::kLayouts + ")");
      r.layout = value;
    } else if (key == "poison") {
      if (value != "0" && value != "1") bad(key, "must be 0 or 1, got '" + value + "'");
      r.poison = value == "1";
    } else if (key == "seed") {
      r.seed = parse_u64(key, value);
    } else if (key == "scale") {
      double v = 0;
      if (!vocab::parse_plain_decimal(value, &v) || v <= 0)
        bad(key, "must be a finite number > 0, got '" + value + "'");
      r.sm_scale = v;
    } else if (key == "splits") {
      r.splits = static_cast<int>(parse_int(key, value, 0, vocab::kMaxSplits));
    } else if (key == "slot_base") {
      r.slot_base = parse_int(key, value, 0, vocab::kMaxSlotBase);
    } else if (key == "fault") {
      if (!vocab::is_fault(value)) bad(key, "unknown fault '" + value + "' (" + vocab::kFaults + ")");
      r.fault = value;
    } else if (key == "limits") {
      r.limits = parse_limits(key, value);
    } else if (key == "sms") {
      r.sms = static_cast<int>(parse_int(key, value, 1, vocab::kMaxSms));
    } else if (key == "sm_blocks") {
      r.sm_blocks = static_cast<int>(parse_int(key, value, 1, vocab::kMaxSmBlocks));
    } else {
      bad(key,
          "unknown key (known: B H P T tree profile layout poison seed scale splits slot_base fault limits sms "
          "sm_blocks)");
    }
  }
  if (seen.empty()) bad("recipe", "empty recipe line");
  if (prefix.empty()) bad("P", "missing (prefix lengths, e.g. P=[4099,0])");
  if (drafts.empty()) bad("T", "missing (draft counts, e.g. T=[17,1])");
  if (batch < 0) batch = static_cast<int64_t>(std::max(prefix.size(), drafts.size()));
  const auto fit = [batch](const char* key, std::vector<int>& v) {
    if (v.size() == 1) v.assign(static_cast<size_t>(batch), v.front());
    if (static_cast<int64_t>(v.size()) != batch) {
      bad(key, "has " + std::to_string(v.size()) + " entries but B=" + std::to_string(batch));
    }
  };
  fit("P", prefix);
  fit("T", drafts);
  int64_t total_prefix = 0, total_drafts = 0;
  for (size_t b = 0; b < prefix.size(); ++b) {
    total_prefix += prefix[b];
    total_drafts += drafts[b];
  }
  if (total_prefix > std::numeric_limits<int32_t>::max()) bad("P", "total prefix length exceeds int32 (kv_indptr)");
  if (total_drafts > std::numeric_limits<int32_t>::max()) bad("T", "total draft count exceeds int32 (qo_indptr)");
  if (r.sm_blocks != 0 && r.sms == 0) bad("sm_blocks", "needs sms (the SM count the plan is made for)");
  if (r.limits.set()) {
    const auto& l = r.limits;
    const int longest = *std::max_element(drafts.begin(), drafts.end());
    if (l.max_requests < batch)
      bad("limits", "max_requests " + std::to_string(l.max_requests) + " is below B=" + std::to_string(batch));
    if (l.max_total_drafts < total_drafts)
      bad("limits",
          "max_total_drafts " + std::to_string(l.max_total_drafts) + " is below sum T=" + std::to_string(total_drafts));
    if (l.max_drafts_per_request < longest)
      bad("limits", "max_drafts_per_request " + std::to_string(l.max_drafts_per_request) +
                        " is below the largest T_b=" + std::to_string(longest));
    if (r.splits > l.max_splits)
      bad("limits", "max_splits " + std::to_string(l.max_splits) + " is below splits=" + std::to_string(r.splits));
  }
  r.prefix = std::move(prefix);
  r.drafts = std::move(drafts);
  return r;
}

std::string recipe_mismatch(const Case& c) {
  if (c.recipe.empty()) return "";
  Recipe r;
  try {
    r = Recipe::parse(c.recipe);
  } catch (const InputError& e) {
    return "'" + c.recipe + "' does not parse (" + e.field() + ": " + e.reason() + ")";
  }
  const std::string head = "'" + c.recipe + "' does not re-create this case: ";
  const int B = c.num_requests();
  if (static_cast<int>(r.prefix.size()) != B)
    return head + "it has B=" + std::to_string(r.prefix.size()) + ", the case " + std::to_string(B);
  if (r.heads != c.num_heads)
    return head + "it has H=" + std::to_string(r.heads) + ", the case " + std::to_string(c.num_heads);
  if (c.d_qk != vocab::kRowDims || c.d_v != vocab::kLatentDims) {
    return head + "recipes make d_qk=" + std::to_string(vocab::kRowDims) +
           ", d_v=" + std::to_string(vocab::kLatentDims) + ", the case has " + std::to_string(c.d_qk) + ", " +
           std::to_string(c.d_v);
  }
  for (int b = 0; b < B; ++b) {
    const int prefix = c.prefix_len(b);
    if (r.prefix[b] != prefix || r.drafts[b] != c.drafts(b)) {
      return head + "request " + std::to_string(b) + " has P=" + std::to_string(r.prefix[b]) +
             " T=" + std::to_string(r.drafts[b]) + ", the case P=" + std::to_string(prefix) +
             " T=" + std::to_string(c.drafts(b));
    }
  }
  if (std::fabs(r.sm_scale - c.sm_scale) > 1e-6 * std::fabs(c.sm_scale))
    return head + "its scale differs from sm_scale";
  return "";
}

}  // namespace vattn
