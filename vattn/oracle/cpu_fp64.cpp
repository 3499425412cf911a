// SPDX-License-Identifier: Apache-2.0
// oracle_fp64: the float64 CPU oracle. bf16 inputs are exact in double, so its logits, softmax
// and P.V carry only float64 rounding (~1e-16 relative): the ground truth for every tolerance.
#include "vattn/oracle/cpu_common.h"
#include "vattn/oracle/cpu_oracle.h"

namespace vattn {

Reference oracle_fp64(const Case& c) {
  oracle_detail::EngineConfig cfg;
  // 1024 keys x 512 rows keeps a logit block at 4 MB (near cache) while each product is still
  // large enough to run at full GEMM speed; measured with vattn_oracle_bench.
  cfg.key_block = 1024;
  cfg.row_block = 512;
  cfg.tile = 0;
  cfg.scales = true;
  return oracle_detail::attend<double>(c, cfg);
}

}  // namespace vattn
