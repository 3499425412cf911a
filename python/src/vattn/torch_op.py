# SPDX-License-Identifier: Apache-2.0
"""The verify-attention kernel as a PyTorch op: `torch.ops.vattn.verify_attention`, over any
revision library (kernels/vattn_abi.h), on torch tensors and the current CUDA stream.

Planning and running are apart, as in the ABI (and FlashInfer's plan/run): a `Plan` is made once
from the plan limits and owns the workspace; `Plan.run()` fills `out` and `lse` and allocates
nothing when they are given, so it can be captured by `torch.cuda.graph` and replayed with new
lengths, indices, masks and split counts written into the same input tensors (the kernel reads
those on the device; the launch shape depends on the limits alone).

    plan = Plan("split-v2", max_requests=8, max_total_drafts=512, max_drafts_per_request=64,
                num_heads=8, revision_dir="build/revisions")
    plan.run(q, kv_pool, kv_indices, kv_indptr, kv_draft, qo_indptr, mask_bits, mask_word_indptr,
             sm_scale, out=out, lse=lse)
    plan.check()   # after the step: raises DeviceError when the device error word is set

The op's schema, its refusals and the tensors' layouts are in python/README.md ("vattn.torch").
Every refusal is an ArgumentError (a ValueError) naming the argument, raised before anything is
enqueued; what only the device can see lands in the workspace's error word (Plan.check()).
"""

import math
import os
import threading
from typing import List, Optional  # noqa: UP035  (custom_op reads the annotations; List works in every torch)

import numpy as np
import torch

from . import maskbits
from .revision_lib import Args, Library, Limits, RevisionLibError

# kernels/vattn_revisions.h: VATTN_REVISION_NAMES and VATTN_REVISION_DEFAULT (tests/python checks
# these against the header).
IN_TREE = ("split-v1", "split-v2")
DEFAULT_REVISION = "split-v2"
OP_NAME = "vattn::verify_attention"
LIMIT_FIELDS = ("max_requests", "max_total_drafts", "max_drafts_per_request", "num_heads", "max_splits")
WORKSPACE_ALIGN = 256  # the ABI refuses a workspace that is not 256-byte aligned
# VATTN_DEVERR_* (kernels/vattn_abi.h)
DEVICE_ERRORS = {0x1: "INDPTR", 0x2: "LIMITS", 0x4: "KV_INDEX", 0x8: "SPLITS", 0x10: "MASK"}
# What the ABI requires of each pointer's alignment (docs/verify-attention.md, host-side refusals).
_ALIGN = {"q": 16, "kv_pool": 16, "kv_draft": 16, "out": 16, "kv_indices": 4, "kv_indptr": 4, "qo_indptr": 4,
          "mask_bits": 4, "mask_word_indptr": 8, "forced_splits": 4, "lse": 4, "workspace": WORKSPACE_ALIGN}


class ArgumentError(ValueError):
    """vattn.torch refused a call or a plan; the message names the argument and the reason."""

    def __init__(self, argument, reason):
        super().__init__(f"vattn.torch: {argument}: {reason}")
        self.argument, self.reason = argument, reason


class DeviceError(RuntimeError):
    """The device error word was set by the last run (bits: VATTN_DEVERR_*)."""

    def __init__(self, bits, splits_used, revision):
        names = [n for b, n in DEVICE_ERRORS.items() if bits & b] or ["unknown bits"]
        super().__init__(f"vattn.torch: {revision}: the device error word is 0x{bits:x} ({', '.join(names)}): the rows "
                         "affected were written as NaN (docs/verify-attention.md, the device error word)")
        self.bits, self.splits_used = bits, splits_used


# ---- revisions ---------------------------------------------------------------------------------
def library_path(revision, revision_dir=None):
    """The file of a revision: an in-tree name (split-v1, split-v2) is looked up as
    libvattn_rev_<name>.so in revision_dir, else $VATTN_REVISION_DIR (a CUDA build writes
    BUILD/revisions/; on the GPU machine the staging has .device/build/revisions/); anything
    with a '/' or ending in .so is a path."""
    if not isinstance(revision, str) or not revision:
        raise ArgumentError("revision", f"expected a revision name or a library path, got {revision!r}")
    if revision in IN_TREE:
        d = revision_dir or os.environ.get("VATTN_REVISION_DIR")
        if not d:
            raise ArgumentError("revision", f"'{revision}' is an in-tree revision: say where its library is with "
                                            "revision_dir= or $VATTN_REVISION_DIR (a CUDA build writes BUILD/revisions/)")
        return os.path.abspath(os.path.join(d, f"libvattn_rev_{revision.replace('-', '_')}.so"))
    if "/" in revision or revision.endswith(".so"):
        return os.path.abspath(revision)
    raise ArgumentError("revision", f"unknown revision '{revision}' (in tree: {', '.join(IN_TREE)}; or a path to a "
                                    "revision library)")


_libraries = {}
_libraries_lock = threading.Lock()


def load_library(path):
    """A revision library by absolute path, loaded once per process (loading makes no CUDA call)."""
    with _libraries_lock:
        lib = _libraries.get(path)
        if lib is None:
            lib = _libraries[path] = Library(path)
        return lib


def revision_library(revision, revision_dir=None):
    """The loaded library of a revision name or path; an in-tree name must find that revision."""
    lib = load_library(library_path(revision, revision_dir))
    if revision in IN_TREE and lib.name != revision:
        raise ArgumentError("revision", f"{lib.path} is revision '{lib.name}', not '{revision}'")
    return lib


# ---- argument checks (host metadata only: no device read, usable on fake tensors) ------------------
def _limits_list(limits):
    if len(limits) != len(LIMIT_FIELDS):
        raise ArgumentError("limits", f"expected {len(LIMIT_FIELDS)} integers ({', '.join(LIMIT_FIELDS)}), got "
                                      f"{len(limits)}")
    out = []
    for name, v in zip(LIMIT_FIELDS, limits):
        if isinstance(v, bool) or int(v) != v or int(v) < 1:
            raise ArgumentError(f"limits.{name}", f"must be an integer >= 1 (got {v!r})")
        out.append(int(v))
    return out


def _need(name, t, dtypes):
    if not isinstance(t, torch.Tensor):
        raise ArgumentError(name, f"expected a torch.Tensor, got {type(t).__name__}")
    if t.dtype not in dtypes:
        raise ArgumentError(name, f"expected {' or '.join(str(d) for d in dtypes)}, got {t.dtype}")


def _shape(name, t, want, text):
    if tuple(t.shape) not in want:
        raise ArgumentError(name, f"expected shape {text}, got {tuple(t.shape)}")


def check_arguments(q, kv_pool, kv_indices, kv_indptr, kv_draft, qo_indptr, mask_bits, mask_word_indptr, forced_splits,
                    out, lse, workspace, sm_scale, limits, d_qk=None, d_v=None, need_cuda=False):
    """Every host-side refusal of the op, in a fixed order: limits, dtypes, shapes, contiguity,
    the plan limits, sm_scale, devices, then (need_cuda: a real run) CUDA and pointer alignment.
    d_qk/d_v: the revision's (None: any consistent pair, as the fake implementation checks).
    Returns (B, n_q, H, n_slots)."""
    max_requests, max_total_drafts, _max_t, num_heads, _max_splits = _limits_list(limits)
    bf16, i32, i64 = (torch.bfloat16,), (torch.int32,), (torch.int64,)
    for name, t, dt in (("q", q, bf16), ("kv_pool", kv_pool, bf16), ("kv_indices", kv_indices, i32),
                        ("kv_indptr", kv_indptr, i32), ("kv_draft", kv_draft, bf16), ("qo_indptr", qo_indptr, i32),
                        ("mask_bits", mask_bits, (torch.int32, torch.uint32)), ("mask_word_indptr", mask_word_indptr, i64),
                        ("out", out, bf16), ("lse", lse, (torch.float32,)), ("workspace", workspace, (torch.uint8,))):
        _need(name, t, dt)
    if forced_splits is not None:
        _need("forced_splits", forced_splits, i32)
    if q.dim() != 3 or q.shape[0] < 1 or q.shape[1] < 1:
        raise ArgumentError("q", f"expected shape [n_q, H, d_qk] with n_q, H >= 1, got {tuple(q.shape)}")
    n_q, H, dqk = (int(x) for x in q.shape)
    if d_qk is not None and dqk != d_qk:
        raise ArgumentError("q", f"rows of {dqk} values; this revision takes d_qk = {d_qk}")
    if kv_pool.dim() not in (2, 3) or kv_pool.shape[0] < 1:
        raise ArgumentError("kv_pool", f"expected shape [n_slots, {dqk}] or [n_slots, 1, {dqk}] with n_slots >= 1 "
                                       f"(a call without prefix still passes a pool), got {tuple(kv_pool.shape)}")
    n_slots = int(kv_pool.shape[0])
    _shape("kv_pool", kv_pool, ((n_slots, dqk), (n_slots, 1, dqk)), f"[n_slots, {dqk}] or [n_slots, 1, {dqk}]")
    _shape("kv_draft", kv_draft, ((n_q, dqk), (n_q, 1, dqk)), f"[n_q, {dqk}] or [n_q, 1, {dqk}] (n_q = {n_q}, q's rows)")
    if kv_indptr.dim() != 1 or kv_indptr.shape[0] < 2:
        raise ArgumentError("kv_indptr", f"expected shape [B+1] with B >= 1, got {tuple(kv_indptr.shape)}")
    B = int(kv_indptr.shape[0]) - 1
    _shape("qo_indptr", qo_indptr, ((B + 1,),), f"[B+1] = [{B + 1}] (B from kv_indptr)")
    _shape("mask_word_indptr", mask_word_indptr, ((B + 1,),), f"[B+1] = [{B + 1}] (B from kv_indptr)")
    if kv_indices.dim() != 1 or kv_indices.shape[0] < 1:
        raise ArgumentError("kv_indices", f"expected shape [>= kv_indptr[B]] with at least one entry (a call without "
                                          f"prefix still passes one), got {tuple(kv_indices.shape)}")
    if mask_bits.dim() != 1 or mask_bits.shape[0] < 1:
        raise ArgumentError("mask_bits", f"expected shape [>= mask_word_indptr[B]] with at least one word, got "
                                         f"{tuple(mask_bits.shape)}")
    if forced_splits is not None:
        _shape("forced_splits", forced_splits, ((1,), ()), "[1] (or a scalar)")
    if out.dim() != 3 or tuple(out.shape[:2]) != (n_q, H):
        raise ArgumentError("out", f"expected shape [n_q, H, d_v] = [{n_q}, {H}, d_v], got {tuple(out.shape)}")
    dv = int(out.shape[2])
    if (d_v is not None and dv != d_v) or not 1 <= dv <= dqk:
        raise ArgumentError("out", f"rows of {dv} values; expected d_v = {d_v if d_v is not None else f'1..{dqk}'}")
    _shape("lse", lse, ((n_q, H),), f"[n_q, H] = [{n_q}, {H}]")
    if workspace.dim() != 1:
        raise ArgumentError("workspace", f"expected a 1-D uint8 tensor (Plan owns one), got shape {tuple(workspace.shape)}")
    for name, t in (("q", q), ("kv_pool", kv_pool), ("kv_indices", kv_indices), ("kv_indptr", kv_indptr),
                    ("kv_draft", kv_draft), ("qo_indptr", qo_indptr), ("mask_bits", mask_bits),
                    ("mask_word_indptr", mask_word_indptr), ("forced_splits", forced_splits), ("out", out), ("lse", lse),
                    ("workspace", workspace)):
        if t is not None and not t.is_contiguous():
            raise ArgumentError(name, "must be contiguous (row-major): the kernel takes raw pointers; pass .contiguous()")
    if B > max_requests:
        raise ArgumentError("kv_indptr", f"B = {B} requests, over the plan's max_requests {max_requests}")
    if n_q > max_total_drafts:
        raise ArgumentError("q", f"n_q = {n_q} rows, over the plan's max_total_drafts {max_total_drafts}")
    if H != num_heads:
        raise ArgumentError("q", f"H = {H} heads; the plan is for num_heads = {num_heads}")
    if isinstance(sm_scale, bool) or not isinstance(sm_scale, (int, float)) or not math.isfinite(sm_scale) \
            or sm_scale <= 0:
        raise ArgumentError("sm_scale", f"must be a finite float > 0 (got {sm_scale!r})")
    dev = q.device
    for name, t in (("kv_pool", kv_pool), ("kv_indices", kv_indices), ("kv_indptr", kv_indptr), ("kv_draft", kv_draft),
                    ("qo_indptr", qo_indptr), ("mask_bits", mask_bits), ("mask_word_indptr", mask_word_indptr),
                    ("forced_splits", forced_splits), ("out", out), ("lse", lse), ("workspace", workspace)):
        if t is not None and t.device != dev:
            raise ArgumentError(name, f"is on {t.device}, q on {dev}: every tensor must be on one device")
    if need_cuda:
        if dev.type != "cuda":
            raise ArgumentError("q", f"is on {dev}: the kernel runs on a CUDA device (the op has no CPU implementation)")
        for name, t in (("q", q), ("kv_pool", kv_pool), ("kv_indices", kv_indices), ("kv_indptr", kv_indptr),
                        ("kv_draft", kv_draft), ("qo_indptr", qo_indptr), ("mask_bits", mask_bits),
                        ("mask_word_indptr", mask_word_indptr), ("forced_splits", forced_splits), ("out", out),
                        ("lse", lse), ("workspace", workspace)):
            if t is not None and t.data_ptr() % _ALIGN[name]:
                raise ArgumentError(name, f"address 0x{t.data_ptr():x} is not {_ALIGN[name]}-byte aligned (a view "
                                          "with an offset; the kernel needs what the allocator gives)")
    return B, n_q, H, n_slots


# ---- the op ------------------------------------------------------------------------------------------
_limits_structs = {}
_workspace_sizes = {}


def _limits_struct(limits):
    key = tuple(limits)
    s = _limits_structs.get(key)
    if s is None:
        s = _limits_structs[key] = Limits(*key)
    return s


def planned_workspace_bytes(lib, limits):
    """Bytes of workspace lib's run() needs under limits (cached; no CUDA call)."""
    key = (lib.path, tuple(limits))
    n = _workspace_sizes.get(key)
    if n is None:
        n = _workspace_sizes[key] = lib.workspace_size(_limits_struct(limits))
    return n


@torch.library.custom_op(OP_NAME, mutates_args=("out", "lse", "workspace"))
def verify_attention(q: torch.Tensor, kv_pool: torch.Tensor, kv_indices: torch.Tensor, kv_indptr: torch.Tensor,
                     kv_draft: torch.Tensor, qo_indptr: torch.Tensor, mask_bits: torch.Tensor,
                     mask_word_indptr: torch.Tensor, forced_splits: Optional[torch.Tensor], out: torch.Tensor,
                     lse: torch.Tensor, workspace: torch.Tensor, sm_scale: float, revision: str,
                     limits: List[int]) -> None:  # noqa: UP006
    """One verify-attention call of the revision library at path `revision`, enqueued on the
    current CUDA stream of q's device; fills out and lse (and the workspace's error words)."""
    # The tensors first (a CPU tensor is refused before any library is looked for), then what
    # the revision itself supports.
    B, n_q, H, n_slots = check_arguments(q, kv_pool, kv_indices, kv_indptr, kv_draft, qo_indptr, mask_bits,
                                         mask_word_indptr, forced_splits, out, lse, workspace, sm_scale, limits,
                                         need_cuda=True)
    lib = load_library(revision)
    if int(q.shape[2]) != lib.caps["d_qk"] or int(out.shape[2]) != lib.caps["d_v"]:
        raise ArgumentError("q" if int(q.shape[2]) != lib.caps["d_qk"] else "out",
                            f"d_qk = {int(q.shape[2])}, d_v = {int(out.shape[2])}; {lib.name} takes d_qk = "
                            f"{lib.caps['d_qk']}, d_v = {lib.caps['d_v']}")
    need = planned_workspace_bytes(lib, limits)
    if workspace.numel() < need:
        raise ArgumentError("workspace", f"{workspace.numel()} bytes; {lib.name} plans {need} for these limits")
    args = Args(q=q.data_ptr(), kv_pool=kv_pool.data_ptr(), n_slots=n_slots, kv_indices=kv_indices.data_ptr(),
                kv_indptr=kv_indptr.data_ptr(), kv_draft=kv_draft.data_ptr(), qo_indptr=qo_indptr.data_ptr(),
                mask_bits=mask_bits.data_ptr(), mask_word_indptr=mask_word_indptr.data_ptr(),
                forced_splits=None if forced_splits is None else forced_splits.data_ptr(), out=out.data_ptr(),
                lse=lse.data_ptr(), num_requests=B, n_q=n_q, num_heads=H, d_qk=int(q.shape[2]), d_v=int(out.shape[2]),
                sm_scale=sm_scale)
    with torch.cuda.device(q.device):
        lib.run(args, _limits_struct(limits), workspace.data_ptr(), workspace.numel(),
                torch.cuda.current_stream(q.device).cuda_stream)


@verify_attention.register_fake
def _verify_attention_fake(q, kv_pool, kv_indices, kv_indptr, kv_draft, qo_indptr, mask_bits, mask_word_indptr,
                           forced_splits, out, lse, workspace, sm_scale, revision, limits):
    # The same refusals as a real call, from metadata alone (no library, no device): a traced or
    # compiled graph fails where an eager call would.
    check_arguments(q, kv_pool, kv_indices, kv_indptr, kv_draft, qo_indptr, mask_bits, mask_word_indptr, forced_splits,
                    out, lse, workspace, sm_scale, limits)


# ---- the plan ------------------------------------------------------------------------------------------
class Plan:
    """One revision planned for fixed limits, with the workspace it needs (allocated once, here).

    revision: split-v1, split-v2 or a library path (revision_dir / $VATTN_REVISION_DIR: where the
    in-tree ones are). The limits are vattn_limits' fields; a limit outside what the revision's
    capabilities declare is refused here, naming it. device: where the workspace lives (default
    the current CUDA device). recorder (graph_recorder.Recorder) and shadow (shadow.Shadow), when
    given, see every run() (the layer argument says which layer a call is)."""

    def __init__(self, revision=DEFAULT_REVISION, *, max_requests, max_total_drafts, max_drafts_per_request, num_heads,
                 max_splits=128, device=None, revision_dir=None, recorder=None, shadow=None):
        self.library = revision_library(revision, revision_dir)
        self.revision, self.path = self.library.name, self.library.path
        caps = self.library.caps
        self.limits = _limits_list([max_requests, max_total_drafts, max_drafts_per_request, num_heads, max_splits])
        for name, v, cap in (("max_requests", max_requests, caps["max_requests"]),
                             ("max_drafts_per_request", max_drafts_per_request, caps["max_drafts_per_request"]),
                             ("num_heads", num_heads, caps["max_heads"]), ("max_splits", max_splits, caps["max_splits"])):
            if v > cap:
                raise ArgumentError(name, f"{v} is over what {self.revision} supports ({cap})")
        if max_drafts_per_request > max_total_drafts:
            raise ArgumentError("max_drafts_per_request", f"{max_drafts_per_request} is over max_total_drafts "
                                                          f"{max_total_drafts}")
        self.d_qk, self.d_v = int(caps["d_qk"]), int(caps["d_v"])
        try:
            self.workspace_bytes = planned_workspace_bytes(self.library, self.limits)
        except RevisionLibError as e:
            raise ArgumentError("limits", f"{self.revision} cannot plan {self.limit_dict()}: {e}") from e
        if device is None:
            device = torch.device("cuda", torch.cuda.current_device())
        self.device = torch.device(device)
        # The allocator hands out blocks aligned far beyond 256 bytes; round the size up so that
        # a workspace never shares its last bytes with anything.
        size = -(-max(self.workspace_bytes, 8) // WORKSPACE_ALIGN) * WORKSPACE_ALIGN
        self.workspace = torch.zeros(size, dtype=torch.uint8, device=self.device)
        if self.device.type == "cuda" and self.workspace.data_ptr() % WORKSPACE_ALIGN:
            raise ArgumentError("workspace", "the allocator returned a block that is not 256-byte aligned")
        self.recorder, self.shadow = recorder, shadow
        if shadow is not None:
            shadow.bind(self)

    def limit_dict(self):
        return dict(zip(LIMIT_FIELDS, self.limits))

    def empty_outputs(self, n_q=None):
        """out [n_q, H, d_v] bf16 and lse [n_q, H] fp32 on the plan's device (allocates)."""
        n_q = self.limits[1] if n_q is None else n_q
        H = self.limits[3]
        return (torch.empty((n_q, H, self.d_v), dtype=torch.bfloat16, device=self.device),
                torch.empty((n_q, H), dtype=torch.float32, device=self.device))

    def run(self, q, kv_pool, kv_indices, kv_indptr, kv_draft, qo_indptr, mask_bits, mask_word_indptr, sm_scale, *,
            out=None, lse=None, forced_splits=None, layer=0):
        """Enqueues one call on the current stream; returns (out, lse). With out and lse given
        nothing is allocated (graph-safe); without, they are allocated here."""
        if out is None or lse is None:
            o, l = self.empty_outputs(int(q.shape[0]))
            out = o if out is None else out
            lse = l if lse is None else lse
        torch.ops.vattn.verify_attention(q, kv_pool, kv_indices, kv_indptr, kv_draft, qo_indptr, mask_bits,
                                         mask_word_indptr, forced_splits, out, lse, self.workspace, float(sm_scale),
                                         self.path, self.limits)
        call = (q, kv_pool, kv_indices, kv_indptr, kv_draft, qo_indptr, mask_bits, mask_word_indptr, out, lse)
        if self.recorder is not None:
            self.recorder.record(layer, *call, sm_scale=float(sm_scale))
        if self.shadow is not None:
            self.shadow.observe(self, layer, *call, sm_scale=float(sm_scale), forced_splits=forced_splits)
        return out, lse

    def error_word(self):
        """The workspace's first two int32 words, on the device: the error bits of the last run
        and the largest split count it used (reading them synchronises)."""
        return self.workspace[:8].view(torch.int32)

    def check(self):
        """Raises DeviceError when the last run set the error word (synchronises)."""
        bits, splits = (int(x) for x in self.error_word().tolist())
        if bits:
            raise DeviceError(bits & 0xFFFFFFFF, splits, self.revision)
        return splits


def pack_draft_masks(masks):
    """Per-request dense draft masks (each [T_b, T_b], bool/0-1, torch or numpy) -> (mask_bits
    int32 [words], mask_word_indptr int64 [B+1]) as CPU tensors in the ABI's packed form."""
    dense, indptr, qo = [], [0], [0]
    for m in masks:
        a = m.detach().cpu().numpy() if isinstance(m, torch.Tensor) else np.asarray(m)
        if a.ndim != 2 or a.shape[0] != a.shape[1] or a.shape[0] < 1:
            raise ArgumentError("masks", f"each mask must be [T_b, T_b] with T_b >= 1, got {a.shape}")
        dense.append(a.astype(bool).ravel())
        indptr.append(indptr[-1] + a.size)
        qo.append(qo[-1] + a.shape[0])
    bits, word_indptr = maskbits.pack(np.concatenate(dense) if dense else np.zeros(0, bool), indptr, qo)
    return torch.from_numpy(bits.view(np.int32).copy()), torch.from_numpy(word_indptr)
