"""Capture a serving engine's verify-attention calls as vattn case files.

One captured call is one case file: the queries, only the KV rows the call references (with
their pool slots as `kv_slot_ids`), the drafts' own KV rows, the draft masks, and what the
server's kernel returned as `outputs/serving`, with `layer`, `step`, `tp_rank`, `model`, `gpu` and
`source = "capture:sglang"`. The serving thread decides and snapshots on the device (a gather of
the referenced rows and copies of the other tensors, queued on its stream); for captured calls
only it reads the index pointers, the used kv_indices and the custom mask synchronously, which
is what decides whether the call can be stored. The copy to the host and the write happen on a
writer thread behind a bounded queue. A call that cannot be stored (a full queue, a size cap,
a mask or index the case format cannot hold) is refused by submit() at once: it returns False,
counts the reason and warns (capture_sink.CaptureWarning). Files are never overwritten: a taken
name gets a numbered one (capture_sink). Python hooks run only when the backend's Python runs:
serve with --disable-cuda-graph (a replayed CUDA graph calls no Python; inside graphs, use
vattn.torch's Recorder).

    import vattn.capture
    cap = vattn.capture.install("dumps/", steps=range(100, 104), layers=[0, 30],
                                model="Kimi-K2.6 (dummy weights)", gpu="H200")
    ...                     # serve; every target_verify call of those steps and layers is written
    cap.close()             # drains the queue; cap.stats() says what was written and skipped

`install` patches SGLang's Triton attention backend (the versions in SUPPORTED_SGLANG; others are
refused with the reason). `Capture.submit` is the backend-independent part: it takes the
arguments of the extend-attention call (torch tensors on any device, or numpy arrays of bf16
bits for tests) and is what the tests drive with a stand-in for the backend call.
"""

import dataclasses
import queue
import threading

import numpy as np

from . import __version__
from .capture_sink import CaptureWarning, CaseSink, QueuedWriter, case_bytes
from .casefile import Case, CaseFileError, Output
from .dtypes import bf16_bits
from .validate import validate

SUPPORTED_SGLANG = ("0.5.23",)
D_QK, D_V = 576, 512  # MLA: k_buffer rows of 576 (512 latent + 64 RoPE), V = the first 512 columns
__all__ = ["Capture", "CaptureError", "CaptureWarning", "install", "uninstall", "SUPPORTED_SGLANG"]


class CaptureError(RuntimeError):
    """The hook cannot be installed here (no SGLang, an untested version, an unexpected backend)."""


@dataclasses.dataclass
class _Snapshot:  # what the serving thread hands to the writer (device or host arrays)
    step: int
    layer: int
    q: object
    k_extend: object
    rows: object          # k_buffer rows the call references, in `slots` order
    slots: np.ndarray     # their pool slots, sorted, distinct
    qo_indptr: np.ndarray
    kv_indptr: np.ndarray
    kv_indices: np.ndarray  # positions into `slots`
    draft_mask: np.ndarray  # the draft blocks of the custom mask, dense, request by request
    draft_mask_indptr: np.ndarray
    sm_scale: float
    o: object
    est: int = 0          # the bytes reserved for it (capture_sink.case_bytes)
    ready: object = None  # a CUDA event recorded after the snapshot (torch), or None


def _is_torch(x):
    return type(x).__module__.startswith("torch")


def _host_ints(x):
    """A small index array as host int64 (on the serving thread: these sizes decide the call)."""
    if _is_torch(x):
        x = x.detach().to("cpu")
        return x.numpy().astype(np.int64).ravel()
    return np.asarray(x).astype(np.int64).ravel()


def _host_bf16(x, field):
    """bf16 values as uint16 bits on the host, by vattn.write's rules (dtypes.bf16_bits): a torch
    bfloat16 tensor, an ml_dtypes.bfloat16 array or uint16 bits; anything else is refused naming
    the field (never rounded: a capture stores what the server had)."""
    return bf16_bits(x, field)


def _host_bool(x):
    if _is_torch(x):
        x = x.detach().to("cpu")
        return x.numpy().astype(bool).ravel()
    return np.asarray(x).astype(bool).ravel()


def _copy(x):
    return x.detach().clone() if _is_torch(x) else np.array(x, copy=True)


def _rows(x, n):
    """The first n rows (SGLang may hand over more rows than the call's drafts)."""
    return x[:n]


def _placeholder(shape, dtype=np.uint16):
    """A read-only array of the right shape that takes no memory: what validate() needs to
    check a call's sizes before its tensors leave the device."""
    return np.broadcast_to(np.zeros((), dtype), shape)


def _bf16_dtype_ok(x):
    """Whether dtypes.bf16_bits takes x by its bits (without convert), from its dtype alone."""
    if _is_torch(x):
        return str(x.dtype) == "torch.bfloat16"
    dt = np.asarray(x).dtype
    return (dt.kind == "u" and dt.itemsize == 2) or dt.name == "bfloat16"


class Capture(QueuedWriter):
    """Decides which calls to capture, snapshots them and writes them on a writer thread.

    out_dir: where the files go (created). steps, layers: which to capture (None: all).
    max_case_bytes: a call whose case would be larger is skipped; max_total_bytes: capturing
    stops once this much is written or queued. queue_size: snapshots waiting for the writer.
    start_writer=False leaves the queue to drain() (tests). A call that is not captured is
    counted under its reason in stats() and warned about (CaptureWarning) when it happens."""

    def __init__(self, out_dir, steps=None, layers=None, max_case_bytes=256 << 20, max_total_bytes=4 << 30,
                 queue_size=4, model="", gpu="", tp_rank=0, notes="", description="", start_writer=True,
                 generator=""):
        self.out_dir = out_dir
        self.steps = None if steps is None else set(steps)
        self.layers = None if layers is None else set(layers)
        self.max_case_bytes, self.max_total_bytes = max_case_bytes, max_total_bytes
        self.model, self.gpu, self.tp_rank, self.notes = model, gpu, tp_rank, notes
        self.description = description or "the serving engine's verify-attention kernel"
        self.generator = generator or f"vattn.capture {__version__}"
        self.sink = CaseSink(out_dir, "vattn.capture", "capture:sglang", self.generator, max_case_bytes,
                             max_total_bytes, model=model, gpu=gpu, notes=notes,
                             counters=("offered", "captured", "skipped_queue_full", "skipped_unsupported"))
        self._queue = queue.Queue(maxsize=queue_size)
        self._closed = False
        self._writer = None
        if start_writer:
            self._writer = threading.Thread(target=self._write_loop, name="vattn-capture-writer", daemon=True)
            self._writer.start()

    # ---- the serving thread's side -------------------------------------------------------
    def wants(self, step, layer):
        return ((self.steps is None or step in self.steps) and (self.layers is None or layer in self.layers)
                and not self._closed)

    def _count(self, key, reason=None):
        """Counts a skipped call; with a reason it is also warned about (kept for callers of
        the earlier interface: install()'s wrapper)."""
        if reason:
            where, _, why = reason.partition(": ")
            self.sink.skip(key, where, why or reason)
        else:
            self.sink.count(key)

    def submit(self, step, layer, q, k_extend, k_buffer, qo_indptr, kv_indptr, kv_indices, custom_mask,
               mask_indptr, sm_scale, o, v_buffer=None):
        """One extend-attention call in target_verify mode (MLA): q [n_q, H, 576], k_extend
        [n_q, 1, 576], k_buffer [slots, 1, 576] (v_buffer, when given, must be its first 512
        columns), qo_indptr/kv_indptr [B+1], kv_indices (at least kv_indptr[B] entries),
        custom_mask flat (request b: T_b x (P_b + T_b), row-major, prefix columns first),
        mask_indptr [B+1], o [n_q, H, 512] (or [n_q, H*512]).

        True only when the call is queued and will make a valid case: every check that can
        refuse it runs here, on the serving thread (sizes, indices inside k_buffer, the mask,
        the caps), so a refused call returns False and is warned about now. Calls not chosen
        by steps/layers return False silently."""
        self.sink.count("offered")
        if not self.wants(step, layer):
            return False
        where = f"step {step} layer {layer}"
        if tuple(k_buffer.shape[1:]) not in ((1, D_QK), (D_QK,)) or q.shape[-1] != D_QK:
            self.sink.skip("skipped_unsupported", where, f"not MLA 576/512 (q {tuple(q.shape)}, k_buffer "
                                                         f"{tuple(k_buffer.shape)})")
            return False
        if v_buffer is not None and not self._v_is_k_prefix(k_buffer, v_buffer):
            self.sink.skip("skipped_unsupported", where, f"v_buffer is not the first {D_V} columns of k_buffer")
            return False
        if self._queue.full():  # before any work: a full queue costs serving nothing
            self.sink.skip("skipped_queue_full", where, "the writer's queue is full (queue_size "
                                                        f"{self._queue.maxsize}); the writer is behind")
            return False
        # The synchronous reads on the serving thread, for captured calls only: the index pointers
        # (B+1 integers each), the used kv_indices and the custom mask, which decide whether the
        # call can be stored at all and size the gather below.
        try:
            plan = self._host_plan(q, k_extend, k_buffer, qo_indptr, kv_indptr, kv_indices, custom_mask, mask_indptr,
                                   sm_scale, o, where)
        except (ValueError, CaseFileError) as e:
            self.sink.skip("skipped_unsupported", where, str(e))
            return False
        if not self.sink.reserve(where, plan["est"]):
            return False
        n_q, slots = plan["n_q"], plan["slots"]
        if _is_torch(k_buffer):
            import torch

            sel = torch.as_tensor(slots, device=k_buffer.device)
            rows = k_buffer.detach().reshape(k_buffer.shape[0], D_QK).index_select(0, sel)
        else:
            rows = np.asarray(k_buffer).reshape(-1, D_QK)[slots]
        snap = _Snapshot(step, layer, _copy(_rows(q, n_q)), _copy(_rows(k_extend, n_q)), rows, slots.astype(np.int64),
                         plan["qo"].astype(np.int32), plan["kv"].astype(np.int32), plan["inverse"].astype(np.int32),
                         plan["draft_mask"], plan["draft_mask_indptr"], float(sm_scale), _copy(_rows(o, n_q)),
                         est=plan["est"])
        if _is_torch(q) and q.is_cuda:
            import torch

            snap.ready = torch.cuda.Event()
            snap.ready.record()
        try:
            self._queue.put_nowait(snap)
        except queue.Full:
            self.sink.release(plan["est"])
            self.sink.skip("skipped_queue_full", where, "the writer's queue is full")
            return False
        self.sink.count("captured")
        return True

    def _host_plan(self, q, k_extend, k_buffer, qo_indptr, kv_indptr, kv_indices, custom_mask, mask_indptr, sm_scale,
                   o, where):
        """What the call becomes, decided on the host; raises ValueError/CaseFileError with the
        reason when it cannot become a valid case."""
        for name, x in (("q", q), ("k_extend", k_extend), ("k_buffer", k_buffer), ("o", o)):
            if not _bf16_dtype_ok(x):  # the dtype only: the copy to the host happens on the writer thread
                raise ValueError(f"{name}: expected bf16 (a torch.bfloat16 tensor, an ml_dtypes.bfloat16 array or "
                                 f"uint16 bits; a capture stores what the server had, never rounded), got {x.dtype}")
        qo, kv, mi = _host_ints(qo_indptr), _host_ints(kv_indptr), _host_ints(mask_indptr)
        B = len(qo) - 1
        if B < 1 or len(kv) != B + 1 or len(mi) != B + 1:
            raise ValueError(f"qo_indptr, kv_indptr, mask_indptr have {len(qo)}, {len(kv)}, {len(mi)} entries: "
                             "expected B+1 each, B >= 1")
        for name, a in (("qo_indptr", qo), ("kv_indptr", kv), ("mask_indptr", mi)):
            if a[0] < 0 or (np.diff(a) < 0).any():
                raise ValueError(f"{name} is negative or decreases: {a.tolist()[:8]}")
        n_q = int(qo[-1])
        H = int(np.prod(q.shape[1:])) // D_QK
        if n_q > q.shape[0] or n_q > k_extend.shape[0] or n_q > o.shape[0]:
            raise ValueError(f"qo_indptr[B] = {n_q} rows, but q, k_extend, o have {q.shape[0]}, {k_extend.shape[0]}, "
                             f"{o.shape[0]}")
        if int(np.prod(o.shape[1:])) != H * D_V:
            raise ValueError(f"o rows hold {int(np.prod(o.shape[1:]))} values, expected H x {D_V} = {H * D_V}")
        used = int(kv[-1])
        if used > kv_indices.shape[0]:
            raise ValueError(f"kv_indptr[B] = {used}, but kv_indices has {kv_indices.shape[0]} entries")
        idx = _host_ints(kv_indices[:used])  # SGLang over-allocates kv_indices: the used part only
        n_slots = int(k_buffer.shape[0])
        bad = np.nonzero((idx < 0) | (idx >= n_slots))[0]
        if bad.size:
            raise ValueError(f"kv_indices entry {int(bad[0])} = {int(idx[bad[0]])} is outside k_buffer ({n_slots} rows)")
        slots, inverse = np.unique(idx, return_inverse=True)
        T, P = np.diff(qo), np.diff(kv)
        need = mi[:-1] + T * (P + T)
        mask = _host_bool(custom_mask[: int(need.max())] if need.size else custom_mask)
        draft, dmi = [], [0]
        for b in range(B):
            t, p = int(T[b]), int(P[b])
            if need[b] > mask.size:
                raise ValueError(f"custom_mask: request {b} needs entries up to {int(need[b])}, the mask has {mask.size} "
                                 f"(T_b x (P_b + T_b) = {t} x {p + t} from {int(mi[b])})")
            m = mask[int(mi[b]):int(need[b])].reshape(t, p + t)
            if not m[:, :p].all():
                raise ValueError(f"custom_mask: request {b}: the prefix is not fully visible to every draft (the "
                                 "verify contract needs it)")
            draft.append(m[:, p:].astype(np.uint8).ravel())
            dmi.append(dmi[-1] + t * t)
        draft_mask = np.concatenate(draft) if draft else np.zeros(0, np.uint8)
        skeleton = Case(name=f"step{0:06d}_layer{0:02d}", num_heads=H, sm_scale=float(sm_scale),
                        q=_placeholder((n_q, H, D_QK)), kv_pool=_placeholder((len(slots), D_QK)),
                        kv_indices=inverse.astype(np.int32), kv_indptr=kv.astype(np.int32),
                        kv_draft=_placeholder((n_q, D_QK)), qo_indptr=qo.astype(np.int32), draft_mask=draft_mask,
                        draft_mask_indptr=np.asarray(dmi, np.int64), kv_slot_ids=slots.astype(np.int64),
                        outputs=[Output("serving", self.description, _placeholder((n_q, H, D_V)), None)])
        validate(skeleton, where)
        return {"n_q": n_q, "qo": qo, "kv": kv, "slots": slots, "inverse": inverse, "draft_mask": draft_mask,
                "draft_mask_indptr": np.asarray(dmi, np.int64), "est": case_bytes(skeleton)}

    @staticmethod
    def _v_is_k_prefix(k_buffer, v_buffer):
        if _is_torch(k_buffer):
            return (v_buffer.data_ptr() == k_buffer.data_ptr() and v_buffer.shape[-1] == D_V
                    and v_buffer.stride()[:-1] == k_buffer.stride()[:-1])
        k, v = np.asarray(k_buffer), np.asarray(v_buffer)
        return v.shape[-1] == D_V and np.shares_memory(k, v) and np.array_equal(k[..., :D_V], v)

    # ---- the writer's side -----------------------------------------------------------------
    def _handle(self, job):
        self._write_one(job)

    def drain(self):
        """Writes what is queued, on the calling thread (for start_writer=False)."""
        self._handle_queued()

    def case_of(self, snap):
        """The case a snapshot becomes (host copies happen here)."""
        if snap.ready is not None:
            snap.ready.synchronize()
        q = _host_bf16(snap.q, "q")
        n_q = q.shape[0]
        H = q.size // (n_q * D_QK)
        name = f"step{snap.step:06d}_layer{snap.layer:02d}"
        return Case(name=name, num_heads=H, sm_scale=snap.sm_scale, q=q.reshape(n_q, H, D_QK),
                    kv_pool=_host_bf16(snap.rows, "kv_pool").reshape(-1, D_QK), kv_indices=snap.kv_indices,
                    kv_indptr=snap.kv_indptr, kv_draft=_host_bf16(snap.k_extend, "kv_draft").reshape(n_q, D_QK),
                    qo_indptr=snap.qo_indptr, draft_mask=snap.draft_mask, draft_mask_indptr=snap.draft_mask_indptr,
                    kv_slot_ids=snap.slots, int_attrs={"layer": snap.layer, "step": snap.step, "tp_rank": self.tp_rank},
                    outputs=[Output("serving", self.description,
                                    _host_bf16(snap.o, "outputs/serving/out").reshape(n_q, H, D_V), None)])

    def _write_one(self, snap):
        where = f"step {snap.step} layer {snap.layer}"
        try:
            c = self.case_of(snap)
        except Exception as e:  # a device error surfacing at the copy: counted, never raised into the writer
            self.sink.release(snap.est)
            self.sink.skip("write_failed", where, f"{type(e).__name__}: {e}")
            return
        self.sink.write(f"{c.name}_tp{self.tp_rank}", c, snap.est, where)

    def stats(self):
        return dict(self.sink.stats(), queued=self._queue.qsize())

    def close(self, timeout=None):
        """Stops capturing, writes what is queued and returns the stats."""
        self._closed = True
        self._finish_queue(timeout)
        return self.stats()


def install(out_dir, backend_class=None, **options):
    """Captures SGLang's Triton backend in target_verify mode; returns the Capture.

    Wraps TritonAttnBackend.forward_extend (which knows the mode and the layer) and its
    _forward_extend_kernel (which receives the extend-attention call's arguments). `step`
    counts target_verify passes: it grows when the lowest layer id seen comes round again."""
    if backend_class is None:
        try:
            import sglang
            from sglang.srt.layers.attention import triton_backend
        except ImportError as e:
            raise CaptureError(f"SGLang is not importable here ({e}); pip install sglang=={SUPPORTED_SGLANG[-1]}") from e
        version = getattr(sglang, "__version__", "unknown")
        if version not in SUPPORTED_SGLANG:
            raise CaptureError(f"SGLang {version} is not one this hook was tested with ({', '.join(SUPPORTED_SGLANG)}): "
                               "the backend's call arguments may differ; refusing rather than writing wrong cases")
        backend_class = triton_backend.TritonAttnBackend
        options.setdefault("generator", f"vattn.capture {__version__} (sglang {version})")
        options.setdefault("description", f"SGLang {version} Triton extend_attention_fwd, target_verify")
    for attr in ("forward_extend", "_forward_extend_kernel"):
        if not callable(getattr(backend_class, attr, None)):
            raise CaptureError(f"{backend_class.__name__} has no {attr}(): not the backend this hook knows")
    if getattr(backend_class, "_vattn_capture", None) is not None:
        raise CaptureError("a vattn capture is installed already; close() it and call uninstall() first")
    if "tp_rank" not in options:
        try:
            from sglang.srt.distributed import get_tensor_model_parallel_rank

            options["tp_rank"] = int(get_tensor_model_parallel_rank())
        except Exception:
            options["tp_rank"] = 0
    cap = Capture(out_dir, **options)
    local = threading.local()
    counter = {"step": -1, "first_layer": None}
    orig_extend, orig_kernel = backend_class.forward_extend, backend_class._forward_extend_kernel

    def forward_extend(self, q, k, v, layer, forward_batch, *args, **kwargs):
        mode = getattr(forward_batch, "forward_mode", None)
        verify = mode is not None and mode.is_target_verify()
        if verify:  # a pass starts at the first layer seen (layer 0 of this rank's model)
            lid = int(layer.layer_id)
            if counter["first_layer"] is None:
                counter["first_layer"] = lid
            if lid == counter["first_layer"]:
                counter["step"] += 1
        local.verify = verify
        try:
            return orig_extend(self, q, k, v, layer, forward_batch, *args, **kwargs)
        finally:
            local.verify = False

    def forward_extend_kernel(self, layer, *args, **kwargs):
        result = orig_kernel(self, layer, *args, **kwargs)
        if getattr(local, "verify", False) and cap.wants(counter["step"], int(layer.layer_id)):
            # (q, k, v, o, k_buffer, v_buffer, qo_indptr, kv_indptr, kv_indices, custom_mask, causal,
            #  mask_indptr, max_extend_len, k_descale, v_descale, sm_scale, ...) as SGLang passes them
            q, k_ext, _v, o, k_buf, v_buf, qo, kvp, kvi, mask, _causal, mi = args[:12]
            sm_scale = args[15] if len(args) > 15 else layer.scaling
            try:
                cap.submit(counter["step"], int(layer.layer_id), q, k_ext, k_buf, qo, kvp, kvi, mask, mi, sm_scale, o,
                           v_buffer=v_buf)
            except Exception as e:  # never let the capture break serving
                cap.sink.skip("skipped_unsupported", f"step {counter['step']} layer {int(layer.layer_id)}",
                              f"{type(e).__name__}: {e}")
        return result

    backend_class.forward_extend = forward_extend
    backend_class._forward_extend_kernel = forward_extend_kernel
    backend_class._vattn_capture = (cap, orig_extend, orig_kernel)
    return cap


def uninstall(backend_class=None):
    """Puts the backend's methods back (close() the Capture to write what is queued)."""
    if backend_class is None:
        from sglang.srt.layers.attention import triton_backend

        backend_class = triton_backend.TritonAttnBackend
    state = getattr(backend_class, "_vattn_capture", None)
    if state is None:
        return
    _, backend_class.forward_extend, backend_class._forward_extend_kernel = state
    backend_class._vattn_capture = None
# SPDX-License-Identifier: Apache-2.0
