// SPDX-License-Identifier: Apache-2.0
#include "vattn/gpu/graph_slot.h"

#include <algorithm>
#include <chrono>
#include <sstream>

#include <cuda_runtime.h>

#include "vattn/gpu/device_case.h"

namespace vattn {

int64_t SlotShape::kv_tokens() const { return static_cast<int64_t>(limits.max_requests) * max_prefix; }

int64_t SlotShape::pool_rows() const {
  // The generator's sparse layout uses 4 * tokens + 16 rows; its gapped block layouts add up
  // to 3 rows per request and one at the end.
  return 4 * kv_tokens() + 16 + 3 * (static_cast<int64_t>(limits.max_requests) + 1);
}

int64_t SlotShape::mask_words() const {
  return limits.max_total_drafts * ((static_cast<int64_t>(max_mask_drafts) + 31) / 32);
}

std::string SlotShape::describe() const {
  std::ostringstream os;
  os << "B=" << limits.max_requests << " n_q<=" << limits.max_total_drafts << " T<=" << limits.max_drafts_per_request
     << " H=" << limits.num_heads << " splits<=" << limits.max_splits << " P<=" << max_prefix << " pool=" << pool_rows()
     << " rows";
  return os.str();
}

Stream::Stream(unsigned flags) { VATTN_CUDA(cudaStreamCreateWithFlags(&s_, flags)); }
Stream::~Stream() {
  if (s_) cudaStreamDestroy(s_);
}

Graph::~Graph() {
  if (g_) cudaGraphDestroy(g_);
}
Graph& Graph::operator=(Graph&& o) noexcept {
  if (this != &o) {
    if (g_) cudaGraphDestroy(g_);
    g_ = o.g_;
    o.g_ = nullptr;
  }
  return *this;
}

GraphExec::~GraphExec() {
  if (e_) cudaGraphExecDestroy(e_);
}
GraphExec& GraphExec::operator=(GraphExec&& o) noexcept {
  if (this != &o) {
    if (e_) cudaGraphExecDestroy(e_);
    e_ = o.e_;
    o.e_ = nullptr;
  }
  return *this;
}
void GraphExec::instantiate(const Graph& g) {
  if (e_) {
    VATTN_CUDA(cudaGraphExecDestroy(e_));
    e_ = nullptr;
  }
  VATTN_CUDA(cudaGraphInstantiate(&e_, g.get(), 0));
}

std::string graph_node_type_name(cudaGraphNodeType t) {
  switch (t) {
    case cudaGraphNodeTypeKernel: return "kernel";
    case cudaGraphNodeTypeMemcpy: return "memcpy";
    case cudaGraphNodeTypeMemset: return "memset";
    case cudaGraphNodeTypeHost: return "host";
    case cudaGraphNodeTypeGraph: return "child-graph";
    case cudaGraphNodeTypeEmpty: return "empty";
    case cudaGraphNodeTypeWaitEvent: return "event-wait";
    case cudaGraphNodeTypeEventRecord: return "event-record";
    case cudaGraphNodeTypeExtSemaphoreSignal: return "ext-semaphore-signal";
    case cudaGraphNodeTypeExtSemaphoreWait: return "ext-semaphore-wait";
    case cudaGraphNodeTypeMemAlloc: return "mem-alloc";
    case cudaGraphNodeTypeMemFree: return "mem-free";
    case cudaGraphNodeTypeConditional: return "conditional";
    default: break;
  }
  return "type-" + std::to_string(static_cast<int>(t));
}

namespace {
constexpr int kDqk = 576, kDv = 512;
}  // namespace

GraphSlot::GraphSlot(Revision rev, const SlotShape& shape, const std::string& name)
    : rev_(std::move(rev)), shape_(shape), name_(name), stream_(cudaStreamNonBlocking) {
  const vattn_limits& L = shape_.limits;
  const size_t B = static_cast<size_t>(L.max_requests), nq = static_cast<size_t>(L.max_total_drafts),
               H = static_cast<size_t>(L.num_heads);
  q_ = DeviceBuffer(name + ".q", nq * H * kDqk * sizeof(uint16_t));
  kv_pool_ = DeviceBuffer(name + ".kv_pool", static_cast<size_t>(shape_.pool_rows()) * kDqk * sizeof(uint16_t));
  kv_indices_ = DeviceBuffer(name + ".kv_indices", static_cast<size_t>(std::max<int64_t>(1, shape_.kv_tokens())) * 4);
  kv_indptr_ = DeviceBuffer(name + ".kv_indptr", (B + 1) * sizeof(int32_t));
  kv_draft_ = DeviceBuffer(name + ".kv_draft", nq * kDqk * sizeof(uint16_t));
  qo_indptr_ = DeviceBuffer(name + ".qo_indptr", (B + 1) * sizeof(int32_t));
  mask_bits_ = DeviceBuffer(name + ".mask_bits", static_cast<size_t>(shape_.mask_words()) * sizeof(uint32_t));
  mask_word_indptr_ = DeviceBuffer(name + ".mask_word_indptr", (B + 1) * sizeof(int64_t));
  forced_splits_ = DeviceBuffer(name + ".forced_splits", sizeof(int32_t));
  out_ = DeviceBuffer(name + ".out", nq * H * kDv * sizeof(uint16_t));
  lse_ = DeviceBuffer(name + ".lse", nq * H * sizeof(float));
  size_t ws_bytes = 0;
  const vattn_status st = rev_.api->workspace_size(&shape_.limits, &ws_bytes);
  if (st != VATTN_OK) {
    throw CudaError("revision " + rev_.name() + ": workspace_size refused the limits " + shape_.describe() + ": " +
                    rev_.api->status_string(st));
  }
  ws_ = DeviceBuffer(name + ".workspace", std::max<size_t>(ws_bytes, 4));
  // Zeros everywhere, so rows no case wrote read the same in a replay and in an eager run.
  for (DeviceBuffer* b : {&q_, &kv_pool_, &kv_indices_, &kv_indptr_, &kv_draft_, &qo_indptr_, &mask_bits_,
                          &mask_word_indptr_, &forced_splits_})
    b->fill(0);
  poison_outputs_and_workspace();
}

void GraphSlot::load(const Case& c) {
  const vattn_limits& L = shape_.limits;
  auto refuse = [&](const std::string& field, const std::string& why) {
    throw InputError("", c.name, field, why + " (graph slot " + name_ + ": " + shape_.describe() + ")");
  };
  if (c.num_requests() != L.max_requests)
    refuse("qo_indptr", std::to_string(c.num_requests()) + " requests; the slot's graph is captured for exactly " +
                            std::to_string(L.max_requests) + " (pad with P=0, T=1 requests)");
  if (c.num_heads != L.num_heads) refuse("num_heads", std::to_string(c.num_heads) + " heads");
  if (c.d_qk != kDqk || c.d_v != kDv) refuse("d_qk", "dims " + std::to_string(c.d_qk) + "/" + std::to_string(c.d_v));
  if (static_cast<float>(c.sm_scale) != static_cast<float>(shape_.sm_scale))
    refuse("sm_scale", "scale differs from the one frozen at capture");
  if (c.n_q() > L.max_total_drafts) refuse("qo_indptr", "n_q " + std::to_string(c.n_q()) + " does not fit");
  if (static_cast<int64_t>(c.kv_indices.size()) > shape_.kv_tokens())
    refuse("kv_indices", std::to_string(c.kv_indices.size()) + " prefix tokens do not fit");
  if (c.n_rows() > shape_.pool_rows()) refuse("kv_pool", std::to_string(c.n_rows()) + " pool rows do not fit");
  for (int b = 0; b < c.num_requests(); ++b)
    if (c.drafts(b) > shape_.max_mask_drafts)
      refuse("draft_mask", "request " + std::to_string(b) + " has " + std::to_string(c.drafts(b)) + " drafts");
  std::vector<int64_t> word_indptr;
  const std::vector<uint32_t> bits = pack_mask_bits(c, word_indptr);
  if (static_cast<int64_t>(bits.size()) > shape_.mask_words()) refuse("draft_mask", "mask words do not fit");

  auto put = [](DeviceBuffer& b, const auto& v) {
    if (!v.empty()) b.upload(v.data(), v.size() * sizeof(v[0]));
  };
  put(q_, c.q);
  put(kv_pool_, c.kv_pool);
  put(kv_indices_, c.kv_indices);
  put(kv_indptr_, c.kv_indptr);
  put(kv_draft_, c.kv_draft);
  put(qo_indptr_, c.qo_indptr);
  put(mask_bits_, bits);
  put(mask_word_indptr_, word_indptr);
  loaded_n_q_ = c.n_q();
  loaded_qo_ = c.qo_indptr;
  // Uploads go through the legacy stream, which does not order against the slot's
  // non-blocking stream: wait here so no launch can overtake a copy.
  VATTN_CUDA(cudaDeviceSynchronize());
}

void GraphSlot::set_forced_splits(int32_t splits) {
  forced_splits_.upload(&splits, sizeof splits);
  VATTN_CUDA(cudaDeviceSynchronize());
}

void GraphSlot::poison_outputs_and_workspace() {
  out_.poison();
  lse_.poison();
  ws_.poison();
  VATTN_CUDA(cudaDeviceSynchronize());
}

vattn_args GraphSlot::args() const {
  vattn_args a{};
  a.q = q_.as<const uint16_t>();
  a.kv_pool = kv_pool_.as<const uint16_t>();
  a.n_slots = shape_.pool_rows();
  a.kv_indices = kv_indices_.as<const int32_t>();
  a.kv_indptr = kv_indptr_.as<const int32_t>();
  a.kv_draft = kv_draft_.as<const uint16_t>();
  a.qo_indptr = qo_indptr_.as<const int32_t>();
  a.mask_bits = mask_bits_.as<const uint32_t>();
  a.mask_word_indptr = mask_word_indptr_.as<const int64_t>();
  a.forced_splits = forced_splits_.as<const int32_t>();
  a.out = out_.as<uint16_t>();
  a.lse = lse_.as<float>();
  a.num_requests = shape_.limits.max_requests;
  a.n_q = shape_.limits.max_total_drafts;
  a.num_heads = shape_.limits.num_heads;
  a.d_qk = kDqk;
  a.d_v = kDv;
  a.sm_scale = static_cast<float>(shape_.sm_scale);
  return a;
}

vattn_status GraphSlot::enqueue(cudaStream_t stream) const { return enqueue(args(), stream); }

vattn_status GraphSlot::enqueue(const vattn_args& a, cudaStream_t stream) const {
  return rev_.api->run(&a, &shape_.limits, ws_.data(), ws_.bytes(), stream);
}

Capture GraphSlot::capture() {
  Capture c;
  (void)cudaGetLastError();
  const cudaStream_t s = stream_.get();
  const cudaError_t begin = cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
  if (begin != cudaSuccess) {
    (void)cudaGetLastError();
    c.problem = std::string("cudaStreamBeginCapture failed: ") + cudaGetErrorName(begin);
    return c;
  }
  const auto t0 = std::chrono::steady_clock::now();
  c.status = enqueue(s);
  c.host_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  // A built-in revision shares this runtime, so what it tripped over inside run() shows
  // here; a library revision has its own runtime and only the capture status tells.
  const cudaError_t inside = cudaGetLastError();
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  const cudaError_t query = cudaStreamIsCapturing(s, &status);
  cudaGraph_t g = nullptr;
  const cudaError_t end = cudaStreamEndCapture(s, &g);
  c.graph = Graph(g);
  (void)cudaGetLastError();

  std::string p;
  auto add = [&p](const std::string& s2) { p += (p.empty() ? "" : "; ") + s2; };
  if (c.status != VATTN_OK)
    add(std::string("run() returned '") + rev_.api->status_string(c.status) + "' while capturing");
  if (inside != cudaSuccess) add(std::string("CUDA error raised inside run(): ") + cudaGetErrorName(inside));
  if (query != cudaSuccess) {
    add(std::string("cudaStreamIsCapturing: ") + cudaGetErrorName(query));
  } else if (status == cudaStreamCaptureStatusInvalidated) {
    add("capture invalidated");
  } else if (status == cudaStreamCaptureStatusNone) {
    add("run() ended the capture itself");
  }
  if (end != cudaSuccess) add(std::string("cudaStreamEndCapture: ") + cudaGetErrorName(end));
  if (p.empty() && !g) add("cudaStreamEndCapture returned no graph");
  if (status == cudaStreamCaptureStatusInvalidated || end == cudaErrorStreamCaptureInvalidated ||
      end == cudaErrorStreamCaptureUnsupported || inside == cudaErrorStreamCaptureUnsupported)
    add("the revision allocates, synchronises, queries the stream or touches another stream inside run()");
  c.problem = p;
  c.ok = p.empty();
  return c;
}

uint32_t GraphSlot::read_error_word() const {
  VATTN_CUDA(cudaDeviceSynchronize());
  uint32_t e = 0;
  ws_.download(&e, sizeof e);
  return e;
}

RawOutputs GraphSlot::download() const {
  VATTN_CUDA(cudaDeviceSynchronize());
  RawOutputs r;
  r.out.resize(out_.bytes() / sizeof(uint16_t));
  r.lse.resize(lse_.bytes() / sizeof(uint32_t));
  out_.download(r.out.data(), out_.bytes());
  lse_.download(r.lse.data(), lse_.bytes());
  return r;
}

std::vector<std::string> GraphSlot::guard_violations() const {
  VATTN_CUDA(cudaDeviceSynchronize());
  std::vector<std::string> v;
  for (const DeviceBuffer* b : {&q_, &kv_pool_, &kv_indices_, &kv_indptr_, &kv_draft_, &qo_indptr_, &mask_bits_,
                                &mask_word_indptr_, &forced_splits_, &out_, &lse_, &ws_}) {
    std::string s = b->check_guards();
    if (!s.empty()) v.push_back(std::move(s));
  }
  return v;
}

}  // namespace vattn
