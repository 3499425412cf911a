// SPDX-License-Identifier: Apache-2.0
#include "vattn/case/memory_limit.h"

#include <unistd.h>

#include <cstdio>

namespace vattn {

namespace {
uint64_t g_case_memory_limit = 0;  // 0: the default
}  // namespace

void set_case_memory_limit(uint64_t bytes) { g_case_memory_limit = bytes; }

uint64_t case_memory_limit() {
  if (g_case_memory_limit > 0) return g_case_memory_limit;
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  const uint64_t ram =
      pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : (8ull << 30);
  return ram / 2;
}

namespace {

// long double: a dataspace may claim anything; the sums must not wrap. A negative dim
// (num_heads = -1 in a file) can make them negative: 0 then, validate() reports the dim.
uint64_t saturated(long double bytes) {
  if (!(bytes > 0)) return 0;
  return bytes > 1.8e19L ? UINT64_MAX : static_cast<uint64_t>(bytes);
}

long double tensor_bytes(int64_t n_q, int64_t heads, int64_t d_qk, int64_t d_v, int64_t n_rows, int64_t keys,
                         int64_t mask_entries, int64_t outputs) {
  const long double q = static_cast<long double>(n_q), h = static_cast<long double>(heads);
  return 2.0L * n_rows * d_qk                   // kv_pool (bf16)
         + 2.0L * q * h * d_qk                  // q
         + 2.0L * q * d_qk                      // kv_draft
         + 4.0L * keys + mask_entries           // kv_indices, draft_mask
         + outputs * 4.0L * q * h * (d_v + 1);  // stored outputs, widened to float
}

// The oracle's float64 out and lse, twice, and a bf16 reference.
long double scratch_bytes(int64_t n_q, int64_t heads, int64_t d_v) {
  return 3.0L * 8.0L * static_cast<long double>(n_q) * heads * (d_v + 1);
}

}  // namespace

uint64_t case_tensor_bytes(int64_t n_q, int64_t heads, int64_t d_qk, int64_t d_v, int64_t n_rows, int64_t keys,
                           int64_t mask_entries, int64_t outputs) {
  return saturated(tensor_bytes(n_q, heads, d_qk, d_v, n_rows, keys, mask_entries, outputs));
}

uint64_t oracle_scratch_bytes(int64_t n_q, int64_t heads, int64_t d_v) {
  return saturated(scratch_bytes(n_q, heads, d_v));
}

uint64_t case_memory_estimate(int64_t n_q, int64_t heads, int64_t d_qk, int64_t d_v, int64_t n_rows, int64_t keys,
                              int64_t mask_entries, int64_t outputs) {
  return saturated(tensor_bytes(n_q, heads, d_qk, d_v, n_rows, keys, mask_entries, outputs) +
                   scratch_bytes(n_q, heads, d_v));
}

std::string case_memory_problem(uint64_t need, const std::string& doing) {
  const uint64_t limit = case_memory_limit();
  if (need <= limit) return "";
  char buf[96];
  std::snprintf(buf, sizeof buf, "needs %.2f GiB to be ", static_cast<double>(need) / (1ull << 30));
  std::string out = buf + doing;
  std::snprintf(buf, sizeof buf, ", more than the limit of %.2f GiB (--max-memory)",
                static_cast<double>(limit) / (1ull << 30));
  return out + buf;
}

}  // namespace vattn
