// SPDX-License-Identifier: Apache-2.0
// The campaign's case stream: (campaign seed, case index) -> one recipe, completely. Nothing else
// feeds a case, so a journal of indices is enough to resume a campaign, and two workers (or two
// hosts) that take disjoint indices never run the same case.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "vattn/fuzz/gen/gen_recipe.h"
#include "vattn/fuzz/gen/mix_table.h"
#include "vattn/gen/generate.h"

namespace vattn::fuzz {

// What a campaign draws from. small/medium are the RapidCheck budgets of the property suites
// (host oracles); large is the overnight GPU mix: about 40% serving-shaped cases (K2.6 verify
// steps, serving_family.h), 40% short cases (the medium budget, held to the CPU oracle) and 20%
// long-context ones (one request with P_b >= 65536, held to the naive GPU oracle). Device
// targets also get device-side variants and the caller's plan limits, per case; revisions with
// the test plan hook other GPUs' plans; a mix table (--mix-from) replaces a share of any budget's
// cases with captured shapes.
struct StreamConfig {
  uint64_t seed = 1;
  std::string budget = "large";  // small | medium | large
  // Draw slot_base and fault, and the plan limits a caller passes (GPU targets only: a host
  // target plans nothing, and its lines stay free of run parameters it would ignore).
  bool device_variants = false;
  // Draw the plan another GPU would make (sms, sm_blocks run parameters): only for revisions
  // with the in-tree test plan hook (kernels/vattn_abi.h).
  bool plan_variants = false;
  // Captured shapes (nullptr: none); checked by check_mix_table when the stream is made.
  std::shared_ptr<const MixTable> mix;
};

struct StreamCase {
  int64_t index = 0;
  Recipe recipe;
  std::string family;         // "short" | "long" | "serving" | "captured"
  int64_t work = 0;           // sum_b T_b * H * (P_b + T_b)
  bool long_context = false;  // some P_b >= kLongPrefix
};

constexpr int kLongPrefix = 65536;

class CaseStream {
 public:
  // Throws InputError: field --budget on an unknown budget; check_mix_table's on a bad mix.
  explicit CaseStream(StreamConfig config);
  const StreamConfig& config() const { return config_; }
  StreamCase at(int64_t index) const;
  // The limits every recipe of this stream stays within (plan limits of a GPU worker).
  const GenBudget& envelope() const { return envelope_; }

 private:
  StreamConfig config_;
  GenBudget short_, long_, serving_, envelope_;
};

// One recipe's size class and coverage buckets, for progress lines and the summary.
std::string size_class(const StreamCase& c);    // its family: "short" | "long" | "serving" | "captured"
std::string prefix_bucket(const Recipe& r);     // largest P_b: "0", "1-64", "65-4096", "4097-65535", ">=65536"
std::string draft_bucket(const Recipe& r);      // largest T_b: "1", "2-16", "17-64", "65-256", ">=257"
std::string batch_bucket(const Recipe& r);      // "1", "2-4", "5-16", ">16"
std::string split_class(const Recipe& r);       // "auto", "1", "<=tiles", ">tiles (empty splits)", ">=32"
std::string pool_class(const Recipe& r);        // "ordinary" | "slot*576 >= 2^31" | "slot*576 >= 2^32"
std::string limits_class(const Recipe& r);      // "unset" | "exact" (B, sum T, largest T_b) | "headroom"
std::string max_splits_class(const Recipe& r);  // "unset" | "1" | "2-8" | ">8"
std::string sm_class(const Recipe& r);          // "native" | "1" | "132" | "188" | "other"

}  // namespace vattn::fuzz
