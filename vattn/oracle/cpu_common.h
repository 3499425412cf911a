// SPDX-License-Identifier: Apache-2.0
// The attention engine behind both CPU oracles (private to vattn/oracle/; tests may drive it with tiny
// blocks to reach every blocking edge cheaply). Per request it gathers each visible KV row once,
// one key block at a time, and runs an online softmax with matrix products per block.
//
// Masking rule: a key outside K(b,i) never enters a product with a value that could be NaN/Inf.
// Logits of masked drafts are replaced (select, not multiply) by -inf, and P.V runs on a copy of
// the draft rows whose non-finite entries are zeroed; a non-finite entry of a draft is added back
// only to the rows that see that draft. Unreferenced pool rows are never read.
#pragma once

#include "vattn/oracle/cpu_oracle.h"

namespace vattn::oracle_detail {

// Calls the calling thread's set_oracle_progress() sink, if any.
void report_oracle_progress(int64_t work);

struct EngineConfig {
  int key_block = 2048;  // prefix keys gathered and multiplied at once (bounds memory)
  int row_block = 512;   // query rows (draft x head) per product
  // Query rows that share one sweep over the keys. Bounds the per-request state (Q, accumulators,
  // mask) for huge T_b*H; a larger group re-reads the keys less often.
  int row_group = 4096;
  // The running max is refreshed every `tile` keys and probabilities are taken relative to it,
  // as a flash kernel does per KV tile; 0 means one tile per key block.
  int tile = 0;
  bool round_p_bf16 = false;    // P rounded to bf16 before P.V (row sums stay unrounded)
  bool round_out_bf16 = false;  // final output rounded to bf16
  bool scales = true;           // also fill abs_pv and lse_scale
};

// Scalar is double (oracle_fp64) or float (reference_bf16_emulated): the type of Q, K, logits,
// probabilities and accumulators. abs_pv and lse_scale are accumulated in float either way: they
// only scale tolerance bounds. Validates the case first (InputError on bad input) and refuses one
// whose oracle_work is over the limit (InputError naming the case and --max-oracle-work).
template <class Scalar>
Reference attend(const Case& c, const EngineConfig& cfg);

extern template Reference attend<double>(const Case&, const EngineConfig&);
extern template Reference attend<float>(const Case&, const EngineConfig&);

}  // namespace vattn::oracle_detail
