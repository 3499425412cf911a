# SPDX-License-Identifier: Apache-2.0
"""Shadow mode: on a sampled fraction of live calls, a second computation beside the serving
kernel, compared on the GPU under the tolerance model; every disagreement becomes a case file
with both outputs, for `vattn replay`.

    shadow = Shadow("shadow/", second="reference", sample_rate=0.01)   # or "split-v1", a .so
    plan = vattn.torch.Plan("split-v2", ..., shadow=shadow)
    ... plan.run(..., layer=i) ...      # every call is offered; about 1 in 100 is checked
    print(shadow.close())               # calls, fired, agreed, disagreed, written, skips

second = "reference": float64 torch ops on the GPU (torch_tolerance.reference(), vattn's
contract with its own index code) and the serving result judged by the tolerance model itself
(judge_reference). second = a revision (in-tree name or library path): that revision runs on the
same inputs with its own plan and workspace, and the two results are held to the peer bound
(judge_peer: sound, looser; torch_tolerance's docstring says what it catches).

When a call does not fire, observe() costs one random draw and a counter (measured by
bench_idle(), `python3 -m vattn.shadow --bench-idle`). When it fires, the serving thread reads
the call's index arrays (one synchronisation), enqueues the second computation, the comparison
and device copies of the call, and records an event; a writer thread waits for the event, reads
the verdict and writes the case only when it disagrees (capture_sink.py: unique names, caps,
warnings). Shadow mode runs on eager calls: a call observed while a CUDA graph is being captured
is not shadowed (counted as skipped_in_graph and warned about), because anything enqueued then
would run at every replay; in graphs, record with graph_recorder.Recorder and replay the files.
"""

import dataclasses
import queue
import random
import sys
import threading
import time
import warnings

import numpy as np
import torch

from . import __version__, torch_tolerance
from .abi_case import case_from_abi
from .capture_sink import CaptureWarning, CaseSink, QueuedWriter, case_bytes
from .casefile import CaseFileError, Output

REFERENCE = "reference"
REFERENCE_PRODUCER = "reference_torch_fp64"


@dataclasses.dataclass
class _Fired:  # one fired call on its way to the writer (device tensors until `ready`)
    call: int
    layer: int
    sm_scale: float
    ix: object
    tensors: dict
    verdict: torch.Tensor
    label: str
    est: int
    ready: object = None


def _bits(t):
    return t.detach().cpu().contiguous().view(torch.int16).numpy().view(np.uint16)


class Shadow(QueuedWriter):
    """See the module docstring. layers: None or the layers to shadow; sample_rate in [0, 1];
    seed: the sampler's (random.Random) seed; tol: torch_tolerance.Tolerance. The caps and the
    header fields are the capture hook's; the files' source is "capture:shadow"."""

    def __init__(self, out_dir, second=REFERENCE, *, sample_rate=0.01, seed=0, revision_dir=None, layers=None,
                 tol=None, max_case_bytes=256 << 20, max_total_bytes=4 << 30, queue_size=4, model="", gpu="", tp_rank=0,
                 notes="", generator="", start_writer=True):
        if not 0.0 <= float(sample_rate) <= 1.0:
            raise ValueError(f"vattn.shadow: sample_rate must be in [0, 1] (got {sample_rate!r})")
        self.second, self.revision_dir = second, revision_dir
        self.sample_rate = float(sample_rate)
        self.layers = None if layers is None else {int(x) for x in layers}
        self.tol = tol or torch_tolerance.Tolerance()
        self.tp_rank = int(tp_rank)
        self._draw = random.Random(seed).random
        self.sink = CaseSink(out_dir, "vattn.shadow", "capture:shadow", generator or f"vattn.shadow {__version__}",
                             max_case_bytes, max_total_bytes, model=model, gpu=gpu, notes=notes,
                             counters=("calls", "fired", "agreed", "disagreed", "skipped_in_graph", "skipped_invalid",
                                       "skipped_queue_full"))
        self.plan = self.second_plan = None
        self._calls = 0
        self._closed = False
        self._queue = queue.Queue(maxsize=queue_size)
        self._writer = None
        if start_writer:
            self._writer = threading.Thread(target=self._write_loop, name="vattn-shadow-writer", daemon=True)
            self._writer.start()

    def bind(self, plan):
        """Called by Plan(shadow=...): plans the second revision with the same limits."""
        from .torch_op import Plan

        self.plan = plan
        if self.second != REFERENCE:
            self.second_plan = Plan(self.second, device=plan.device, revision_dir=self.revision_dir, **plan.limit_dict())
            self.second_label = f"kernel:{self.second_plan.revision}"
            self._out2, self._lse2 = self.second_plan.empty_outputs()
        else:
            self.second_label = REFERENCE_PRODUCER

    # ---- the serving thread --------------------------------------------------------------------------
    def observe(self, plan, layer, q, kv_pool, kv_indices, kv_indptr, kv_draft, qo_indptr, mask_bits, mask_word_indptr,
                out, lse, sm_scale, forced_splits=None):
        """Offered every call after the serving kernel was enqueued. True when this call fired."""
        self._calls += 1
        if self._closed or self.sample_rate == 0.0 or (self.layers is not None and layer not in self.layers) \
                or self._draw() >= self.sample_rate:
            return False
        where = f"call {self._calls} layer {layer}"
        if torch.cuda.is_available() and torch.cuda.is_current_stream_capturing():
            self.sink.skip("skipped_in_graph", where, "shadow mode runs on eager calls (what it enqueued now would run "
                                                      "at every replay); record graphs with Recorder")
            return False
        if self.plan is None:
            self.bind(plan)
        self.sink.count("fired")
        try:
            return self._fire(where, layer, q, kv_pool, kv_indices, kv_indptr, kv_draft, qo_indptr, mask_bits,
                              mask_word_indptr, out, lse, sm_scale, forced_splits)
        except (ValueError, CaseFileError) as e:
            self.sink.skip("skipped_invalid", where, str(e))
            return False

    def _fire(self, where, layer, q, kv_pool, kv_indices, kv_indptr, kv_draft, qo_indptr, mask_bits, mask_word_indptr,
              out, lse, sm_scale, forced_splits):
        ix = torch_tolerance.HostIndex.of(kv_indices, kv_indptr, qo_indptr, mask_bits, mask_word_indptr)
        n_q = int(ix.qo[-1])
        d_qk, d_v = int(q.shape[-1]), int(out.shape[-1])
        n_slots = kv_pool.numel() // d_qk
        bad = np.nonzero((ix.kv_indices < 0) | (ix.kv_indices >= n_slots))[0]
        if bad.size:
            raise ValueError(f"kv_indices entry {int(bad[0])} = {int(ix.kv_indices[bad[0]])} is outside the pool "
                             f"({n_slots} rows; the kernel flags VATTN_DEVERR_KV_INDEX)")
        if n_q > q.shape[0] or (np.diff(ix.qo) < 1).any():
            raise ValueError(f"qo_indptr {ix.qo.tolist()[:9]}: a request without drafts or more rows than q's "
                             f"{q.shape[0]}")
        sm32 = float(np.float32(sm_scale))  # what the kernel computed with
        if self.second_plan is not None:
            o2, l2 = self._out2[:q.shape[0]], self._lse2[:q.shape[0]]
            self.second_plan.run(q, kv_pool, kv_indices, kv_indptr, kv_draft, qo_indptr, mask_bits, mask_word_indptr,
                                 sm32, out=o2, lse=l2, forced_splits=forced_splits)
            bounds = torch_tolerance.peer_bounds(q, kv_pool, kv_draft, ix, sm32, d_v)
            verdict = torch_tolerance.judge_peer(out[:n_q], lse[:n_q], o2[:n_q], l2[:n_q], bounds, d_qk, self.tol)
            second_out, second_lse = o2[:n_q].clone(), l2[:n_q].clone()
        else:
            ref = torch_tolerance.reference(q, kv_pool, kv_draft, ix, sm32, d_v)
            verdict = torch_tolerance.judge_reference(out[:n_q], lse[:n_q], ref, d_qk, self.tol)
            second_out, second_lse = ref.out.to(torch.bfloat16), ref.lse.float()
        rows = kv_pool.reshape(-1, d_qk).index_select(0, torch.as_tensor(ix.kv_indices, device=kv_pool.device))
        tensors = {"q": q[:n_q].clone(), "rows": rows, "draft": kv_draft.reshape(-1, d_qk)[:n_q].clone(),
                   "out": out[:n_q].clone(), "lse": lse[:n_q].clone(), "out2": second_out, "lse2": second_lse}
        H = int(q.shape[1])
        T = np.diff(ix.qo)
        est = 64 * 1024 + n_q * H * (2 * d_qk + 2 * 2 * d_v + 2 * 4) + 2 * n_q * d_qk \
            + rows.shape[0] * (2 * d_qk + 12) + int((T * T).sum()) + 24 * len(ix.qo)
        if not self.sink.reserve(where, est):
            return False
        job = _Fired(self._calls, int(layer), sm32, ix, tensors, verdict, self.second_label, est)
        if q.is_cuda:
            job.ready = torch.cuda.Event()
            job.ready.record()
        try:
            self._queue.put_nowait(job)
        except queue.Full:
            self.sink.release(est)
            self.sink.skip("skipped_queue_full", where, f"the writer's queue is full ({self._queue.maxsize} calls)")
            return False
        return True

    # ---- the writer --------------------------------------------------------------------------------------
    def _handle(self, job):
        self._judge_one(job)

    def write_pending(self):
        """Judges and writes what is queued, on the calling thread (for start_writer=False)."""
        self._handle_queued()

    def _judge_one(self, job):
        where = f"call {job.call} layer {job.layer}"
        try:
            if job.ready is not None:
                job.ready.synchronize()
            serving = self.plan.revision if self.plan is not None else "serving"
            line = torch_tolerance.describe(job.verdict, f"{serving} vs {job.label}")
            flags = int(job.verdict[0].item())
        except Exception as e:  # a device error surfacing here: counted, the writer goes on
            self.sink.release(job.est)
            self.sink.skip("write_failed", where, f"{type(e).__name__}: {e}")
            return
        if flags == 0:
            self.sink.release(job.est)
            self.sink.count("agreed")
            return
        self.sink.count("disagreed")
        t, ix = job.tensors, job.ix
        n_q, H = int(t["q"].shape[0]), int(t["q"].shape[1])
        try:
            outputs = [Output("serving", f"vattn {serving} through vattn.torch (the serving kernel)", _bits(t["out"]),
                              t["lse"].cpu().numpy().astype(np.float32).reshape(n_q, H)),
                       Output(job.label, self._second_description(), _bits(t["out2"]),
                              t["lse2"].cpu().numpy().astype(np.float32).reshape(n_q, H))]
            case = case_from_abi(f"call{job.call:09d}_layer{job.layer:02d}", job.sm_scale, _bits(t["q"]), _bits(t["rows"]),
                                 ix.kv_indices, ix.kv, _bits(t["draft"]), ix.qo, ix.mask_bits, ix.mwi, outputs,
                                 {"layer": job.layer, "tp_rank": self.tp_rank}, d_v=int(t["out"].shape[-1]))
            est = max(job.est, case_bytes(case))
        except (ValueError, CaseFileError) as e:
            self.sink.release(job.est)
            self.sink.skip("skipped_invalid", where, str(e))
            return
        path = self.sink.write(f"{case.name}_tp{self.tp_rank}", case, est, where, notes=line)
        if path is not None:
            warnings.warn(f"vattn.shadow: {where}: {line}; written to {path}", CaptureWarning, stacklevel=2)

    def _second_description(self):
        if self.second_plan is not None:
            return f"vattn {self.second_plan.revision} ({self.second_plan.path}), shadowing the serving kernel"
        return ("float64 torch reference of the verify-attention contract on the GPU (vattn.torch_tolerance.reference), "
                "rounded to bf16")

    # ---- the end ---------------------------------------------------------------------------------------------
    def stats(self):
        return dict(self.sink.stats(), calls=self._calls, queued=self._queue.qsize())

    def close(self, timeout=None):
        """Stops shadowing, judges and writes what is queued, returns the stats."""
        self._closed = True
        self._finish_queue(timeout)
        return self.stats()


def bench_idle(iters=200000, repeats=5):
    """The cost of observe() on a call that does not fire (sample_rate 0, and 1e-9 so that the
    random draw runs), against a plain method call; seconds per call, best of `repeats`. Host
    time only: observe() enqueues nothing on the device when it does not fire."""
    import tempfile

    class _Null:
        def observe(self, *a, **k):
            return False

    args = (None, 0) + (None,) * 10
    results = {}
    with tempfile.TemporaryDirectory() as d:
        for label, rate in (("sample_rate=0", 0.0), ("sample_rate=1e-9", 1e-9)):
            s = Shadow(d, sample_rate=rate, start_writer=False)
            results[label] = _best(lambda s=s: s.observe(*args, sm_scale=1.0), iters, repeats)
            s.close()
    null = _Null()
    results["plain method call"] = _best(lambda: null.observe(*args, sm_scale=1.0), iters, repeats)
    return results


def _best(fn, iters, repeats):
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        best = min(best, (time.perf_counter() - t0) / iters)
    return best


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv != ["--bench-idle"]:
        print("usage: python3 -m vattn.shadow --bench-idle\n\nPrints what shadow mode costs a call that does not fire "
              "(host time per observe()); scripts/device/torch_op_check.py measures it around real kernel calls.",
              file=sys.stderr if argv not in (["-h"], ["--help"]) else sys.stdout)
        return 0 if argv in (["-h"], ["--help"]) else 2
    for label, sec in bench_idle().items():
        print(f"shadow idle cost: {label:18s} {sec * 1e9:8.1f} ns per call", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
