// SPDX-License-Identifier: Apache-2.0
// A captured-graph slot: device buffers sized once for plan limits, the way a serving engine
// holds them for a CUDA graph. Host-known scalars (B, n_q, H, n_slots, pointers, scale) are
// frozen when the graph is captured; lengths, indptrs, masks, indices, values and the forced
// split count live in the buffers and change between replays through load().
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vattn/case/case.h"
#include "vattn/gpu/device_buffer.h"
#include "vattn/gpu/revision.h"

namespace vattn {

// What a slot must hold. B = limits.max_requests always (a smaller batch is padded with
// P = 0, T = 1 requests); n_q = limits.max_total_drafts.
struct SlotShape {
  vattn_limits limits{};
  int max_prefix = 0;       // largest P_b a loaded case may have
  int max_mask_drafts = 0;  // largest T_b the mask buffer holds (above the limit: over-limit tests)
  double sm_scale = 0.0;

  int64_t kv_tokens() const;   // B * max_prefix
  int64_t pool_rows() const;   // room for the generator's sparsest layout of kv_tokens()
  int64_t mask_words() const;  // n_q rows of ceil(max_mask_drafts / 32) words
  std::string describe() const;
};

// Owning wrappers, so an exception between capture and launch leaks nothing.
class Stream {
 public:
  explicit Stream(unsigned flags);  // cudaStreamNonBlocking or cudaStreamDefault
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

class Graph {
 public:
  Graph() = default;
  explicit Graph(cudaGraph_t g) : g_(g) {}
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  Graph(Graph&& o) noexcept : g_(o.g_) { o.g_ = nullptr; }
  Graph& operator=(Graph&& o) noexcept;
  cudaGraph_t get() const { return g_; }

 private:
  cudaGraph_t g_ = nullptr;
};

class GraphExec {
 public:
  GraphExec() = default;
  ~GraphExec();
  GraphExec(const GraphExec&) = delete;
  GraphExec& operator=(const GraphExec&) = delete;
  GraphExec(GraphExec&& o) noexcept : e_(o.e_) { o.e_ = nullptr; }
  GraphExec& operator=(GraphExec&& o) noexcept;
  void instantiate(const Graph& g);
  cudaGraphExec_t get() const { return e_; }
  bool ready() const { return e_ != nullptr; }

 private:
  cudaGraphExec_t e_ = nullptr;
};

// Result of capturing run() once: the graph, or why there is none.
struct Capture {
  Graph graph;
  bool ok = false;
  vattn_status status = VATTN_OK;  // what run() returned inside the capture
  std::string problem;             // "" when ok
  double host_ms = 0;              // time run() took on the host while capturing
};

// Raw result bits: bf16 out and fp32 lse as stored, so comparisons are bitwise, NaN included.
struct RawOutputs {
  std::vector<uint16_t> out;
  std::vector<uint32_t> lse;
};

class GraphSlot {
 public:
  GraphSlot(Revision rev, const SlotShape& shape, const std::string& name);
  const SlotShape& shape() const { return shape_; }
  const Revision& revision() const { return rev_; }
  const std::string& name() const { return name_; }
  cudaStream_t stream() const { return stream_.get(); }
  DeviceBuffer& workspace() { return ws_; }

  // Uploads a case into the fixed buffers (plain cudaMemcpy: never call it while capturing).
  // Throws InputError when the case does not fit (B, n_q, pool, mask words, heads, scale).
  void load(const Case& c);
  void set_forced_splits(int32_t splits);
  void poison_outputs_and_workspace();

  // The frozen arguments: every pointer, B = limits.max_requests, n_q = limits.max_total_drafts,
  // n_slots = the pool's capacity.
  vattn_args args() const;
  vattn_status enqueue(cudaStream_t stream) const;  // run() with args()
  vattn_status enqueue(const vattn_args& a, cudaStream_t stream) const;

  // Captures run() on the slot's stream in cudaStreamCaptureModeGlobal. Always leaves the
  // stream out of capture mode and the runtime's last error cleared.
  Capture capture();

  // Synchronises `stream` and returns the error word and the raw outputs.
  uint32_t read_error_word() const;
  RawOutputs download() const;
  std::vector<std::string> guard_violations() const;
  int64_t loaded_n_q() const { return loaded_n_q_; }
  const std::vector<int32_t>& loaded_qo_indptr() const { return loaded_qo_; }

 private:
  Revision rev_;
  SlotShape shape_;
  std::string name_;
  Stream stream_;
  DeviceBuffer q_, kv_pool_, kv_indices_, kv_indptr_, kv_draft_, qo_indptr_, mask_bits_, mask_word_indptr_,
      forced_splits_, out_, lse_, ws_;
  int64_t loaded_n_q_ = 0;
  std::vector<int32_t> loaded_qo_;
};

// Name of a CUDA graph node type ("kernel", "memset", "memcpy", "host", "mem-alloc", ...).
std::string graph_node_type_name(cudaGraphNodeType t);

}  // namespace vattn
