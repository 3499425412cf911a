// SPDX-License-Identifier: Apache-2.0
// How much host memory one case may take to be made ready and checked, whatever it comes from: a
// case file (vattn/casefile refuses it from its dataspaces, before reading a tensor) or a recipe
// (vattn/gen refuses it from the line, before generating anything). `--max-memory GIB` sets it.
#pragma once

#include <cstdint>
#include <string>

namespace vattn {

// The limit. Default: half the machine's RAM. 0 restores the default.
void set_case_memory_limit(uint64_t bytes);
uint64_t case_memory_limit();

// What a case of these shapes holds, in bytes: its tensors and `outputs` stored outputs widened
// to float. Saturates rather than wraps, whatever a file claims.
uint64_t case_tensor_bytes(int64_t n_q, int64_t heads, int64_t d_qk, int64_t d_v, int64_t n_rows, int64_t keys,
                           int64_t mask_entries, int64_t outputs);
// What checking it takes besides: the oracles' working set (float64 out and lse twice, a bf16
// reference).
uint64_t oracle_scratch_bytes(int64_t n_q, int64_t heads, int64_t d_v);
// The two together: the estimate the limit is held to.
uint64_t case_memory_estimate(int64_t n_q, int64_t heads, int64_t d_qk, int64_t d_v, int64_t n_rows, int64_t keys,
                              int64_t mask_entries, int64_t outputs);

// "" when `need` bytes are within the limit, else "needs N GiB to be DOING, more than the limit
// of M GiB (--max-memory)": DOING is "read and checked" (a file) or "generated and checked".
std::string case_memory_problem(uint64_t need, const std::string& doing);

}  // namespace vattn
