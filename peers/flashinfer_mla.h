/* SPDX-License-Identifier: Apache-2.0 */
/* The C ABI of libvattn_flashinfer_mla.so: FlashInfer's MLA kernels (BatchMLAPagedAttention,
 * fa2 = mma.sync and fa3 = Hopper wgmma) and FlashInfer's own host planner (MLAPlan),
 * compiled from the headers of the published flashinfer-python wheel and called without
 * FlashInfer's Python wrapper (peers/README.md says why).
 *
 * Shapes (bf16 = raw bfloat16 bits, every last dimension contiguous, strides in elements):
 *   q_nope [n, H, 512]  q_pe [n, H, 64]   ckv [slots, 1, 512]  kpe [slots, 1, 64]   (page size 1)
 *   kv_indices int32 [kv_indptr[B]]: the slot of each key of each request
 *   out [n, H, 512] bf16   lse [n, H] float32 contiguous (or NULL)
 * Causal means FlashInfer's causal mask: query i of request b (of q_len_b) sees its keys
 * 0 .. kv_len_b - q_len_b + i (the last query sees every key).
 *
 * Every function returns VFI_OK or an error code; vfi_last_error() then holds the message
 * (per thread). Nothing here throws. vfi_plan_create works on the current CUDA device (it
 * allocates the plan's workspace there and copies the plan into it, synchronously);
 * vfi_run only enqueues one cooperative kernel launch on the given stream: no allocation, no
 * copy, no synchronisation, so it may be captured into a CUDA graph (plan outside the graph,
 * run inside it). A plan is used by one stream at a time (its workspace holds partial results).
 */
#ifndef VATTN_FLASHINFER_MLA_H_
#define VATTN_FLASHINFER_MLA_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VFI_ABI_VERSION 1

enum vfi_backend { VFI_BACKEND_FA2 = 0, VFI_BACKEND_FA3 = 1 };

enum vfi_status {
  VFI_OK = 0,
  VFI_ERR_ARGUMENT = 1,    /* a bad argument (the message names it) */
  VFI_ERR_UNSUPPORTED = 2, /* valid, but beyond what this library or FlashInfer's kernel does */
  VFI_ERR_CUDA = 3,        /* a CUDA call failed (the message has its error string) */
  VFI_ERR_INTERNAL = 4     /* FlashInfer's planner raised an error */
};

typedef struct vfi_plan vfi_plan;

/* What vfi_run reads and writes. Strides are in elements; the last dimension is contiguous. */
typedef struct vfi_run_args {
  const void* q_nope;
  int64_t q_nope_stride_n, q_nope_stride_h;
  const void* q_pe;
  int64_t q_pe_stride_n, q_pe_stride_h;
  const void* ckv;
  int64_t ckv_stride_slot;
  const void* kpe;
  int64_t kpe_stride_slot;
  const int32_t* kv_indices;
  void* out;
  int64_t out_stride_n, out_stride_h;
  float* lse;         /* NULL: not written */
  float sm_scale;     /* softmax scale applied to q.k */
  int32_t lse_base_e; /* 0: FlashInfer's default, lse = log2(sum 2^(s*log2 e)); 1: natural log */
  void* stream;       /* cudaStream_t (NULL: the legacy default stream) */
} vfi_run_args;

/* The plan's kernel configuration, for reports. */
typedef struct vfi_plan_config {
  int32_t backend; /* enum vfi_backend */
  int32_t causal;
  int32_t num_stages;     /* KV pipeline stages */
  int32_t tile_kv;        /* keys per KV tile */
  int32_t tile_q;         /* packed (query, head) rows per CTA */
  int32_t qk_shard;       /* fa2: q.k split across the two warp groups */
  int32_t smem_bytes;     /* dynamic shared memory per CTA */
  int32_t dispatch_smem;  /* fa2: the per-SM shared-memory limit the configuration was chosen for */
  int32_t device_smem;    /* the device's cudaDevAttrMaxSharedMemoryPerMultiprocessor */
  int32_t grid_x, grid_y; /* CTAs: cluster size x clusters (FlashInfer's plan) */
  int32_t threads;        /* threads per CTA */
  int32_t num_works;      /* work items of the plan */
} vfi_plan_config;

int vfi_abi_version(void);
size_t vfi_run_args_size(void);
size_t vfi_plan_config_size(void);
/* The library: FlashInfer's version, the backends compiled in, the compiler. No CUDA call. */
const char* vfi_library_description(void);
/* 1 when the backend was compiled into this library. No CUDA call. */
int vfi_has_backend(int backend);
/* The message of this thread's last failed call ("" when none). */
const char* vfi_last_error(void);

/* FlashInfer's planner on host arrays: qo_indptr[batch+1], kv_indptr[batch+1] (key offsets
 * into kv_indices), kv_len[batch]. smem_limit: fa2 picks its shared-memory configuration from
 * this per-SM limit in bytes as FlashInfer's DISPATCH_SMEM_CONFIG does (>= 221696: 2 stages,
 * 64-key tiles; >= 147968: 2 stages, 32-key; >= 92672: 1 stage, 16-key); 0 = the device's
 * own limit, what FlashInfer picks on it. fa3 has one configuration: smem_limit must be 0. */
int vfi_plan_create(vfi_plan** plan, int backend, const int32_t* qo_indptr, const int32_t* kv_indptr,
                    const int32_t* kv_len, int batch, int num_heads, int causal, int smem_limit);
int vfi_plan_get_config(const vfi_plan* plan, vfi_plan_config* config);
/* One line naming FlashInfer's version, the kernel, backend and configuration. */
const char* vfi_plan_description(const vfi_plan* plan);
int vfi_run(const vfi_plan* plan, const vfi_run_args* args);
void vfi_plan_destroy(vfi_plan* plan);

#ifdef __cplusplus
}
#endif

#endif /* VATTN_FLASHINFER_MLA_H_ */
