// SPDX-License-Identifier: Apache-2.0
// CPU oracles for the verify-attention contract (docs/verify-attention.md).
// They share the contract with the kernel, never its index or split code: a shared bug
// would pass unseen. Both read the case's own arrays directly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vattn/case/case.h"

namespace vattn {

// Per (row = draft of a request, head): out [n_q, H, d_v], lse [n_q, H].
struct Reference {
  std::vector<double> out;        // [n_q * H * d_v]
  std::vector<double> lse;        // [n_q * H]; -inf for an empty key set
  std::vector<double> abs_pv;     // [n_q * H * d_v]: sum_k p_k |v_k|, the scale of P-rounding error
  std::vector<double> lse_scale;  // [n_q * H]: max_k sm_scale * sum_d |q_d k_d| over visible k (logit magnitude)
};

// Float64 accumulation over the bf16 inputs; exact semantics incl. empty rows (out 0, lse -inf).
// Refuses (InputError naming the case) a case whose oracle_work is over oracle_work_limit(), as
// reference_bf16_emulated does: it would run for hours.
Reference oracle_fp64(const Case& c);

// The same math with the roundings a correct fast kernel may make: fp32 logits,
// probabilities rounded to bf16 before P.V, fp32 accumulation, output rounded to bf16.
// Its error against oracle_fp64 is the yardstick for the ratio check.
Reference reference_bf16_emulated(const Case& c);

// The work of the CPU oracles on a case: sum_b T_b * H * (P_b + T_b), query rows x keys x heads
// (every draft counted as a key: a bound, a tree shows each row fewer). Both oracles together
// take about 0.3 us of one core per unit.
int64_t oracle_work(int heads, const std::vector<int>& prefix, const std::vector<int>& drafts);
int64_t oracle_work(const Case& c);

// The most work the CPU oracles take on (`vattn replay|gen --max-oracle-work N`): 4e9 by default,
// tens of minutes of one core, above every captured call (a K2.6 batch of 8 at 131072 tokens,
// 64 heads and 16 drafts is 1.1e9). 0 restores the default. Process-wide.
constexpr int64_t kDefaultOracleWorkLimit = 4000000000;
void set_oracle_work_limit(int64_t work);
int64_t oracle_work_limit();
// "" when `work` is within the limit, else "needs N units of CPU-oracle work (query rows x keys x
// heads), more than the limit of M (--max-oracle-work)".
std::string oracle_work_problem(int64_t work);

// Progress of the CPU oracles on the calling thread, for long contexts: fn(ctx, work) after each
// block of keys, work = query rows x keys of that block (a case's total is sum_b T_b H P_b,
// plus its drafts). nullptr (the default) reports nothing; other threads are not affected.
using OracleProgressFn = void (*)(void* ctx, int64_t work);
void set_oracle_progress(OracleProgressFn fn, void* ctx);

}  // namespace vattn
