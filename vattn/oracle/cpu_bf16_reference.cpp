// SPDX-License-Identifier: Apache-2.0
// reference_bf16_emulated: what a correct bf16 flash kernel computes, on the CPU. fp32 logits
// (exact bf16 products, fp32 sums), online softmax over 32-key tiles in fp32 with probabilities
// taken relative to the running max of their tile and rounded to bf16 before P.V, row sums from
// the unrounded fp32 probabilities, fp32 accumulation, output rounded to bf16, lse in fp32.
//
// The rounding points are exactly a tiled kernel's. The one liberty: a tile's rescale factor
// exp(m_tile - m_block) is applied to its bf16 probabilities before a single P.V product per key
// block, instead of rescaling the accumulator tile by tile; the two differ by fp32 rounding
// (a few 2^-24 relative), three orders of magnitude below the bf16 effects being emulated.
#include "vattn/oracle/cpu_common.h"
#include "vattn/oracle/cpu_oracle.h"

namespace vattn {

Reference reference_bf16_emulated(const Case& c) {
  oracle_detail::EngineConfig cfg;
  cfg.key_block = 2048;
  cfg.row_block = 512;
  cfg.tile = 32;
  cfg.round_p_bf16 = true;
  cfg.round_out_bf16 = true;
  cfg.scales = false;
  return oracle_detail::attend<float>(c, cfg);
}

}  // namespace vattn
