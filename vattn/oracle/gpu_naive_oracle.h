// SPDX-License-Identifier: Apache-2.0
// The naive GPU oracle: float32 logits and weights (sums kept in float64 so a 262144-key row
// does not drift), one warp per (draft row, head, 2048-key chunk) and an exact float64 merge of
// the chunks, no tiling, no tensor cores. It exists so long contexts can be checked fast, and is itself checked
// against the CPU float64 oracle. It reads the DENSE 0/1 mask and its own offsets, never
// the kernel's packed bits or planner.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace vattn {

struct NaiveGpuArgs {
  const uint16_t* q;        // bf16 [n_q, H, d_qk]
  const uint16_t* kv_pool;  // bf16 [n_rows, d_qk]
  const int32_t* kv_indices;
  const int32_t* kv_indptr;    // [B+1]
  const uint16_t* kv_draft;    // bf16 [n_q, d_qk]
  const int32_t* qo_indptr;    // [B+1]
  const uint8_t* mask;         // dense, per request T_b x T_b row-major
  const int64_t* mask_indptr;  // [B+1]
  float* out;                  // fp32 [n_q, H, d_v]
  float* lse;                  // fp32 [n_q, H]
  float* abs_pv;               // optional fp32 [n_q, H, d_v]: sum_k p_k |v_k| (tolerance scale)
  float* lse_scale;            // optional fp32 [n_q, H]: max_k sm_scale * sum_d |q_d k_d|
  int num_requests;
  int64_t n_q;
  int64_t max_keys;  // largest P_b + T_b (host-known): how many key chunks a row needs
  int num_heads, d_qk, d_v;
  float sm_scale;
};

// Enqueues the oracle on `stream`; returns the launch error, if any.
cudaError_t naive_gpu_attention(const NaiveGpuArgs& args, cudaStream_t stream);

}  // namespace vattn
