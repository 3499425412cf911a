# SPDX-License-Identifier: Apache-2.0
"""A recorder of verify-attention calls that can sit inside a captured CUDA graph.

The eager hook (capture.py) needs Python to run at every call; a replayed CUDA graph runs none.
This recorder instead puts device work into the graph: for each recorded call site, copies of
the call's inputs and outputs into preallocated ring slots (tensor.index_copy_ at a slot index
that lives on the device), a gather of the pool rows its kv_indices name, and a device-side
decision whether this replay is kept (the step, the layer, a sampling hash). Nothing in record()
synchronises, reads the device or allocates: every tensor it writes, scratch included, is made
in __init__, sized from the plan limits and max_kv_tokens, so the graph replays it as captured.

    rec = Recorder("dumps/", max_requests=8, max_total_drafts=512, max_drafts_per_request=64,
                   num_heads=8, max_kv_tokens=65536, steps=range(100, 110), layers=[0, 30],
                   sample_rate=0.5)
    plan = vattn.torch.Plan("split-v2", ..., recorder=rec)
    with torch.cuda.graph(g):
        rec.begin_step()                        # once per forward: the device step counter + 1
        plan.run(..., out=out, lse=lse, layer=i)   # records layer i's call (a chosen layer)
    for _ in range(n): g.replay(); rec.drain()  # drain() after replays: host side, one sync
    rec.close()

A kept replay takes the next ring slot (slot = head % slots; head counts kept replays on the
device); a replay not kept writes into a discard slot, so the graph is the same either way and
recording costs its copies on every replay of a recorded site. drain() (host, on the stream the
graph replays on) reads head and the slots' small index arrays (one synchronisation), stages
the new records' used parts into pinned host memory with asynchronous copies, and hands them
to a writer thread that makes each one a case file (abi_case.py, capture_sink.py): unique
names, the byte caps, and every call that cannot be stored counted and warned about as soon
as the host can know it (at record() for what the shapes say; at drain() for what only the
device knew: a prefix longer than max_kv_tokens, a ring slot overwritten before drain()).

Selection, identical on device and host (Recorder.selects):
    h = (step * 0x2545F491 + ((layer * 0x9E3779B1 + seed * 0x85EBCA6B) mod 2^32)) mod 2^32
    h ^= h >> 16;  h = (h * 0x045D9F3B) mod 2^32;  h ^= h >> 16
    kept = step in steps and h < floor(sample_rate * 2^32)      (layers: at record(), on the host)
"""

import dataclasses
import queue
import threading

import numpy as np
import torch

from . import __version__
from .abi_case import case_from_abi
from .capture_sink import FILE_OVERHEAD, CaseSink, QueuedWriter
from .casefile import CaseFileError, Output

M32 = 0xFFFFFFFF
MAX_STEP_TABLE = 1 << 24


def selection_hash(step, layer, seed):
    """The sampling hash, in Python integers (the device computes the same in int64)."""
    h = (step * 0x2545F491 + ((layer * 0x9E3779B1 + seed * 0x85EBCA6B) & M32)) & M32
    h ^= h >> 16
    h = (h * 0x045D9F3B) & M32
    return h ^ (h >> 16)


@dataclasses.dataclass(frozen=True)
class _Site:  # one recorded call site: what the host knows of it when record() runs
    layer: int
    B: int
    n_q: int
    n_slots: int
    K: int          # kv_indices entries the slot holds (min(kv_indices.numel(), max_kv_tokens))
    M: int          # mask words the slot holds
    sm_scale: float  # as the kernel received it (float32)


@dataclasses.dataclass
class _Job:  # one drained record on its way to the writer
    seq: int
    step: int
    site: _Site
    qo: np.ndarray
    kv: np.ndarray
    mwi: np.ndarray
    host: dict
    est: int
    ready: object = None


def _bits(t):
    """A bf16 CPU tensor -> numpy uint16 bits."""
    return t.view(torch.int16).numpy().view(np.uint16)


class Recorder(QueuedWriter):
    """Records chosen verify-attention calls into device ring slots, graph-safe; drains them to
    case files. The limits are the plan's (a vattn.torch Plan's limit_dict(), or for_plan());
    max_kv_tokens caps the prefix tokens of one call (sum of P_b) that a slot holds; slots: the
    ring's length (records kept between two drain() calls). steps: None (all), a range (checked
    on the device as a range) or a set of steps; layers: None or a set (decided at record());
    sample_rate in [0, 1] with seed: the hash above. The caps and the header fields are the eager
    hook's (capture.Capture). producer: the stored output's name ("serving": what the server's
    kernel returned), description: which kernel that was."""

    def __init__(self, out_dir, *, max_requests, max_total_drafts, max_drafts_per_request, num_heads, max_kv_tokens,
                 slots=4, d_qk=576, d_v=512, steps=None, layers=None, sample_rate=1.0, seed=0, device=None,
                 max_case_bytes=256 << 20, max_total_bytes=4 << 30, queue_size=16, max_sites=256,
                 source="capture:vattn.torch", producer="serving", description="", model="", gpu="", tp_rank=0,
                 notes="", generator="", start_writer=True, max_splits=None):
        for name, v in (("max_requests", max_requests), ("max_total_drafts", max_total_drafts),
                        ("max_drafts_per_request", max_drafts_per_request), ("num_heads", num_heads),
                        ("max_kv_tokens", max_kv_tokens), ("slots", slots), ("d_qk", d_qk), ("d_v", d_v),
                        ("max_sites", max_sites)):
            if isinstance(v, bool) or int(v) != v or v < 1:
                raise ValueError(f"vattn.torch Recorder: {name} must be an integer >= 1 (got {v!r})")
        if not 0.0 <= float(sample_rate) <= 1.0:
            raise ValueError(f"vattn.torch Recorder: sample_rate must be in [0, 1] (got {sample_rate!r})")
        if isinstance(seed, bool) or int(seed) != seed or not 0 <= seed <= M32:
            raise ValueError(f"vattn.torch Recorder: seed must be an integer in [0, 2^32) (got {seed!r})")
        self.nq_cap, self.B_cap, self.H = int(max_total_drafts), int(max_requests), int(num_heads)
        self.K_cap, self.N = int(max_kv_tokens), int(slots)
        self.d_qk, self.d_v = int(d_qk), int(d_v)
        # The most mask words a call within the limits uses: sum_b T_b * ceil(T_b/32).
        self.M_cap = self.nq_cap * ((int(max_drafts_per_request) + 31) // 32)
        self.layers = None if layers is None else {int(x) for x in layers}
        self.sample_rate, self.seed = float(sample_rate), int(seed)
        self.threshold = min(int(self.sample_rate * 2 ** 32), 2 ** 32)
        self.tp_rank, self.producer = int(tp_rank), producer
        self.description = description or "the serving engine's verify-attention kernel (recorded in a CUDA graph)"
        self.max_sites = int(max_sites)
        self.sink = CaseSink(out_dir, "vattn.torch recorder", source, generator or f"vattn.torch recorder {__version__}",
                             max_case_bytes, max_total_bytes, model=model, gpu=gpu, notes=notes,
                             counters=("recorded", "drained", "skipped_shape", "skipped_overwritten", "skipped_kv_cap",
                                       "skipped_invalid", "skipped_queue_full"))
        if device is None:
            device = torch.device("cuda", torch.cuda.current_device())
        self.device = dev = torch.device(device)
        N1 = self.N + 1  # the last slot is the discard slot of replays not kept
        bf16 = torch.bfloat16

        def z(*shape, dtype=bf16):
            return torch.zeros(shape, dtype=dtype, device=dev)

        self.q_s, self.draft_s = z(N1, self.nq_cap, self.H, self.d_qk), z(N1, self.nq_cap, self.d_qk)
        self.out_s, self.lse_s = z(N1, self.nq_cap, self.H, self.d_v), z(N1, self.nq_cap, self.H, dtype=torch.float32)
        self.qo_s, self.kvp_s = z(N1, self.B_cap + 1, dtype=torch.int32), z(N1, self.B_cap + 1, dtype=torch.int32)
        self.mwi_s = z(N1, self.B_cap + 1, dtype=torch.int64)
        self.idx_s, self.rows_s = z(N1, self.K_cap, dtype=torch.int32), z(N1, self.K_cap, self.d_qk)
        self.mask_s = z(N1, self.M_cap, dtype=torch.int32)
        self.meta_s = z(N1, 4, dtype=torch.int64)  # step, site, seq (head when kept), 1
        self.meta_s[:, 2] = -1
        # Device state and scratch: record() writes only into these.
        self.step = torch.full((1,), -1, dtype=torch.int64, device=dev)  # begin_step() makes the first 0
        self.head = z(1, dtype=torch.int64)
        self._sel, self._pos, self._t1, self._t2 = (z(1, dtype=torch.int64) for _ in range(4))
        self._b1, self._b2 = z(1, dtype=torch.bool), z(1, dtype=torch.bool)
        self._meta_row = z(1, 4, dtype=torch.int64)
        self._idx_scratch, self._rows_scratch = z(self.K_cap, dtype=torch.int32), z(self.K_cap, self.d_qk)
        self._steps_range, self._steps_table = None, None
        if isinstance(steps, range):
            if steps.step < 1:
                raise ValueError(f"vattn.torch Recorder: steps: a range must count up (got {steps})")
            self._steps_range = (steps.start, steps.stop, steps.step)
        elif steps is not None:
            chosen = sorted({int(s) for s in steps})
            if chosen and (chosen[0] < 0 or chosen[-1] >= MAX_STEP_TABLE):
                raise ValueError(f"vattn.torch Recorder: steps must lie in [0, {MAX_STEP_TABLE}) (got {chosen[0]}.."
                                 f"{chosen[-1]}); use a range for far steps")
            table = torch.zeros(max(chosen[-1] + 1, 1) if chosen else 1, dtype=torch.bool)
            table[chosen] = True
            self._steps_table = table.to(dev)
        self._steps = steps
        self._sites, self._site_ids = [], {}
        self._drained = 0
        self._closed = False
        self._queue = queue.Queue(maxsize=queue_size)
        self._writer = None
        if start_writer:
            self._writer = threading.Thread(target=self._write_loop, name="vattn-recorder-writer", daemon=True)
            self._writer.start()

    @classmethod
    def for_plan(cls, plan, out_dir, **options):
        """A recorder sized from a vattn.torch Plan's limits and the revision's d_qk/d_v."""
        lim = plan.limit_dict()
        lim.pop("max_splits")
        options.setdefault("device", plan.device)
        options.setdefault("description", f"vattn {plan.revision} ({plan.path}), through vattn.torch")
        return cls(out_dir, d_qk=plan.d_qk, d_v=plan.d_v, **lim, **options)

    @property
    def slot_bytes(self):
        """Device bytes of one ring slot (the recorder holds slots + 1 of them, plus one slot's
        worth of gather scratch)."""
        return sum(t[0].numel() * t.element_size() for t in (self.q_s, self.draft_s, self.out_s, self.lse_s, self.qo_s,
                                                              self.kvp_s, self.mwi_s, self.idx_s, self.rows_s,
                                                              self.mask_s, self.meta_s))

    # ---- selection ------------------------------------------------------------------------------
    def selects(self, step, layer):
        """Whether a replay at `step` keeps the call of `layer` (the host's copy of the device rule)."""
        if self.layers is not None and layer not in self.layers:
            return False
        if self._steps_range is not None:
            a, b, s = self._steps_range
            if not (a <= step < b and (step - a) % s == 0):
                return False
        elif self._steps is not None and step not in {int(x) for x in self._steps}:
            return False
        return self.threshold >= 2 ** 32 or selection_hash(step, layer, self.seed) < self.threshold

    def begin_step(self):
        """Adds 1 to the device step counter (graph-safe): call it once per forward, inside the
        captured region, before the recorded calls. The counter starts at -1."""
        self.step.add_(1)

    def set_step(self, step):
        """Sets the device step counter (enqueued on the current stream)."""
        self.step.fill_(int(step))

    def _select_on_device(self, layer):
        """self._sel = 1 when this call is kept, else 0; self._pos = its slot (N: discard)."""
        s, b1, b2, t1, t2 = self.step, self._b1, self._b2, self._t1, self._t2
        b1.fill_(True)
        if self._steps_range is not None:
            a, b, st = self._steps_range
            torch.ge(s, a, out=b2)
            b1.logical_and_(b2)
            torch.lt(s, b, out=b2)
            b1.logical_and_(b2)
            if st != 1:
                torch.sub(s, a, out=t1)
                t1.remainder_(st)
                torch.eq(t1, 0, out=b2)
                b1.logical_and_(b2)
        elif self._steps_table is not None:
            L = self._steps_table.shape[0]
            torch.clamp(s, 0, L - 1, out=t1)
            torch.index_select(self._steps_table, 0, t1, out=b2)
            b1.logical_and_(b2)
            torch.ge(s, 0, out=b2)
            b1.logical_and_(b2)
            torch.lt(s, L, out=b2)
            b1.logical_and_(b2)
        if self.threshold < 2 ** 32:
            torch.mul(s, 0x2545F491, out=t1)
            t1.add_((layer * 0x9E3779B1 + self.seed * 0x85EBCA6B) & M32)
            t1.bitwise_and_(M32)
            torch.bitwise_right_shift(t1, 16, out=t2)
            t1.bitwise_xor_(t2)
            t1.mul_(0x045D9F3B)
            t1.bitwise_and_(M32)
            torch.bitwise_right_shift(t1, 16, out=t2)
            t1.bitwise_xor_(t2)
            torch.lt(t1, self.threshold, out=b2)
            b1.logical_and_(b2)
        self._sel.copy_(b1)
        # pos = sel * (head % N) + (1 - sel) * N
        torch.remainder(self.head, self.N, out=self._pos)
        self._pos.mul_(self._sel)
        torch.mul(self._sel, -self.N, out=t1)
        t1.add_(self.N)
        self._pos.add_(t1)

    # ---- record (serving thread; graph-safe) -------------------------------------------------------
    def _site(self, site):
        i = self._site_ids.get(site)
        if i is None:
            if len(self._sites) >= self.max_sites:
                return None
            i = self._site_ids[site] = len(self._sites)
            self._sites.append(site)
        return i

    def _fits(self, q, kv_pool, kv_indices, kv_indptr, kv_draft, qo_indptr, mask_bits, mask_word_indptr, out, lse):
        """None when the call fits the slots, else why not (host metadata only)."""
        want = {"q": torch.bfloat16, "kv_pool": torch.bfloat16, "kv_draft": torch.bfloat16, "out": torch.bfloat16,
                "lse": torch.float32, "kv_indices": torch.int32, "kv_indptr": torch.int32, "qo_indptr": torch.int32,
                "mask_word_indptr": torch.int64}
        got = {"q": q, "kv_pool": kv_pool, "kv_draft": kv_draft, "out": out, "lse": lse, "kv_indices": kv_indices,
               "kv_indptr": kv_indptr, "qo_indptr": qo_indptr, "mask_word_indptr": mask_word_indptr,
               "mask_bits": mask_bits}
        for name, t in got.items():
            if name == "mask_bits":
                if t.dtype not in (torch.int32, torch.uint32):
                    return f"mask_bits: expected int32 or uint32, got {t.dtype}"
            elif t.dtype != want[name]:
                return f"{name}: expected {want[name]}, got {t.dtype}"
            if t.device != self.device:
                return f"{name} is on {t.device}, the recorder's slots on {self.device}"
        if q.dim() != 3 or q.shape[0] > self.nq_cap or q.shape[1] != self.H or q.shape[2] != self.d_qk:
            return f"q {tuple(q.shape)} does not fit the slots [<= {self.nq_cap}, {self.H}, {self.d_qk}]"
        n_q = q.shape[0]
        if tuple(out.shape) != (n_q, self.H, self.d_v) or tuple(lse.shape) != (n_q, self.H):
            return f"out {tuple(out.shape)} / lse {tuple(lse.shape)}: expected [{n_q}, {self.H}, {self.d_v}] / [{n_q}, {self.H}]"
        if kv_draft.numel() != n_q * self.d_qk or kv_pool.numel() % self.d_qk or kv_pool.numel() == 0:
            return f"kv_draft {tuple(kv_draft.shape)} / kv_pool {tuple(kv_pool.shape)}: not rows of {self.d_qk}"
        B = kv_indptr.numel() - 1
        if kv_indptr.dim() != 1 or not 1 <= B <= self.B_cap or qo_indptr.shape != kv_indptr.shape \
                or mask_word_indptr.shape != kv_indptr.shape:
            return (f"indptrs {tuple(kv_indptr.shape)}, {tuple(qo_indptr.shape)}, {tuple(mask_word_indptr.shape)}: "
                    f"expected [B+1] each with 1 <= B <= {self.B_cap}")
        if kv_indices.dim() != 1 or kv_indices.numel() < 1 or mask_bits.dim() != 1 or mask_bits.numel() < 1:
            return "kv_indices and mask_bits must be 1-D and non-empty"
        for name, t in got.items():
            if not t.is_contiguous():
                return f"{name} is not contiguous"
        return None

    def record(self, layer, q, kv_pool, kv_indices, kv_indptr, kv_draft, qo_indptr, mask_bits, mask_word_indptr, out,
               lse, sm_scale):
        """Enqueues the recording of one call (after the kernel, on the current stream). Returns
        False, enqueueing nothing, for a layer not chosen or a call the slots cannot hold (the
        latter counted and warned about now); True when the device work is enqueued (whether a
        replay keeps it is the device's decision)."""
        if self._closed or (self.layers is not None and layer not in self.layers):
            return False
        where = f"layer {layer}"
        why = self._fits(q, kv_pool, kv_indices, kv_indptr, kv_draft, qo_indptr, mask_bits, mask_word_indptr, out, lse)
        if why is not None:
            self.sink.skip("skipped_shape", where, why)
            return False
        n_q, B = int(q.shape[0]), int(kv_indptr.numel()) - 1
        n_slots = int(kv_pool.numel()) // self.d_qk
        K, M = min(int(kv_indices.numel()), self.K_cap), min(int(mask_bits.numel()), self.M_cap)
        site = _Site(int(layer), B, n_q, n_slots, K, M, float(np.float32(sm_scale)))
        sid = self._site(site)
        if sid is None:
            self.sink.skip("skipped_shape", where, f"more than max_sites = {self.max_sites} distinct call shapes")
            return False
        self._select_on_device(int(layer))
        pos = self._pos
        self.q_s[:, :n_q].index_copy_(0, pos, q.unsqueeze(0))
        self.draft_s[:, :n_q].index_copy_(0, pos, kv_draft.reshape(1, n_q, self.d_qk))
        self.out_s[:, :n_q].index_copy_(0, pos, out.unsqueeze(0))
        self.lse_s[:, :n_q].index_copy_(0, pos, lse.unsqueeze(0))
        self.qo_s[:, :B + 1].index_copy_(0, pos, qo_indptr.unsqueeze(0))
        self.kvp_s[:, :B + 1].index_copy_(0, pos, kv_indptr.unsqueeze(0))
        self.mwi_s[:, :B + 1].index_copy_(0, pos, mask_word_indptr.unsqueeze(0))
        # The rows kv_indices names, gathered now: the pool may be rewritten before drain().
        # Entries past kv_indptr[B] may hold anything: clamped, so the gather stays in the pool
        # (drain() checks the used entries against the pool).
        idx = self._idx_scratch[:K]
        torch.clamp(kv_indices[:K], 0, n_slots - 1, out=idx)
        torch.index_select(kv_pool.reshape(n_slots, self.d_qk), 0, idx, out=self._rows_scratch[:K])
        self.rows_s[:, :K].index_copy_(0, pos, self._rows_scratch[:K].unsqueeze(0))
        self.idx_s[:, :K].index_copy_(0, pos, kv_indices[:K].unsqueeze(0))
        self.mask_s[:, :M].index_copy_(0, pos, mask_bits[:M].view(torch.int32).unsqueeze(0))
        row = self._meta_row
        row[:, 0].copy_(self.step)
        row[:, 1].fill_(sid)
        row[:, 2].copy_(self.head)
        row[:, 3].fill_(1)
        self.meta_s.index_copy_(0, pos, row)
        self.head.add_(self._sel)
        self.sink.count("recorded")
        return True

    # ---- drain (host, after replays) ---------------------------------------------------------------
    def drain(self):
        """Hands the records kept since the last drain() to the writer; returns how many. One
        synchronisation (the head counter and the slots' index arrays); the data travels by
        asynchronous copies on the current stream, which must be the one the graph replays on."""
        head = int(self.head.item())
        meta, qo_all, kv_all, mwi_all = (t.cpu().numpy() for t in (self.meta_s, self.qo_s, self.kvp_s, self.mwi_s))
        lost = head - self._drained - self.N
        if lost > 0:
            self.sink.skip("skipped_overwritten", f"records {self._drained}..{self._drained + lost - 1}",
                           f"{lost} kept replay(s) overwritten in the ring before drain() (slots = {self.N}: drain "
                           "more often or give more slots)", n=lost)
        handed = 0
        for seq in range(max(self._drained, head - self.N), head):
            slot = seq % self.N
            step, sid, seen = (int(x) for x in meta[slot, :3])
            if seen != seq:  # cannot happen unless the device state was written by someone else
                self.sink.skip("skipped_overwritten", f"record {seq}", f"its slot holds record {seen}")
                continue
            site = self._sites[sid]
            where = f"step {step} layer {site.layer}"
            B = site.B
            qo, kv, mwi = (a[slot, :B + 1].astype(np.int64) for a in (qo_all, kv_all, mwi_all))
            why = self._unstorable(site, qo, kv, mwi)
            if why is not None:
                self.sink.skip(why[0], where, why[1])
                continue
            n_q, P, W = int(qo[-1]), int(kv[-1]), int(mwi[-1])
            T = np.diff(qo)
            est = FILE_OVERHEAD + 2 * n_q * self.d_qk * (self.H + 1) + n_q * self.H * (2 * self.d_v + 4) \
                + P * (2 * self.d_qk + 12) + int((T * T).sum()) + 3 * 8 * (B + 1)
            if not self.sink.reserve(where, est):
                continue
            pin = self.device.type == "cuda"

            def stage(src, pin=pin):
                dst = torch.empty(src.shape, dtype=src.dtype, pin_memory=pin)
                dst.copy_(src, non_blocking=pin)
                return dst

            host = {"q": stage(self.q_s[slot, :n_q]), "draft": stage(self.draft_s[slot, :n_q]),
                    "out": stage(self.out_s[slot, :n_q]), "lse": stage(self.lse_s[slot, :n_q]),
                    "idx": stage(self.idx_s[slot, :P]), "rows": stage(self.rows_s[slot, :P]),
                    "mask": stage(self.mask_s[slot, :W])}
            job = _Job(seq, step, site, qo, kv, mwi, host, est)
            if pin:
                job.ready = torch.cuda.Event()
                job.ready.record()
            try:
                self._queue.put_nowait(job)
            except queue.Full:
                self.sink.release(est)
                self.sink.skip("skipped_queue_full", where, f"the writer's queue is full ({self._queue.maxsize} records)")
                continue
            handed += 1
        self._drained = head
        self.sink.count("drained", handed)
        return handed

    def _unstorable(self, site, qo, kv, mwi):
        """(counter, reason) when a kept record cannot be a case, from its index arrays."""
        for name, a in (("qo_indptr", qo), ("kv_indptr", kv), ("mask_word_indptr", mwi)):
            if a[0] != 0 or (np.diff(a) < 0).any():
                return ("skipped_invalid",
                        f"{name} {a.tolist()[:9]} does not start at 0 or decreases (the kernel flags VATTN_DEVERR_INDPTR)")
        if (np.diff(qo) < 1).any():
            return "skipped_invalid", "a request with no drafts (T_b = 0; the kernel flags VATTN_DEVERR_INDPTR)"
        if qo[-1] > site.n_q:
            return "skipped_invalid", f"qo_indptr[B] = {int(qo[-1])} is over the call's {site.n_q} rows of q"
        if kv[-1] > site.K:
            held = "max_kv_tokens" if site.K == self.K_cap else "the entries kv_indices had"
            return "skipped_kv_cap", f"the prefixes hold {int(kv[-1])} tokens; the slot holds {site.K} ({held})"
        if mwi[-1] > site.M:
            return "skipped_invalid", f"mask_word_indptr[B] = {int(mwi[-1])} words, the call passed {site.M}"
        return None

    # ---- the writer ------------------------------------------------------------------------------------
    def _handle(self, job):
        self._write_one(job)

    def write_pending(self):
        """Writes what drain() queued, on the calling thread (for start_writer=False)."""
        self._handle_queued()

    def _write_one(self, job):
        site = job.site
        where = f"step {job.step} layer {site.layer}"
        try:
            if job.ready is not None:
                job.ready.synchronize()
            h = job.host
            idx = h["idx"].numpy().astype(np.int64)
            bad = np.nonzero((idx < 0) | (idx >= site.n_slots))[0]
            if bad.size:
                raise ValueError(f"kv_indices entry {int(bad[0])} = {int(idx[bad[0]])} is outside the pool "
                                 f"({site.n_slots} rows; the kernel flags VATTN_DEVERR_KV_INDEX)")
            n_q = int(job.qo[-1])
            out = Output(self.producer, self.description, _bits(h["out"]).reshape(n_q, self.H, self.d_v),
                         h["lse"].numpy().astype(np.float32).reshape(n_q, self.H))
            name = f"step{job.step:06d}_layer{site.layer:02d}"
            case = case_from_abi(name, site.sm_scale, _bits(h["q"]), _bits(h["rows"]), idx, job.kv, _bits(h["draft"]),
                                 job.qo, h["mask"].numpy(), job.mwi, [out],
                                 {"layer": site.layer, "step": job.step, "tp_rank": self.tp_rank}, d_v=self.d_v)
        except (ValueError, CaseFileError) as e:
            self.sink.release(job.est)
            self.sink.skip("skipped_invalid", where, str(e))
            return
        except Exception as e:  # a device error surfacing at the copy: counted, the writer goes on
            self.sink.release(job.est)
            self.sink.skip("write_failed", where, f"{type(e).__name__}: {e}")
            return
        self.sink.write(f"{name}_tp{self.tp_rank}", case, job.est, where)

    # ---- the end -------------------------------------------------------------------------------------
    def stats(self):
        return dict(self.sink.stats(), queued=self._queue.qsize(), sites=len(self._sites))

    def close(self, timeout=None):
        """Stops recording, drains what the ring holds, writes everything and returns the stats."""
        if not self._closed:
            self._closed = True
            self.drain()
            self._finish_queue(timeout)
        return self.stats()
