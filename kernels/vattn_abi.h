// SPDX-License-Identifier: Apache-2.0
/* vattn kernel revision ABI, version 1.
 *
 * Every verify-attention kernel revision implements this C interface, so the suite can drive
 * the in-tree kernel, an old revision, or a foreign one loaded from a shared library
 * (`--kernel path/to/librev.so`) without rebuilding. Plain C, CUDA runtime types only:
 * no exceptions, no C++ types, no test or file-format headers cross this boundary.
 *
 * Contract: docs/verify-attention.md. Planning (host, once: limits -> workspace bytes)
 * is kept apart from running (every step: run() enqueues work and returns).
 *
 * run() rules, relied on by the CUDA-graph checks:
 *   - host-side argument checks only (pointers, host-known counts against the plan limits);
 *   - never reads device memory, allocates, synchronises or copies to the host;
 *   - the launch shape depends only on the limits, never on lengths (those live on the device);
 *   - problems only the device can see (indptr order, lengths over the limits, indices outside
 *     the pool, a forced split count over the limit) are reported in the workspace's first
 *     32-bit word (VATTN_DEVERR_* bits, 0 = clean), cleared by every run; the rows affected are
 *     written as NaN, never as a plausible wrong answer. Read the word after the step.
 *   - the workspace's second 32-bit word holds the largest split count any request used in
 *     the last run (0 when it was refused), so tests can see that a forced count took effect.
 */
#ifndef VATTN_ABI_H
#define VATTN_ABI_H

#include <stddef.h>  // NOLINT(modernize-deprecated-headers): a C header, it must stay valid C
#include <stdint.h>  // NOLINT(modernize-deprecated-headers): a C header, it must stay valid C

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VATTN_ABI_VERSION 1

typedef enum vattn_status {
  VATTN_OK = 0,
  VATTN_ERR_INVALID_ARGUMENT = 1, /* null pointer, negative count, bad scale */
  VATTN_ERR_UNSUPPORTED = 2,      /* dims/heads this revision does not implement */
  VATTN_ERR_LIMITS = 3,           /* host-known count beyond the plan limits */
  VATTN_ERR_WORKSPACE = 4,        /* workspace null, not 256-byte aligned or smaller than planned */
  VATTN_ERR_CUDA = 5              /* a launch failed (cudaGetLastError after enqueue) */
} vattn_status;

/* Device-side error bits, in the first uint32 of the workspace (word VATTN_WS_ERROR_WORD). */
#define VATTN_WS_ERROR_WORD 0
#define VATTN_WS_SPLITS_USED_WORD 1
#define VATTN_DEVERR_INDPTR 0x1u   /* qo/kv/mask indptr not starting at 0, decreasing, or T_b < 1 */
#define VATTN_DEVERR_LIMITS 0x2u   /* a length beyond the plan limits (drafts, total drafts) */
#define VATTN_DEVERR_KV_INDEX 0x4u /* a kv_indices entry outside [0, n_slots) */
#define VATTN_DEVERR_SPLITS 0x8u   /* forced split count < 0 or > limits.max_splits */
#define VATTN_DEVERR_MASK 0x10u    /* mask_word_indptr span differs from T_b * ceil(T_b/32) */

typedef struct vattn_caps {
  int abi_version;
  const char* name; /* revision name, e.g. "split-v1" */
  const char* description;
  const char* architectures; /* e.g. "sm_120a,sm_90a" */
  int d_qk;                  /* the only supported (d_qk, d_v) pair */
  int d_v;
  int max_heads;
  int max_drafts_per_request;
  int64_t max_prefix;
  int max_requests;
  int max_splits;
  int declared_memset_nodes; /* memset nodes run() may enqueue (graph audit allows this many) */
  size_t dynamic_smem_bytes; /* largest dynamic shared memory per block it launches with (static comes from ptxas) */
} vattn_caps;

/* Plan-time limits: the grid and the workspace are sized from these, once. */
typedef struct vattn_limits {
  int max_requests;           /* B */
  int64_t max_total_drafts;   /* n_q = sum_b T_b */
  int max_drafts_per_request; /* T_b */
  int num_heads;              /* H, fixed for the plan */
  int max_splits;             /* split count upper bound (forced or chosen) */
} vattn_limits;

typedef struct vattn_args {
  /* inputs (device pointers) */
  const uint16_t* q;       /* bf16 [n_q, H, d_qk] */
  const uint16_t* kv_pool; /* bf16 [n_slots, d_qk] */
  int64_t n_slots;
  const int32_t* kv_indices; /* [kv_indptr[B]] */
  const int32_t* kv_indptr;  /* [B+1] */
  const uint16_t* kv_draft;  /* bf16 [n_q, d_qk] */
  const int32_t* qo_indptr;  /* [B+1] */
  /* draft mask, packed: request b, row i, bit j%32 of word j/32 of the row;
   * rows are ceil(T_b/32) words; request b starts at word mask_word_indptr[b]. */
  const uint32_t* mask_bits;
  const int64_t* mask_word_indptr; /* [B+1] */
  /* split control on the device, so a captured graph can be re-steered:
   * null or *forced_splits == 0 -> the kernel picks; > 0 -> exactly that many per request. */
  const int32_t* forced_splits;
  /* outputs (device pointers) */
  uint16_t* out; /* bf16 [n_q, H, d_v] */
  float* lse;    /* fp32 [n_q, H], natural log */
  /* host-known scalars */
  int num_requests; /* B */
  int64_t n_q;      /* rows of q/out this call may touch */
  int num_heads;
  int d_qk;
  int d_v;
  float sm_scale;
} vattn_args;

typedef struct vattn_revision {
  int abi_version;
  const char* name;
  vattn_status (*capabilities)(vattn_caps* caps);
  vattn_status (*workspace_size)(const vattn_limits* limits, size_t* bytes);
  vattn_status (*run)(const vattn_args* args, const vattn_limits* limits, void* workspace, size_t workspace_bytes,
                      cudaStream_t stream);
  const char* (*status_string)(vattn_status status);
} vattn_revision;

/* A revision built as a shared library exports this symbol. */
typedef const vattn_revision* (*vattn_get_revision_fn)(void);  // NOLINT(modernize-redundant-void-arg): a C header
#define VATTN_GET_REVISION_SYMBOL "vattn_get_revision_v1"

/* Test only, outside the surface ABI v1 requires: the plan of another GPU.
 *
 * A revision library MAY also export
 *     vattn_status vattn_test_plan_for_v1(int sms, int blocks_per_sm);
 * After it, every run() of that revision in the process plans as it would on a GPU with `sms`
 * SMs and `blocks_per_sm` resident partial blocks per SM (0: the revision's occupancy on the
 * current GPU): the planner's balance target and the launch grids. (0, 0) restores the plan of
 * the GPU the call runs on. Accepted: 1 <= sms <= VATTN_TEST_PLAN_MAX_SMS with
 * 0 <= blocks_per_sm <= VATTN_TEST_PLAN_MAX_BLOCKS_PER_SM, or (0, 0); anything else returns
 * VATTN_ERR_INVALID_ARGUMENT and changes nothing.
 *
 * The setting is process-wide (every thread, stream and device) and thread-safe: a run()
 * reads it once, when it enqueues; a captured graph keeps the plan it was captured with. The
 * results must still meet the contract: a plan changes only how the work is cut.
 *
 * Servers never call it. The suite does, so that the test GPU runs the plans the target GPU will
 * (the RTX PRO 6000: 188 SMs, one partial block each); it refuses to run a case that asks for
 * another GPU's plan on a revision without this symbol, rather than run it with the native plan.
 * The in-tree revisions have it (built in: <their revision symbol>_test_plan_for). */
typedef vattn_status (*vattn_test_plan_for_fn)(int sms, int blocks_per_sm);
#define VATTN_TEST_PLAN_FOR_SYMBOL "vattn_test_plan_for_v1"
#define VATTN_TEST_PLAN_MAX_SMS 512
#define VATTN_TEST_PLAN_MAX_BLOCKS_PER_SM 32

#ifdef __cplusplus
}
#endif

#endif /* VATTN_ABI_H */
