// SPDX-License-Identifier: Apache-2.0
// What a campaign reached: counts per bucket of every recipe dimension the generators draw
// (P, T, H, B, tree kinds, profiles, layouts, split classes, pool sizes, injected faults), the
// stream's families (short, serving, long, captured), the caller's plan (limits unset, exact or
// with headroom; max_splits 1, 2-8 or more; the SM count planned for) and the device-error paths
// the verdicts showed. Printed in the summary, stored in summary.json.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "vattn/fuzz/gen/case_stream.h"
#include "vattn/fuzz/protocol/protocol.h"

namespace vattn::fuzz {

class Coverage {
 public:
  void add(const StreamCase& c, uint32_t device_error);
  json to_json() const;
  std::string text() const;  // a few lines, "dimension: bucket n, bucket n, ..."

 private:
  std::map<std::string, std::map<std::string, int64_t>> counts_;
};

}  // namespace vattn::fuzz
