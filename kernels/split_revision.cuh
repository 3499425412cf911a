// SPDX-License-Identifier: Apache-2.0
// A revision behind the ABI of vattn_abi.h, shared by split-v1 and split-v2: host-side checks,
// then three launches (plan, partial, reduce) whose shapes depend only on the plan limits. The
// revision's .cu (split_revision.cu, split_revision_v2.cu) names its namespace, includes its
// partial kernel and then this file; its Traits (split_traits.h) say the rest.
#pragma once

#include <atomic>
#include <cmath>
#include <cstdint>
#include <mutex>

#include "split_reduce.cuh"
#include "vattn_abi.h"

// A build may rename the revision (the timing probe, the planted variants): its name and the
// symbol the suite links (the revision's .cu sets the default symbol).
#ifndef VATTN_REVISION_SYMBOL
#define VATTN_REVISION_SYMBOL VATTN_REVISION_DEFAULT_SYMBOL
#endif

namespace vattn::VATTN_KERN_NS {
namespace {

constexpr int kMaxDevices = 64;

struct DeviceFacts {
  int sms = 0;
  int partial_blocks_per_sm = 0;
  int reduce_blocks_per_sm = 0;  // as many as fit: the reduce is a latency chain per warp
  cudaError_t error = cudaSuccess;
};

// Per device, once: SM count, opt-in shared memory, occupancy. None of these enqueue work,
// so the first call may happen inside a stream capture.
const DeviceFacts& device_facts(int dev) {
  static DeviceFacts facts[kMaxDevices];
  static std::once_flag once[kMaxDevices];
  std::call_once(once[dev], [dev] {
    DeviceFacts& f = facts[dev];
    f.error = cudaDeviceGetAttribute(&f.sms, cudaDevAttrMultiProcessorCount, dev);
    if (f.error == cudaSuccess)
      f.error = cudaFuncSetAttribute(split_partial_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     static_cast<int>(kSmemBytes));
    if (f.error == cudaSuccess)
      f.error = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&f.partial_blocks_per_sm, split_partial_kernel,
                                                              kPartialThreads, kSmemBytes);
    if (f.error == cudaSuccess)
      f.error =
          cudaOccupancyMaxActiveBlocksPerMultiprocessor(&f.reduce_blocks_per_sm, split_reduce_kernel, kThreads, 0);
    if (f.error == cudaSuccess && (f.partial_blocks_per_sm < 1 || f.reduce_blocks_per_sm < 1))
      f.error = cudaErrorInvalidConfiguration;
  });
  return facts[dev];
}

// The test-only plan hook (vattn_abi.h, vattn_test_plan_for_v1): 0 plans for this GPU, else
// sms << 8 | blocks_per_sm. One word, so that a run() never sees half of a change.
std::atomic<uint32_t> g_plan_for{0};

vattn_status plan_for(int sms, int blocks_per_sm) {
  const bool reset = sms == 0 && blocks_per_sm == 0;
  if (!reset && (sms < 1 || sms > VATTN_TEST_PLAN_MAX_SMS || blocks_per_sm < 0 ||
                 blocks_per_sm > VATTN_TEST_PLAN_MAX_BLOCKS_PER_SM))
    return VATTN_ERR_INVALID_ARGUMENT;
  g_plan_for.store(static_cast<uint32_t>(sms) << 8 | static_cast<uint32_t>(blocks_per_sm));
  return VATTN_OK;
}

// What a call plans with: this GPU's facts, or the SM count and partial blocks per SM the hook
// set (the reduce keeps this GPU's occupancy: it is a latency chain per warp, whatever the SMs).
// The kernels are grid-stride loops over the plan's items, so any grid covers the work.
DeviceFacts planned_facts(const DeviceFacts& gpu) {
  DeviceFacts f = gpu;
  const uint32_t v = g_plan_for.load();
  if (v != 0) {
    f.sms = static_cast<int>(v >> 8);
    if ((v & 0xffu) != 0) f.partial_blocks_per_sm = static_cast<int>(v & 0xffu);
  }
  return f;
}

// A launch that may begin before the previous kernel on the stream ends (programmatic stream
// serialization); the kernel's pdl_wait() keeps its reads behind that kernel's writes.
cudaError_t launch_dependent(void (*kernel)(SplitParams), int grid, int threads, size_t smem, cudaStream_t stream,
                             const SplitParams& p) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(grid);
  cfg.blockDim = dim3(threads);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  return cudaLaunchKernelEx(&cfg, kernel, p);
}

#ifdef VATTN_REVISION_NAME
constexpr const char* kRevisionName = VATTN_REVISION_NAME;
#else
constexpr const char* kRevisionName = Traits::kName;
#endif

bool limits_ok(const vattn_limits* lim) {
  return lim && lim->max_requests >= 1 && lim->max_requests <= kMaxRequests && lim->max_total_drafts >= 1 &&
         lim->max_drafts_per_request >= 1 && lim->max_drafts_per_request <= kMaxDraftsPerRequest &&
         lim->num_heads >= 1 && lim->num_heads <= kMaxHeads && lim->max_splits >= 1 && lim->max_splits <= kMaxSplits;
}

vattn_status caps(vattn_caps* c) {
  if (!c) return VATTN_ERR_INVALID_ARGUMENT;
  c->abi_version = VATTN_ABI_VERSION;
  c->name = kRevisionName;
  c->description = Traits::kDescription;
  c->architectures = "sm_120a,sm_90a";
  c->d_qk = kDqk;
  c->d_v = kDv;
  c->max_heads = kMaxHeads;
  c->max_drafts_per_request = kMaxDraftsPerRequest;
  c->max_prefix = kMaxPrefix;
  c->max_requests = kMaxRequests;
  c->max_splits = kMaxSplits;
  c->declared_memset_nodes = 0;
  c->dynamic_smem_bytes = kSmemBytes;
  return VATTN_OK;
}

vattn_status ws_size(const vattn_limits* lim, size_t* bytes) {
  if (!bytes || !limits_ok(lim)) return VATTN_ERR_INVALID_ARGUMENT;
  *bytes = workspace_layout(*lim).total;
  return VATTN_OK;
}

vattn_status run(const vattn_args* a, const vattn_limits* lim, void* ws, size_t ws_bytes, cudaStream_t stream) {
  if (!a || !limits_ok(lim)) return VATTN_ERR_INVALID_ARGUMENT;
  if (!a->q || !a->kv_pool || !a->kv_indices || !a->kv_indptr || !a->kv_draft || !a->qo_indptr || !a->mask_bits ||
      !a->mask_word_indptr || !a->out || !a->lse || a->n_slots < 0 || a->n_q < 1 || a->num_requests < 1 ||
      !std::isfinite(a->sm_scale) || a->sm_scale <= 0.f)
    return VATTN_ERR_INVALID_ARGUMENT;
  // q, kv_pool and kv_draft are read in 16-byte copies (cp.async); out is written in 4- and 8-byte
  // pieces today but held to the same 16 bytes as the other bf16 tensors (the contract's rule);
  // the index and mask arrays and lse are read or written whole. On the device a misaligned
  // pointer faults, so it is refused here (docs/verify-attention.md, host-side refusals).
  auto aligned = [](const void* ptr, uintptr_t n) { return reinterpret_cast<uintptr_t>(ptr) % n == 0; };
  if (!aligned(a->q, 16) || !aligned(a->kv_pool, 16) || !aligned(a->kv_draft, 16) || !aligned(a->out, 16) ||
      !aligned(a->kv_indices, 4) || !aligned(a->kv_indptr, 4) || !aligned(a->qo_indptr, 4) ||
      !aligned(a->mask_bits, 4) || !aligned(a->mask_word_indptr, 8) || !aligned(a->lse, 4) ||
      !aligned(a->forced_splits, 4))
    return VATTN_ERR_INVALID_ARGUMENT;
  if (a->d_qk != kDqk || a->d_v != kDv || a->num_heads < 1 || a->num_heads > kMaxHeads) return VATTN_ERR_UNSUPPORTED;
  if (a->num_requests > lim->max_requests || a->n_q > lim->max_total_drafts || a->num_heads != lim->num_heads)
    return VATTN_ERR_LIMITS;
  const WorkspaceLayout L = workspace_layout(*lim);
  if (!ws || ws_bytes < L.total || reinterpret_cast<uintptr_t>(ws) % 256 != 0) return VATTN_ERR_WORKSPACE;

  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= kMaxDevices) return VATTN_ERR_CUDA;
  const DeviceFacts f = planned_facts(device_facts(dev));
  if (f.error != cudaSuccess) return VATTN_ERR_CUDA;

  SplitParams p;
  p.a = *a;
  p.max_drafts_per_request = lim->max_drafts_per_request;
  p.max_total_drafts = lim->max_total_drafts;
  p.max_splits = lim->max_splits;
  p.target_items = f.sms * f.partial_blocks_per_sm;
  p.grid_partial = p.target_items;
  char* base = static_cast<char*>(ws);
  p.header = reinterpret_cast<WorkspaceHeader*>(base + L.header);
  p.requests = reinterpret_cast<RequestPlan*>(base + L.requests);
  p.partial_lse = reinterpret_cast<float*>(base + L.partial_lse);
  p.partial_out = reinterpret_cast<float*>(base + L.partial_out);

  split_plan_kernel<<<1, kThreads, 0, stream>>>(p);
  if constexpr (Traits::kPdl) {
    // The partial and reduce kernels may start while the kernel before them runs (pdl.cuh): they
    // wait on the device for its results, so the launch gaps between the three are hidden.
    if (launch_dependent(split_partial_kernel, p.grid_partial, kPartialThreads, kSmemBytes, stream, p) != cudaSuccess ||
        launch_dependent(split_reduce_kernel, f.sms * f.reduce_blocks_per_sm, kThreads, 0, stream, p) != cudaSuccess)
      return VATTN_ERR_CUDA;
  } else {
    split_partial_kernel<<<p.grid_partial, kPartialThreads, kSmemBytes, stream>>>(p);
    split_reduce_kernel<<<f.sms * f.reduce_blocks_per_sm, kThreads, 0, stream>>>(p);
  }
  return cudaPeekAtLastError() == cudaSuccess ? VATTN_OK : VATTN_ERR_CUDA;
}

const char* status_string(vattn_status s) {
  switch (s) {
    case VATTN_OK: return "ok";
    case VATTN_ERR_INVALID_ARGUMENT: return "invalid argument (null pointer, bad count or scale, bad limits)";
    case VATTN_ERR_UNSUPPORTED: return "unsupported shape (this revision: d_qk 576, d_v 512, 1..128 heads)";
    case VATTN_ERR_LIMITS: return "a host-known count exceeds the plan limits";
    case VATTN_ERR_WORKSPACE: return "workspace missing, misaligned (256 B) or smaller than planned";
    case VATTN_ERR_CUDA: return "CUDA error while enqueuing";
  }
  return "unknown status";
}

const vattn_revision kRevision = {VATTN_ABI_VERSION, kRevisionName, caps, ws_size, run, status_string};

}  // namespace
}  // namespace vattn::VATTN_KERN_NS

#ifdef VATTN_TIMELINE
// The timing probe's read-out (vattn_timeline.h): stamps of the calls since the last read, then cleared.
extern "C" __attribute__((visibility("default"))) int vattn_timeline_read_v1(vattn_timeline* out) {
  using namespace vattn::VATTN_KERN_NS;
  if (!out) return static_cast<int>(cudaErrorInvalidValue);
  cudaError_t e = cudaDeviceSynchronize();
  if (e == cudaSuccess) e = cudaMemcpyFromSymbol(out->partial_ns, g_tl_partial_ns, sizeof out->partial_ns);
  if (e == cudaSuccess) e = cudaMemcpyFromSymbol(out->partial_clock, g_tl_partial_clock, sizeof out->partial_clock);
  if (e == cudaSuccess) e = cudaMemcpyFromSymbol(out->reduce_ns, g_tl_reduce_ns, sizeof out->reduce_ns);
  if (e == cudaSuccess) e = cudaMemcpyFromSymbol(out->plan_ns, g_tl_plan_ns, sizeof out->plan_ns);
  static vattn_timeline zeros;  // cleared, so a point a later call does not reach reads 0
  if (e == cudaSuccess) e = cudaMemcpyToSymbol(g_tl_partial_ns, zeros.partial_ns, sizeof zeros.partial_ns);
  if (e == cudaSuccess) e = cudaMemcpyToSymbol(g_tl_partial_clock, zeros.partial_clock, sizeof zeros.partial_clock);
  if (e == cudaSuccess) e = cudaMemcpyToSymbol(g_tl_reduce_ns, zeros.reduce_ns, sizeof zeros.reduce_ns);
  if (e == cudaSuccess) e = cudaMemcpyToSymbol(g_tl_plan_ns, zeros.plan_ns, sizeof zeros.plan_ns);
  return static_cast<int>(e);
}
#endif

// Built in: the suite links these symbols directly (the revision, and its test-only plan hook as
// <revision symbol>_test_plan_for). As a shared library: vattn_get_revision_v1 and
// vattn_test_plan_for_v1.
#define VATTN_SYMBOL_CAT_(a, b) a##b
#define VATTN_SYMBOL_CAT(a, b) VATTN_SYMBOL_CAT_(a, b)
extern "C" const vattn_revision* VATTN_REVISION_SYMBOL(void) { return &vattn::VATTN_KERN_NS::kRevision; }
extern "C" vattn_status VATTN_SYMBOL_CAT(VATTN_REVISION_SYMBOL, _test_plan_for)(int sms, int blocks_per_sm) {
  return vattn::VATTN_KERN_NS::plan_for(sms, blocks_per_sm);
}
#ifdef VATTN_EXPORT_GET_REVISION
extern "C" __attribute__((visibility("default"))) const vattn_revision* vattn_get_revision_v1(void) {
  return &vattn::VATTN_KERN_NS::kRevision;
}
extern "C" __attribute__((visibility("default"))) vattn_status vattn_test_plan_for_v1(int sms, int blocks_per_sm) {
  return vattn::VATTN_KERN_NS::plan_for(sms, blocks_per_sm);
}
#endif
