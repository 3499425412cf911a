// SPDX-License-Identifier: Apache-2.0
// One params struct for every kernel of the split revision, passed by value
// (__grid_constant__), plus the workspace layout all three kernels agree on.
#pragma once

#include <cstddef>
#include <cstdint>

#include "vattn_abi.h"

// The revision being built: its namespace, where its Traits are (split_traits.h). Set by the
// revision's .cu; split-v1's by default, for code that includes the shared headers alone
// (vattn_ceiling_probe runs split-v1's tile math).
#ifndef VATTN_KERN_NS
#define VATTN_KERN_NS kern
#endif
#include "split_traits.h"

namespace vattn::VATTN_KERN_NS {

constexpr int kDqk = 576;                           // kv_lora_rank 512 + rope 64
constexpr int kDv = 512;                            // V = first 512 columns of the same KV row
constexpr int kRowsPerTile = Traits::kRowsPerTile;  // query rows (draft x head) per work item
constexpr int kKeysPerTile = 32;                    // keys per pipeline stage
constexpr int kStages = 2;
// 8 warps. split-v1: S by (d_qk quarter x key half), P.V by 64 output columns; split-v2: warp
// (row block, d_qk half) for S, (row block, 256 columns) for P.V.
constexpr int kPartialThreads = 256;
constexpr int kMinTilesPerSplit = Traits::kMinTilesPerSplit;
constexpr int kThreads = 256;  // the plan and reduce kernels
constexpr int kSmemStride = kDqk + Traits::kSmemRowPad;
constexpr int kMaxHeads = 128;
constexpr int kMaxDraftsPerRequest = 1025;
constexpr int64_t kMaxPrefix = 262144;
constexpr int kMaxRequests = 1024;  // the plan kernel scans requests in one block
constexpr int kMaxSplits = 256;
constexpr int kMinKeysPerSplit = kMinTilesPerSplit * kKeysPerTile;

constexpr int kXStride = kKeysPerTile + 8;  // floats per row of an S partial: conflict-free float2 stores
constexpr int kPStride = kKeysPerTile + 8;  // bf16 per row of P: ldmatrix rows on distinct banks
constexpr size_t kSmemKv = sizeof(uint16_t) * kStages * kKeysPerTile * kSmemStride;
constexpr size_t kSmemP = sizeof(uint16_t) * kRowsPerTile * kPStride;
// kSoftmaxInRegisters (split-v2): each warp's S partial (16 rows x 32 keys, 16 floats a lane)
// in mma-fragment order, read by the warp that shares its rows; on the rare non-finite-V path, a
// row block's P in row order over its first warp's slot. Then two Q k-steps per thread (2 x
// 16 B), which the registers cannot hold. No P, no row statistics: each thread keeps its rows'
// in registers. Otherwise (split-v1): one S partial per d_qk quarter, P, and per row the
// rescale, 1/l and lse.
constexpr bool kSoftmaxInRegisters = Traits::kSoftmaxInRegisters;
constexpr size_t kSmemExchange =
    kSoftmaxInRegisters ? sizeof(float) * kPartialThreads * 16 : sizeof(float) * 4 * kRowsPerTile * kXStride;
static_assert(!kSoftmaxInRegisters || sizeof(uint16_t) * 16 * kPStride <= kSmemExchange / (kPartialThreads / 32),
              "split-v2 keeps a row block's P (rare path) in one warp's exchange slot");
constexpr size_t kSmemQLast = kSoftmaxInRegisters ? 2 * 16 * kPartialThreads : 0;
constexpr size_t kSmemRowStats = kSoftmaxInRegisters ? 0 : sizeof(float) * 3 * kRowsPerTile;
constexpr size_t kSmemBytes = kSmemKv + kSmemExchange + (kSoftmaxInRegisters ? 0 : kSmemP) + kSmemRowStats + kSmemQLast;
// Static shared memory of the partial kernel (row sources, error flag) is counted by the audit.
static_assert(kSmemBytes + 1024 <= 101376, "sm_120 allows 101376 B of shared memory per block");

// Per-request schedule, written by the plan kernel, read by the others.
struct RequestPlan {
  int32_t prefix;         // P_b
  int32_t drafts;         // T_b
  int32_t row_tiles;      // ceil(T_b * H / kRowsPerTile)
  int32_t splits;         // KV splits of this request
  int32_t chunk;          // keys per split, a multiple of kKeysPerTile
  int32_t work_begin;     // first work item (row tile x split)
  int32_t partial_begin;  // first partial slot (row tile x split); unused when splits == 1
  int32_t reduce_begin;   // first reduce item (row tile); none when splits == 1
  int32_t rotate;         // local work item i is number (i + rotate) mod (row_tiles x splits) of the
                          // split-major order; 0 but in split-v2's packed plans (split_pack.h)
};

struct WorkspaceHeader {
  uint32_t error;        // VATTN_DEVERR_* bits (ABI: word 0)
  uint32_t splits_used;  // largest split count of any request (ABI: word 1)
  int32_t total_work;
  int32_t total_reduce;
  int32_t num_requests;
};

// Byte offsets inside the caller-owned workspace, a pure function of the limits.
struct WorkspaceLayout {
  size_t header = 0;
  size_t requests = 0;
  size_t partial_lse = 0;
  size_t partial_out = 0;
  size_t total = 0;
  int64_t partial_tiles = 0;  // capacity in row-tile x split slots
};

inline size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

inline WorkspaceLayout workspace_layout(const vattn_limits& lim) {
  WorkspaceLayout w;
  const int64_t max_rows = lim.max_total_drafts * lim.num_heads;
  // Each request's last row tile may be partial, hence + max_requests.
  const int64_t max_row_tiles = (max_rows + kRowsPerTile - 1) / kRowsPerTile + lim.max_requests;
  w.partial_tiles = lim.max_splits > 1 ? max_row_tiles * lim.max_splits : 0;
  w.header = 0;
  w.requests = 256;
  w.partial_lse = align_up(w.requests + sizeof(RequestPlan) * static_cast<size_t>(lim.max_requests), 256);
  w.partial_out = align_up(w.partial_lse + sizeof(float) * kRowsPerTile * static_cast<size_t>(w.partial_tiles), 256);
  w.total = align_up(w.partial_out + sizeof(float) * kRowsPerTile * kDv * static_cast<size_t>(w.partial_tiles), 256);
  return w;
}

struct SplitParams {
  vattn_args a;
  int max_drafts_per_request;
  int64_t max_total_drafts;
  int max_splits;
  int target_items;  // work items that fill the GPU once (SMs x resident blocks)
  int grid_partial;
  WorkspaceHeader* header;
  RequestPlan* requests;
  float* partial_lse;  // [slot][kRowsPerTile]
  float* partial_out;  // [slot][kRowsPerTile][kDv]
};

}  // namespace vattn::VATTN_KERN_NS
