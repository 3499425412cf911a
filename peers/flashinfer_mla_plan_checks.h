// SPDX-License-Identifier: Apache-2.0
// What FlashInfer's MLAPlan (attention/scheduler.cuh) does not check before it writes, checked
// here first. MLAPlan sizes its per-work arrays for 16384 work items and its merge arrays for
// num_sm CTAs, and writes past both when a batch needs more; and its causal KV bound (ceil)
// differs from the kernels' (floor) when a CTA's query tile ends inside a query's heads, where
// the kernels would drop a visible key. FlashInfer's Python wrapper refuses both cases
// (mla/_batch_mla/_backends/_fa_common.py); so does this library. The schedule below follows
// MLAPlan's arithmetic (cluster size, effective KV lengths, split limit), not its heap order.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace vfi {

constexpr int64_t kMaxWorks = 16384;  // MLAPlan's max_total_num_works

struct ScheduleEstimate {
  int cluster_size = 1, clusters = 0, tile_q = 64;  // tile_q: packed rows per cluster
  int64_t works = 0, merge_ctas = 0, kv_split_limit = 0;
};

inline int64_t ceil_div64(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Request b has q = qo_indptr[b+1] - qo_indptr[b] queries and kv = kv_len[b] keys.
inline ScheduleEstimate estimate_schedule(const int32_t* qo_indptr, const int32_t* kv_len, int batch, int heads,
                                          int num_sm, bool causal) {
  ScheduleEstimate s;
  int64_t packed = 0;
  for (int b = 0; b < batch; ++b) packed += int64_t(qo_indptr[b + 1] - qo_indptr[b]) * heads;
  s.cluster_size = packed / batch > 64 ? 2 : 1;
  s.clusters = num_sm / s.cluster_size;
  s.tile_q = 64 * s.cluster_size;
  struct Tile {
    int64_t kv, rows;
  };
  std::vector<Tile> tiles;
  int64_t total = 0;
  for (int b = 0; b < batch; ++b) {
    const int64_t q = qo_indptr[b + 1] - qo_indptr[b], kv = kv_len[b], rows_all = q * heads;
    const int64_t n_tiles = ceil_div64(rows_all, s.tile_q);
    for (int64_t t = 0; t < n_tiles; ++t) {
      int64_t eff = kv;
      if (causal && t + 1 != n_tiles)
        eff = std::max<int64_t>(std::min(kv - q + ceil_div64((t + 1) * s.tile_q, heads), kv), 0);
      tiles.push_back({eff, std::min<int64_t>(s.tile_q, rows_all - t * s.tile_q)});
      total += eff;
    }
  }
  const int64_t avg = std::max<int64_t>(ceil_div64(total, std::max(s.clusters, 1)), 1);
  s.kv_split_limit = avg <= 8 ? 32 : avg <= 16 ? 64 : avg <= 32 ? 128 : avg <= 64 ? 192 : ceil_div64(avg, 256) * 256;
  for (const Tile& t : tiles) {
    s.works += std::max<int64_t>(1, ceil_div64(t.kv, s.kv_split_limit));
    if (t.kv > s.kv_split_limit) {
      const int64_t chunks = std::max<int64_t>(t.kv * s.cluster_size / s.kv_split_limit, 1);
      const int64_t chunk_rows = ceil_div64(t.rows, chunks);
      s.merge_ctas += ceil_div64(t.rows, chunk_rows);
    }
  }
  return s;
}

// "" when the kernels see every key the causal mask allows, else the first request where not.
inline std::string causal_tile_problem(const int32_t* qo_indptr, const int32_t* kv_len, int batch, int heads,
                                       int tile_q, int tile_kv) {
  if (tile_q % heads == 0) return "";
  for (int b = 0; b < batch; ++b) {
    const int64_t q = qo_indptr[b + 1] - qo_indptr[b], kv = kv_len[b];
    for (int64_t end = tile_q; end < q * heads; end += tile_q) {
      const int64_t query = end / heads, key = kv - q + query;
      if (end % heads && query < q && key >= 0 && key < kv && key % tile_kv == 0)
        return "request " + std::to_string(b) + ": query " + std::to_string(query) + " would lose key " +
               std::to_string(key) + " (a " + std::to_string(tile_q) + "-row query tile ends inside its " +
               std::to_string(heads) + " heads, on a " + std::to_string(tile_kv) + "-key tile start)";
    }
  }
  return "";
}

}  // namespace vfi
