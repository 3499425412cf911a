// SPDX-License-Identifier: Apache-2.0
// The vocabulary of a recipe line: the names it may use for trees, value profiles, pool layouts and
// faults, the largest sizes it may ask for, and the row geometry the generators make. Kept below the
// generators so that the parser, the generators and the CLI help agree without the parser
// depending on the generators.
#pragma once

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

namespace vattn::vocab {

constexpr int kLatentDims = 512;  // kv_lora_rank: the value part of a KV row
constexpr int kRopeDims = 64;     // qk_rope_head_dim
constexpr int kRowDims = kLatentDims + kRopeDims;

constexpr const char* kTreeKinds = "chain|random|star|ddtree|deep|wide|padded";
constexpr const char* kProfiles = "uniform|k26|adversarial|huge|ties|tiny";
constexpr const char* kLayouts = "contiguous|scattered|reversed|sparse";
// Device-side input faults the fuzzer injects (Recipe::fault): one kv index set to n_slots, to
// -1 or to INT32_MAX; or the last request given one draft more than the plan's limits allow.
constexpr const char* kFaults = "none|index-nslots|index-neg|index-max|drafts-over";
// Largest slot_base a recipe may carry: slots stay int32 (kv_indices) with room for the pool.
constexpr int64_t kMaxSlotBase = int64_t{1} << 30;

// Largest B and H a recipe (or vattn gen) may ask for.
constexpr int kMaxBatch = 65536;
constexpr int kMaxHeads = 1024;
// Largest T_b a recipe may ask for: the spec's maximum is 1025; the dense mask is T^2 bytes.
constexpr int kMaxDrafts = 4096;
// Largest P_b a recipe (or vattn gen --prefix) may ask for.
constexpr int kMaxPrefix = 1 << 30;
// Largest forced split count a recipe (or replay --splits) may carry: the in-tree revision's limit.
constexpr int kMaxSplits = 256;
// Largest SM count and resident partial blocks per SM a recipe may ask a plan to be made for.
constexpr int kMaxSms = 512;
constexpr int kMaxSmBlocks = 32;
// Largest max_total_drafts a recipe's plan limits may carry (n_q is int32 in qo_indptr).
constexpr int64_t kMaxPlanTotalDrafts = (int64_t{1} << 31) - 1;

// A number written the plain decimal way (digits, at most one '.', an optional exponent): what
// recipes and --scale accept; strtod alone would also take hex ("0x10"), "inf" and "nan".
inline bool is_plain_decimal(const std::string& s) {
  size_t i = 0, digits = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) ++digits;
  if (i < s.size() && s[i] == '.')
    for (++i; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) ++digits;
  if (digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    size_t exp_digits = 0;
    for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) ++exp_digits;
    if (exp_digits == 0) return false;
  }
  return i == s.size();
}

// `s` as a finite double when it is a plain decimal number in range; false otherwise.
inline bool parse_plain_decimal(const std::string& s, double* out) {
  if (!is_plain_decimal(s)) return false;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (*end != '\0' || errno == ERANGE || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

// True when `name` is one of the '|'-separated words of `list`.
inline bool in_list(const std::string& name, const char* list) {
  const std::string all = std::string("|") + list + "|";
  return !name.empty() && name.find('|') == std::string::npos && all.find("|" + name + "|") != std::string::npos;
}
inline bool is_tree_kind(const std::string& s) { return in_list(s, kTreeKinds); }
inline bool is_profile(const std::string& s) { return in_list(s, kProfiles); }
inline bool is_layout(const std::string& s) { return in_list(s, kLayouts); }
inline bool is_fault(const std::string& s) { return in_list(s, kFaults); }

}  // namespace vattn::vocab
