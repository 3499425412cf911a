// SPDX-License-Identifier: Apache-2.0
// Where each prefix token's KV row sits in the case's pool (kv_pool rows, kv_indices).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vattn::gen {

struct PoolLayout {
  int64_t n_rows = 0;
  std::vector<int32_t> row_of_token;  // [sum_b P_b], tokens request-major in token order
  std::vector<int64_t> slot_ids;      // [n_rows] original pool slots, or empty
  std::vector<uint8_t> referenced;    // [n_rows], 1 where some request reads the row
};

// kind: contiguous | scattered | reversed | sparse. With `gaps`, layouts that would use every
// row get unreferenced rows too (between and around the requests' blocks, or mixed in), so
// poisoning them means something.
PoolLayout make_layout(const std::string& kind, const std::vector<int>& prefix, bool gaps, uint64_t seed);

}  // namespace vattn::gen
