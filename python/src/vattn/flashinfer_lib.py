# SPDX-License-Identifier: Apache-2.0
"""FlashInfer's MLA kernels through libvattn_flashinfer_mla.so (peers/), with ctypes.

The library holds FlashInfer's own MLA kernels (fa2, fa3) and planner compiled from the
headers of the published wheel (peers/build_flashinfer.sh), behind the C ABI of
peers/flashinfer_mla.h; this module is its only Python binding. Loading the library makes no
CUDA call (its description and ABI can be read without a GPU); plan() and run() need one.
Tensors are torch tensors, passed by data_ptr(); run() only enqueues the kernel on the
stream given, so it may be captured into a CUDA graph (plan outside, run inside).

    lib = Library(".device/flashinfer/libvattn_flashinfer_mla.so")
    plan = lib.plan(qo_indptr, kv_indptr, kv_len, num_heads=8, backend="fa2")
    plan.run(q_nope, q_pe, ckv, kpe, kv_indices, out, lse, sm_scale, stream)   # lse: log2
"""

import ctypes
import os

ABI_VERSION = 1
BACKENDS = {"fa2": 0, "fa3": 1}
D_CKV, D_KPE = 512, 64
# sm_120 (RTX PRO 6000 Blackwell): cudaDevAttrMaxSharedMemoryPerMultiprocessor, the value
# FlashInfer's fa2 dispatches on there (its per-block opt-in limit is 101376).
SM120_SMEM_PER_SM = 102400


class FlashInferLibError(RuntimeError):
    """code: the library's status (1 argument, 2 unsupported, 3 CUDA, 4 FlashInfer's planner), or None."""

    def __init__(self, message, code=None):
        super().__init__(message)
        self.code = code


class RunArgs(ctypes.Structure):
    """struct vfi_run_args (peers/flashinfer_mla.h), field for field."""
    _fields_ = [
        ("q_nope", ctypes.c_void_p), ("q_nope_stride_n", ctypes.c_int64), ("q_nope_stride_h", ctypes.c_int64),
        ("q_pe", ctypes.c_void_p), ("q_pe_stride_n", ctypes.c_int64), ("q_pe_stride_h", ctypes.c_int64),
        ("ckv", ctypes.c_void_p), ("ckv_stride_slot", ctypes.c_int64),
        ("kpe", ctypes.c_void_p), ("kpe_stride_slot", ctypes.c_int64),
        ("kv_indices", ctypes.c_void_p),
        ("out", ctypes.c_void_p), ("out_stride_n", ctypes.c_int64), ("out_stride_h", ctypes.c_int64),
        ("lse", ctypes.c_void_p), ("sm_scale", ctypes.c_float), ("lse_base_e", ctypes.c_int32),
        ("stream", ctypes.c_void_p),
    ]


class PlanConfig(ctypes.Structure):
    """struct vfi_plan_config."""
    _fields_ = [(n, ctypes.c_int32) for n in (
        "backend", "causal", "num_stages", "tile_kv", "tile_q", "qk_shard", "smem_bytes", "dispatch_smem",
        "device_smem", "grid_x", "grid_y", "threads", "num_works")]


# name: (restype, argtypes)
_SIGNATURES = {
    "vfi_abi_version": (ctypes.c_int, []),
    "vfi_run_args_size": (ctypes.c_size_t, []),
    "vfi_plan_config_size": (ctypes.c_size_t, []),
    "vfi_library_description": (ctypes.c_char_p, []),
    "vfi_has_backend": (ctypes.c_int, [ctypes.c_int]),
    "vfi_last_error": (ctypes.c_char_p, []),
    "vfi_plan_create": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.POINTER(ctypes.c_int32),
                                       ctypes.POINTER(ctypes.c_int32), ctypes.POINTER(ctypes.c_int32), ctypes.c_int,
                                       ctypes.c_int, ctypes.c_int, ctypes.c_int]),
    "vfi_plan_get_config": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(PlanConfig)]),
    "vfi_plan_description": (ctypes.c_char_p, [ctypes.c_void_p]),
    "vfi_run": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(RunArgs)]),
    "vfi_plan_destroy": (None, [ctypes.c_void_p]),
}


def _int32_array(values, what):
    vals = [int(v) for v in values]
    if any(v < -2 ** 31 or v >= 2 ** 31 for v in vals):
        raise FlashInferLibError(f"{what}: a value does not fit in int32")
    return (ctypes.c_int32 * max(len(vals), 1))(*vals)


class Library:
    """The loaded library. Raises FlashInferLibError naming the path when it is missing, is not a
    loadable library, lacks a function of the ABI or has another ABI version or struct layout."""

    def __init__(self, path):
        self.path = os.path.abspath(path)
        if not os.path.isfile(self.path):
            raise FlashInferLibError(f"{self.path}: no such file (build it with peers/build_flashinfer.sh WHEEL OUTDIR)")
        try:
            self._lib = ctypes.CDLL(self.path)
        except OSError as e:
            raise FlashInferLibError(f"{self.path}: cannot load it: {e}") from e
        missing = [n for n in _SIGNATURES if not hasattr(self._lib, n)]
        if missing:
            raise FlashInferLibError(f"{self.path}: not a vattn FlashInfer MLA library (lacks {', '.join(missing)})")
        for name, (res, args) in _SIGNATURES.items():
            fn = getattr(self._lib, name)
            fn.restype, fn.argtypes = res, args
        abi = self._lib.vfi_abi_version()
        if abi != ABI_VERSION:
            raise FlashInferLibError(f"{self.path}: ABI version {abi}, this vattn.flashinfer_lib speaks {ABI_VERSION} "
                                     "(rebuild it from this checkout's peers/)")
        for what, size, struct in (("vfi_run_args", self._lib.vfi_run_args_size(), RunArgs),
                                   ("vfi_plan_config", self._lib.vfi_plan_config_size(), PlanConfig)):
            if size != ctypes.sizeof(struct):
                raise FlashInferLibError(f"{self.path}: struct {what} is {size} bytes there, "
                                         f"{ctypes.sizeof(struct)} here (header and binding differ)")
        self.description = self._lib.vfi_library_description().decode()
        self.backends = [b for b, code in BACKENDS.items() if self._lib.vfi_has_backend(code)]

    def _error(self, what, code):
        return FlashInferLibError(f"{what} (status {code}): {self._lib.vfi_last_error().decode()}", code)

    def plan(self, qo_indptr, kv_indptr, kv_len, num_heads, backend="fa2", causal=True, smem_limit=0):
        """FlashInfer's planner on host integer sequences (qo_indptr, kv_indptr: B+1; kv_len: B).
        smem_limit: fa2's per-SM shared-memory limit to choose the configuration by (0: the device's)."""
        if backend not in BACKENDS:
            raise FlashInferLibError(f"backend {backend!r}: not one of {', '.join(BACKENDS)}")
        if backend not in self.backends:
            raise FlashInferLibError(f"{self.path}: built without {backend} (has {', '.join(self.backends)})")
        batch = len(kv_len)
        if len(qo_indptr) != batch + 1 or len(kv_indptr) != batch + 1:
            raise FlashInferLibError(f"qo_indptr and kv_indptr need {batch + 1} entries for {batch} requests "
                                     f"(got {len(qo_indptr)}, {len(kv_indptr)})")
        handle = ctypes.c_void_p()
        code = self._lib.vfi_plan_create(ctypes.byref(handle), BACKENDS[backend], _int32_array(qo_indptr, "qo_indptr"),
                                         _int32_array(kv_indptr, "kv_indptr"), _int32_array(kv_len, "kv_len"), batch,
                                         int(num_heads), 1 if causal else 0, int(smem_limit))
        if code != 0:
            raise self._error("vfi_plan_create", code)
        return Plan(self, handle, int(num_heads), int(qo_indptr[-1]))


class Plan:
    """A plan: its workspace lives on the device it was made on, until close()."""

    def __init__(self, lib, handle, num_heads, n_q):
        self.lib, self._handle, self.num_heads, self.n_q = lib, handle, num_heads, n_q
        self.description = lib._lib.vfi_plan_description(handle).decode()
        cfg = PlanConfig()
        code = lib._lib.vfi_plan_get_config(handle, ctypes.byref(cfg))
        if code != 0:
            raise lib._error("vfi_plan_get_config", code)
        self.config = {name: getattr(cfg, name) for name, _ in PlanConfig._fields_}
        self.config["backend"] = next(b for b, c in BACKENDS.items() if c == cfg.backend)

    def arguments(self, q_nope, q_pe, ckv, kpe, kv_indices, out, lse, sm_scale, stream, lse_base_e=False):
        """The RunArgs for torch tensors, after checking dtype, shape, device and layout."""
        import torch

        n, H = self.n_q, self.num_heads
        want = (("q_nope", q_nope, torch.bfloat16, (n, H, D_CKV)), ("q_pe", q_pe, torch.bfloat16, (n, H, D_KPE)),
                ("out", out, torch.bfloat16, (n, H, D_CKV)))
        for name, t, dtype, shape in want:
            if t.dtype != dtype or tuple(t.shape) != shape or not t.is_cuda or t.stride(2) != 1:
                raise FlashInferLibError(f"{name}: needs a CUDA {dtype} tensor of shape {shape} with a contiguous last "
                                         f"dimension (got {t.dtype} {tuple(t.shape)} on {t.device}, strides {t.stride()})")
        for name, t, d in (("ckv", ckv, D_CKV), ("kpe", kpe, D_KPE)):
            if (t.dtype != torch.bfloat16 or t.dim() != 3 or t.shape[1] != 1 or t.shape[2] != d or not t.is_cuda
                    or t.stride(2) != 1):
                raise FlashInferLibError(f"{name}: needs a CUDA bfloat16 tensor [slots, 1, {d}] with a contiguous last "
                                         f"dimension (got {t.dtype} {tuple(t.shape)}, strides {t.stride()})")
        if kv_indices.dtype != torch.int32 or not kv_indices.is_cuda or not kv_indices.is_contiguous():
            raise FlashInferLibError("kv_indices: needs a contiguous CUDA int32 tensor")
        if lse is not None and (lse.dtype != torch.float32 or tuple(lse.shape) != (n, H) or not lse.is_contiguous()):
            raise FlashInferLibError(f"lse: needs a contiguous float32 tensor of shape {(n, H)}")
        return RunArgs(q_nope.data_ptr(), q_nope.stride(0), q_nope.stride(1), q_pe.data_ptr(), q_pe.stride(0),
                       q_pe.stride(1), ckv.data_ptr(), ckv.stride(0), kpe.data_ptr(), kpe.stride(0),
                       kv_indices.data_ptr(), out.data_ptr(), out.stride(0), out.stride(1),
                       None if lse is None else lse.data_ptr(), float(sm_scale), 1 if lse_base_e else 0, stream)

    def launch(self, args):
        """Enqueues the kernel with prepared RunArgs (no checks: for graph capture and timing loops)."""
        code = self.lib._lib.vfi_run(self._handle, ctypes.byref(args))
        if code != 0:
            raise self.lib._error("vfi_run", code)

    def run(self, q_nope, q_pe, ckv, kpe, kv_indices, out, lse, sm_scale, stream, lse_base_e=False):
        """One call on `stream` (an int cudaStream_t, e.g. torch.cuda.current_stream().cuda_stream).
        lse: log2 of the softmax denominator (FlashInfer's default), natural log with lse_base_e."""
        self.launch(self.arguments(q_nope, q_pe, ckv, kpe, kv_indices, out, lse, sm_scale, stream, lse_base_e))

    def close(self):
        if self._handle:
            self.lib._lib.vfi_plan_destroy(self._handle)
            self._handle = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def main(argv=None):
    """python3 -m vattn.flashinfer_lib LIB: loads it (no CUDA call) and prints what it is."""
    import sys

    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or argv[0] in ("-h", "--help"):
        print("usage: python3 -m vattn.flashinfer_lib LIB.so\n  loads a library built by peers/build_flashinfer.sh "
              "(no CUDA call) and prints its description and backends", file=sys.stderr)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    try:
        lib = Library(argv[0])
    except FlashInferLibError as e:
        print(f"vattn.flashinfer_lib: {e}", file=sys.stderr)
        return 1
    print(f"{lib.path}: {lib.description}; backends {', '.join(lib.backends)}; ABI {ABI_VERSION}")
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main())
