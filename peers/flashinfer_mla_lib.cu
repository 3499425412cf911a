// SPDX-License-Identifier: Apache-2.0
// libvattn_flashinfer_mla.so: the C ABI of flashinfer_mla.h. Plans with FlashInfer's own
// host planner (flashinfer::MLAPlan) into a device workspace this library owns, and runs the
// planned kernel (flashinfer_mla_fa2.cu, flashinfer_mla_fa3.cu) with one cooperative launch,
// as flashinfer::mla::BatchMLAPagedAttention does, except that the fa2 shared-memory
// configuration may be chosen by the caller and that nothing but the launch happens in vfi_run.
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include <flashinfer/attention/scheduler.cuh>

#include "flashinfer_mla.h"
#include "flashinfer_mla_kernels.h"
#include "flashinfer_mla_plan_checks.h"

#ifndef VFI_FLASHINFER_VERSION
#error "build with -DVFI_FLASHINFER_VERSION=\"...\" (peers/build_flashinfer.sh reads it from the wheel)"
#endif
#ifndef VFI_WITH_FA3
#define VFI_WITH_FA3 0
#endif

struct vfi_plan {
  int device = 0;
  int backend = VFI_BACKEND_FA2;
  int batch = 0, num_heads = 0;
  int dispatch_smem = 0, device_smem = 0;
  vfi::KernelEntry entry;
  flashinfer::MLAPlanInfo info{};
  int64_t works = 0;
  void* int_ws = nullptr;
  void* float_ws = nullptr;
  std::string description;
};

namespace {

thread_local std::string g_error;

struct Failure {
  int code;
  std::string message;
};

[[noreturn]] void fail(int code, std::string message) { throw Failure{code, std::move(message)}; }

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) fail(VFI_ERR_CUDA, std::string(what) + ": " + cudaGetErrorString(e));
}

// Runs f; turns whatever it throws into a status code and this thread's message.
template <class F>
int guarded(const char* fn, F&& f) {
  try {
    f();
    return VFI_OK;
  } catch (const Failure& e) {
    g_error = std::string(fn) + ": " + e.message;
    return e.code;
  } catch (const flashinfer::Error& e) {
    g_error = std::string(fn) + ": FlashInfer: " + e.what();
    return VFI_ERR_INTERNAL;
  } catch (const std::bad_alloc&) {
    g_error = std::string(fn) + ": out of host memory";
    return VFI_ERR_INTERNAL;
  } catch (const std::exception& e) {
    g_error = std::string(fn) + ": " + e.what();
    return VFI_ERR_INTERNAL;
  } catch (...) {
    g_error = std::string(fn) + ": unknown exception";
    return VFI_ERR_INTERNAL;
  }
}

const char* backend_name(int backend) { return backend == VFI_BACKEND_FA3 ? "fa3" : "fa2"; }

int64_t align16(int64_t n) { return (n + 15) / 16 * 16; }

void check_host_arrays(const int32_t* qo_indptr, const int32_t* kv_indptr, const int32_t* kv_len, int batch,
                       int num_heads, bool causal) {
  if (!qo_indptr || !kv_indptr || !kv_len) fail(VFI_ERR_ARGUMENT, "qo_indptr, kv_indptr and kv_len must not be NULL");
  if (batch < 1) fail(VFI_ERR_ARGUMENT, "batch must be >= 1, got " + std::to_string(batch));
  if (num_heads < 1) fail(VFI_ERR_ARGUMENT, "num_heads must be >= 1, got " + std::to_string(num_heads));
  if (qo_indptr[0] < 0 || kv_indptr[0] < 0) fail(VFI_ERR_ARGUMENT, "qo_indptr[0] and kv_indptr[0] must be >= 0");
  for (int b = 0; b < batch; ++b) {
    const std::string at = "request " + std::to_string(b) + ": ";
    const int64_t q = int64_t(qo_indptr[b + 1]) - qo_indptr[b];
    const int64_t pages = int64_t(kv_indptr[b + 1]) - kv_indptr[b];
    if (q < 0) fail(VFI_ERR_ARGUMENT, at + "qo_indptr decreases");
    if (pages < 0) fail(VFI_ERR_ARGUMENT, at + "kv_indptr decreases");
    if (kv_len[b] < 0 || kv_len[b] > pages)
      fail(VFI_ERR_ARGUMENT, at + "kv_len " + std::to_string(kv_len[b]) + " outside 0.." + std::to_string(pages) +
                                 " (its kv_indptr range; page size 1)");
    if (kv_len[b] > (1 << 29)) fail(VFI_ERR_UNSUPPORTED, at + "kv_len above 2^29 (MLAPlan's int arithmetic)");
    if (causal && kv_len[b] < q)
      fail(VFI_ERR_ARGUMENT,
           at + "causal needs kv_len >= q_len (got " + std::to_string(kv_len[b]) + " < " + std::to_string(q) + ")");
  }
  if (int64_t(qo_indptr[batch]) * num_heads >= (int64_t(1) << 31))
    fail(VFI_ERR_UNSUPPORTED, "queries x heads reach 2^31 (MLAPlan's int arithmetic)");
}

std::string describe(const vfi_plan& p) {
  const vfi::KernelEntry& e = p.entry;
  char line[768];
  const char* kernel = p.backend == VFI_BACKEND_FA3 ? "BatchMLAPageAttentionHopperKernel, wgmma"
                                                    : "BatchMLAPagedAttentionKernel, mma.sync";
  std::string smem_why;
  if (p.backend == VFI_BACKEND_FA3) {
    smem_why = "its only configuration";
  } else if (p.dispatch_smem == p.device_smem) {
    smem_why = "the configuration for " + std::to_string(p.dispatch_smem) + " B/SM, the device's own";
  } else {
    smem_why = "the configuration for " + std::to_string(p.dispatch_smem) +
               " B/SM, set by the caller; the device has " + std::to_string(p.device_smem);
  }
  std::snprintf(line, sizeof line,
                "FlashInfer %s MLA %s (%s), %s: %d stage%s, %d-key KV tiles, %d-row Q tiles%s, %zu B shared memory "
                "per CTA (%s); %lldx%lld CTAs x %u threads, %lld work items",
                VFI_FLASHINFER_VERSION, backend_name(p.backend), kernel, e.causal ? "causal" : "no mask", e.stages,
                e.stages == 1 ? "" : "s", e.tile_kv, e.tile_q, e.qk_shard ? ", q.k split across warp groups" : "",
                e.smem_bytes, smem_why.c_str(), static_cast<long long>(p.info.num_blks_x),
                static_cast<long long>(p.info.num_blks_y), e.block.x * e.block.y * e.block.z,
                static_cast<long long>(p.works));
  return line;
}

void free_workspace(vfi_plan* p) {
  if (p->int_ws) cudaFree(p->int_ws);
  if (p->float_ws) cudaFree(p->float_ws);
  p->int_ws = p->float_ws = nullptr;
}

void create(vfi_plan** out, int backend, const int32_t* qo_indptr, const int32_t* kv_indptr, const int32_t* kv_len,
            int batch, int num_heads, int causal, int smem_limit) {
  if (!out) fail(VFI_ERR_ARGUMENT, "plan must not be NULL");
  *out = nullptr;
  if (backend != VFI_BACKEND_FA2 && backend != VFI_BACKEND_FA3)
    fail(VFI_ERR_ARGUMENT, "backend " + std::to_string(backend) + " is neither fa2 (0) nor fa3 (1)");
  if (backend == VFI_BACKEND_FA3 && !VFI_WITH_FA3)
    fail(VFI_ERR_UNSUPPORTED, "this library was built without fa3 (peers/build_flashinfer.sh --backends fa2,fa3)");
  if (backend == VFI_BACKEND_FA3 && smem_limit != 0)
    fail(VFI_ERR_ARGUMENT, "fa3 has one shared-memory configuration: smem_limit must be 0");
  if (smem_limit < 0) fail(VFI_ERR_ARGUMENT, "smem_limit must be >= 0 (0: the device's own)");
  check_host_arrays(qo_indptr, kv_indptr, kv_len, batch, num_heads, causal != 0);

  auto plan = std::make_unique<vfi_plan>();
  vfi_plan& p = *plan;
  p.backend = backend;
  p.batch = batch;
  p.num_heads = num_heads;
  cuda_check(cudaGetDevice(&p.device), "cudaGetDevice");
  int num_sm = 0, major = 0, block_optin = 0;
  cuda_check(cudaDeviceGetAttribute(&num_sm, cudaDevAttrMultiProcessorCount, p.device), "cudaDeviceGetAttribute");
  cuda_check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, p.device), "cudaDeviceGetAttribute");
  cuda_check(cudaDeviceGetAttribute(&p.device_smem, cudaDevAttrMaxSharedMemoryPerMultiprocessor, p.device),
             "cudaDeviceGetAttribute");
  cuda_check(cudaDeviceGetAttribute(&block_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, p.device),
             "cudaDeviceGetAttribute");
  if (major != 9)
    fail(VFI_ERR_UNSUPPORTED, "this library holds sm_90a code only; device " + std::to_string(p.device) +
                                  " has compute capability " + std::to_string(major) + ".x");

  if (backend == VFI_BACKEND_FA2) {
    p.dispatch_smem = smem_limit ? smem_limit : p.device_smem;
    try {
      cuda_check(vfi::fa2_kernel(p.dispatch_smem, causal != 0, &p.entry), "fa2 configuration");
    } catch (const flashinfer::Error& e) {  // below FlashInfer's smallest configuration
      fail(VFI_ERR_UNSUPPORTED, "fa2 has no configuration for " + std::to_string(p.dispatch_smem) +
                                    " B of shared memory per SM (FlashInfer: " + e.what() + ")");
    }
  } else {
    p.dispatch_smem = p.device_smem;
#if VFI_WITH_FA3
    cuda_check(vfi::fa3_kernel(causal != 0, &p.entry), "fa3 configuration");
#endif
  }
  if (p.entry.smem_bytes > static_cast<size_t>(block_optin))
    fail(VFI_ERR_UNSUPPORTED, std::string(backend_name(backend)) + " needs " + std::to_string(p.entry.smem_bytes) +
                                  " B of shared memory per CTA; the device allows " + std::to_string(block_optin));

  const vfi::ScheduleEstimate est = vfi::estimate_schedule(qo_indptr, kv_len, batch, num_heads, num_sm, causal != 0);
  if (est.works > vfi::kMaxWorks)
    fail(VFI_ERR_UNSUPPORTED, "the batch needs " + std::to_string(est.works) +
                                  " work items; FlashInfer's MLAPlan holds " + std::to_string(vfi::kMaxWorks));
  if (est.merge_ctas > num_sm)
    fail(VFI_ERR_UNSUPPORTED, "the batch needs " + std::to_string(est.merge_ctas) +
                                  " merge CTAs; FlashInfer's MLAPlan holds one per SM (" + std::to_string(num_sm) +
                                  ")");
  if (causal) {
    const std::string why = vfi::causal_tile_problem(qo_indptr, kv_len, batch, num_heads, est.tile_q, p.entry.tile_kv);
    if (!why.empty()) fail(VFI_ERR_UNSUPPORTED, "FlashInfer's causal tile bound: " + why);
  }

  // Workspaces, sized as MLAPlan carves them: nine per-work arrays and five per-SM arrays of
  // int32; bf16 partial outputs and float partial lse for 2 x (all clusters' query rows).
  const int64_t int_bytes = 9 * align16(4 * vfi::kMaxWorks) + 5 * align16(4 * int64_t(num_sm)) + 256;
  const int64_t rows = 2 * int64_t(est.clusters) * est.tile_q;
  const int64_t float_bytes = align16(rows * 2 * vfi::kHeadDimCkv) + align16(rows * 4) + 256;
  cuda_check(cudaMalloc(&p.int_ws, int_bytes), "cudaMalloc(int workspace)");
  cuda_check(cudaMalloc(&p.float_ws, float_bytes), "cudaMalloc(float workspace)");
  struct Guard {
    vfi_plan* p;
    ~Guard() {
      if (p) free_workspace(p);
    }
  } guard{&p};

  std::vector<int32_t> qo(qo_indptr, qo_indptr + batch + 1), kvp(kv_indptr, kv_indptr + batch + 1),
      kvl(kv_len, kv_len + batch);
  std::vector<uint8_t> host_ws(static_cast<size_t>(int_bytes), 0);  // MLAPlan's "page-locked" staging copy
  size_t staged = 0;
  cuda_check(flashinfer::MLAPlan<int32_t>(p.float_ws, float_bytes, p.int_ws, host_ws.data(), int_bytes, p.info, staged,
                                          qo.data(), kvp.data(), kvl.data(), batch, num_heads, vfi::kHeadDimCkv,
                                          causal != 0, nullptr),
             "flashinfer::MLAPlan");
  if (p.info.num_blks_x * p.info.num_blks_y > num_sm) fail(VFI_ERR_INTERNAL, "MLAPlan asked for more CTAs than SMs");
  const int32_t* work_indptr = reinterpret_cast<const int32_t*>(host_ws.data() + p.info.work_indptr_offset);
  p.works = work_indptr[p.info.num_blks_y];
  cuda_check(cudaMemcpy(p.int_ws, host_ws.data(), staged, cudaMemcpyHostToDevice), "cudaMemcpy(plan)");
  cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize(plan)");

  // Function attributes and co-residency, once, here: vfi_run only launches.
  cuda_check(cudaFuncSetAttribute(p.entry.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(p.entry.smem_bytes)),
             "cudaFuncSetAttribute");
  int per_sm = 0;
  cuda_check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                 &per_sm, p.entry.kernel, static_cast<int>(p.entry.block.x * p.entry.block.y * p.entry.block.z),
                 p.entry.smem_bytes),
             "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  if (int64_t(per_sm) * num_sm < p.info.num_blks_x * p.info.num_blks_y)
    fail(VFI_ERR_UNSUPPORTED,
         "the cooperative grid does not fit on the device (" + std::to_string(per_sm) + " CTA per SM)");
  p.description = describe(p);
  guard.p = nullptr;
  *out = plan.release();
}

bool misaligned(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 != 0; }

uint32_t stride32(int64_t s, const char* name) {
  if (s < 8 || s % 8 != 0 || s > 0xffffffffLL)
    fail(VFI_ERR_ARGUMENT,
         std::string(name) + " " + std::to_string(s) + " must be a multiple of 8 elements (16 B) in 8..2^32-1");
  return static_cast<uint32_t>(s);
}

void run(const vfi_plan* p, const vfi_run_args* a) {
  if (!p || !a) fail(VFI_ERR_ARGUMENT, "plan and args must not be NULL");
  if (!a->q_nope || !a->q_pe || !a->ckv || !a->kpe || !a->kv_indices || !a->out)
    fail(VFI_ERR_ARGUMENT, "q_nope, q_pe, ckv, kpe, kv_indices and out must not be NULL");
  if (misaligned(a->q_nope) || misaligned(a->q_pe) || misaligned(a->ckv) || misaligned(a->kpe) || misaligned(a->out))
    fail(VFI_ERR_ARGUMENT, "q_nope, q_pe, ckv, kpe and out must be 16-byte aligned");
  int dev = -1;
  cuda_check(cudaGetDevice(&dev), "cudaGetDevice");
  if (dev != p->device)
    fail(VFI_ERR_ARGUMENT,
         "the plan is for device " + std::to_string(p->device) + ", the current device is " + std::to_string(dev));
  using flashinfer::GetPtrFromBaseOffset;
  const flashinfer::MLAPlanInfo& in = p->info;
  vfi::Params prm{};
  prm.q_nope = static_cast<nv_bfloat16*>(const_cast<void*>(a->q_nope));
  prm.q_pe = static_cast<nv_bfloat16*>(const_cast<void*>(a->q_pe));
  prm.ckv = static_cast<nv_bfloat16*>(const_cast<void*>(a->ckv));
  prm.kpe = static_cast<nv_bfloat16*>(const_cast<void*>(a->kpe));
  prm.kv_indices = const_cast<int32_t*>(a->kv_indices);
  prm.final_o = static_cast<nv_bfloat16*>(a->out);
  prm.final_lse = a->lse;
  prm.partial_o = GetPtrFromBaseOffset<nv_bfloat16>(p->float_ws, in.partial_o_offset);
  prm.partial_lse = GetPtrFromBaseOffset<float>(p->float_ws, in.partial_lse_offset);
  prm.q_indptr = GetPtrFromBaseOffset<int32_t>(p->int_ws, in.q_indptr_offset);
  prm.kv_indptr = GetPtrFromBaseOffset<int32_t>(p->int_ws, in.kv_indptr_offset);
  prm.partial_indptr = GetPtrFromBaseOffset<int32_t>(p->int_ws, in.partial_indptr_offset);
  prm.merge_packed_offset_start = GetPtrFromBaseOffset<int32_t>(p->int_ws, in.merge_packed_offset_start_offset);
  prm.merge_packed_offset_end = GetPtrFromBaseOffset<int32_t>(p->int_ws, in.merge_packed_offset_end_offset);
  prm.merge_partial_packed_offset_start =
      GetPtrFromBaseOffset<int32_t>(p->int_ws, in.merge_partial_packed_offset_start_offset);
  prm.merge_partial_packed_offset_end =
      GetPtrFromBaseOffset<int32_t>(p->int_ws, in.merge_partial_packed_offset_end_offset);
  prm.merge_partial_stride = GetPtrFromBaseOffset<int32_t>(p->int_ws, in.merge_partial_stride_offset);
  prm.q_len = GetPtrFromBaseOffset<int32_t>(p->int_ws, in.q_len_offset);
  prm.kv_len = GetPtrFromBaseOffset<int32_t>(p->int_ws, in.kv_len_offset);
  prm.q_start = GetPtrFromBaseOffset<int32_t>(p->int_ws, in.q_start_offset);
  prm.kv_start = GetPtrFromBaseOffset<int32_t>(p->int_ws, in.kv_start_offset);
  prm.kv_end = GetPtrFromBaseOffset<int32_t>(p->int_ws, in.kv_end_offset);
  prm.work_indptr = GetPtrFromBaseOffset<int32_t>(p->int_ws, in.work_indptr_offset);
  prm.block_size = flashinfer::uint_fastdiv(1);
  prm.num_heads = flashinfer::uint_fastdiv(static_cast<uint32_t>(p->num_heads));
  prm.q_nope_stride_n = stride32(a->q_nope_stride_n, "q_nope_stride_n");
  prm.q_nope_stride_h = stride32(a->q_nope_stride_h, "q_nope_stride_h");
  prm.q_pe_stride_n = stride32(a->q_pe_stride_n, "q_pe_stride_n");
  prm.q_pe_stride_h = stride32(a->q_pe_stride_h, "q_pe_stride_h");
  prm.ckv_stride_page = prm.ckv_stride_n = stride32(a->ckv_stride_slot, "ckv_stride_slot");
  prm.kpe_stride_page = prm.kpe_stride_n = stride32(a->kpe_stride_slot, "kpe_stride_slot");
  prm.o_stride_n = stride32(a->out_stride_n, "out_stride_n");
  prm.o_stride_h = stride32(a->out_stride_h, "out_stride_h");
  prm.sm_scale = a->sm_scale;
  prm.ckv_scale = prm.kpe_scale = 1.f;
  prm.ckv_scale_arr = nullptr;
  prm.return_lse_base_on_e = a->lse_base_e != 0;
  void* args[] = {&prm};
  cuda_check(cudaLaunchCooperativeKernel(
                 p->entry.kernel, dim3(static_cast<unsigned>(in.num_blks_x), static_cast<unsigned>(in.num_blks_y)),
                 p->entry.block, args, p->entry.smem_bytes, static_cast<cudaStream_t>(a->stream)),
             "cudaLaunchCooperativeKernel");
}

}  // namespace

extern "C" {

int vfi_abi_version(void) { return VFI_ABI_VERSION; }
size_t vfi_run_args_size(void) { return sizeof(vfi_run_args); }
size_t vfi_plan_config_size(void) { return sizeof(vfi_plan_config); }

const char* vfi_library_description(void) {
  static const std::string d = std::string("FlashInfer ") + VFI_FLASHINFER_VERSION +
                               " MLA kernels and planner (attention/mla.cuh fa2, mma.sync" +
                               (VFI_WITH_FA3 ? "; attention/mla_hopper.cuh fa3, wgmma" : "; no fa3") +
                               "; scheduler.cuh MLAPlan), bf16, 512+64 dims, page size 1, compiled from the "
                               "flashinfer-python wheel's headers for sm_90a by nvcc " +
                               std::to_string(__CUDACC_VER_MAJOR__) + "." + std::to_string(__CUDACC_VER_MINOR__) +
                               " (vattn peers shim, ABI " + std::to_string(VFI_ABI_VERSION) + ")";
  return d.c_str();
}

int vfi_has_backend(int backend) { return backend == VFI_BACKEND_FA2 || (backend == VFI_BACKEND_FA3 && VFI_WITH_FA3); }

const char* vfi_last_error(void) { return g_error.c_str(); }

int vfi_plan_create(vfi_plan** plan, int backend, const int32_t* qo_indptr, const int32_t* kv_indptr,
                    const int32_t* kv_len, int batch, int num_heads, int causal, int smem_limit) {
  return guarded("vfi_plan_create",
                 [&] { create(plan, backend, qo_indptr, kv_indptr, kv_len, batch, num_heads, causal, smem_limit); });
}

int vfi_plan_get_config(const vfi_plan* p, vfi_plan_config* c) {
  return guarded("vfi_plan_get_config", [&] {
    if (!p || !c) fail(VFI_ERR_ARGUMENT, "plan and config must not be NULL");
    std::memset(c, 0, sizeof *c);
    c->backend = p->backend;
    c->causal = p->entry.causal;
    c->num_stages = p->entry.stages;
    c->tile_kv = p->entry.tile_kv;
    c->tile_q = p->entry.tile_q;
    c->qk_shard = p->entry.qk_shard;
    c->smem_bytes = static_cast<int32_t>(p->entry.smem_bytes);
    c->dispatch_smem = p->dispatch_smem;
    c->device_smem = p->device_smem;
    c->grid_x = static_cast<int32_t>(p->info.num_blks_x);
    c->grid_y = static_cast<int32_t>(p->info.num_blks_y);
    c->threads = static_cast<int32_t>(p->entry.block.x * p->entry.block.y * p->entry.block.z);
    c->num_works = static_cast<int32_t>(p->works);
  });
}

const char* vfi_plan_description(const vfi_plan* p) { return p ? p->description.c_str() : ""; }

int vfi_run(const vfi_plan* p, const vfi_run_args* a) {
  return guarded("vfi_run", [&] { run(p, a); });
}

void vfi_plan_destroy(vfi_plan* p) {
  if (!p) return;
  free_workspace(p);
  delete p;
}

}  // extern "C"
