#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""peers/bench_peers.py: serving kernels next to vattn's, on the shapes of `vattn bench`.

Times, under CUDA-graph replay, FlashInfer's MLA (fa2 in the device's own shared-memory
configuration, fa2 held to sm_120's, fa3; from libvattn_flashinfer_mla.so) and SGLang's Triton
target_verify kernel (extend_attention_fwd, from the files vattn.sglang_files extracts), on
vattn bench's verify shapes: H=8, d_qk 576, d_v 512, P x B x T (T <= 16: a chain, else a random
tree), scattered KV slots, inputs rotated through copies that defeat the L2 (256 MB, at most 32,
as vattn/gpu/bench.cpp does). In the same run it calls `vattn bench --json` for each --kernel
revision and prints one table: each kernel's graph-replay time (median of --reps single replays
after --warmup, CUDA events, as vattn bench times graph_us) and its share of the roofline
vattn bench measured (max(bytes / copy GB/s, flops / mma.sync TFLOP/s): the same ceilings for
all), and each peer's time over each revision's (split-v2, the shipped one, by default). A second
table gives the same replays queued behind a --gate-us spin kernel, as vattn bench times queued_us: GPU time
alone, without the host's graph-launch latency. With --revision-lib, vattn revision libraries
run in the same loop as the peers (same tensors, same replays, vattn.revision_lib), so a
revision and a peer are compared without two harnesses in between; with --accuracy each
kernel's output is judged against a float64 reference in bf16 ulps (a third table).

FlashInfer has no tree mask: on tree rows it is timed with its causal mask over the same keys
(the same work, another mask); the table says so. Every kernel reads the same bytes (KV rows of
576, q, out) and writes out and lse. SGLang's kernel takes the tree mask, as in serving.

Runs on the GPU machine (torch, triton, a CUDA device); the full table takes about 1-2 minutes
on an H200. Exit 0 when every selected peer ran every shape and vattn bench ran; 1 when a peer
failed on a shape or is not available, or no --kernel revision could be timed (one of several
not available is only reported); 2 usage.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
D_QK, D_V = 576, 512
ROTATE_BYTES, MAX_SETS = 256e6, 32  # vattn/gpu/bench.cpp: kRotateBytes, kMaxSets
SM_SCALE = 0.1446796
PEERS = ("fa2", "fa2-sm120", "fa3", "sglang")
SHORT = {"split-v1": "v1", "split-v2": "v2", "split-v1.so": "v1.so", "split-v2.so": "v2.so"}


def int_list(text):
    try:
        vals = [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a comma-separated list of whole numbers") from None
    if not vals or min(vals) < 0:
        raise argparse.ArgumentTypeError(f"'{text}': needs values >= 0")
    return vals


def peer_list(text):
    if text == "none":
        return []
    vals = text.split(",")
    bad = [v for v in vals if v not in PEERS]
    if bad:
        raise argparse.ArgumentTypeError(f"unknown peer '{bad[0]}' (peers: {', '.join(PEERS)}, or none)")
    return list(dict.fromkeys(vals))


def parse_args(argv):
    doc = __doc__.split("\n\n")
    ap = argparse.ArgumentParser(prog="bench_peers.py", description="\n\n".join(doc[1:3]),
                                 epilog="\n\n".join(doc[3:]) + "\n\nexample (a quick run):\n  python3 peers/bench_peers.py "
                                 "--prefix 16384 --batch 1 --drafts 16 --peers fa2,sglang --reps 10",
                                 formatter_class=argparse.RawDescriptionHelpFormatter)

    def dev(*p):
        return os.path.join(ROOT, ".device", *p)

    ap.add_argument("--vattn", default=dev("build", "vattn"), metavar="PATH", help="the vattn binary (default: %(default)s)")
    ap.add_argument("--kernel", action="append", metavar="REV",
                    help="kernel revisions for `vattn bench --kernel` (repeat, or a comma list; default: split-v2); "
                         "the first one timed gives the roofline; one not available is reported")
    ap.add_argument("--no-vattn", action="store_true", help="do not run vattn bench (no roofline, no ratios)")
    ap.add_argument("--peers", type=peer_list, default=list(PEERS), metavar="LIST",
                    help=f"peers to time: {','.join(PEERS)} or none (default: all)")
    ap.add_argument("--flashinfer-lib", default=dev("flashinfer", "libvattn_flashinfer_mla.so"), metavar="LIB",
                    help="libvattn_flashinfer_mla.so (peers/build_flashinfer.sh; default: %(default)s)")
    ap.add_argument("--sglang-files", default=dev("sglang-files"), metavar="DIR",
                    help="SGLang's kernel files (python3 -m vattn.sglang_files extract WHEEL DIR; default: %(default)s)")
    ap.add_argument("--revision-lib", action="append", default=[], metavar="LIB",
                    help="a vattn revision library (BUILD/revisions/libvattn_rev_*.so; repeat for more) to time in this "
                         "loop like a peer, on the same tensors and replays as FlashInfer (vattn.revision_lib); its "
                         "column is NAME.so and the peers get ratios over it too")
    ap.add_argument("--accuracy", action="store_true",
                    help="also judge each kernel's output on copy 0's inputs against a float64 reference of its mask "
                         "(torch on the GPU), in bf16 ulps: the share of elements misrounded (over half an ulp), the "
                         "mean and the largest error; printed as a third table")
    ap.add_argument("--max-splits", type=int, default=128, metavar="N",
                    help="the plan limit max_splits of each --revision-lib (default: 128, as vattn bench)")
    ap.add_argument("--prefix", type=int_list, default=[4096, 16384, 65536, 91000, 131072], metavar="LIST",
                    help="prefix lengths P (default: 4096,16384,65536,91000,131072)")
    ap.add_argument("--batch", type=int_list, default=[1, 8], metavar="LIST", help="batch sizes B (default: 1,8)")
    ap.add_argument("--drafts", type=int_list, default=[16, 64], metavar="LIST",
                    help="drafts per request T (<= 16: chain, else random tree; default: 16,64)")
    ap.add_argument("--heads", type=int, default=8, help="query heads H (default: 8)")
    ap.add_argument("--reps", type=int, default=20, help="timed replays per kernel and shape (default: 20)")
    ap.add_argument("--warmup", type=int, default=5, help="replays before timing (default: 5)")
    ap.add_argument("--rounds", type=int, default=1, metavar="N",
                    help="time every peer N times a shape, the order reversed every other round; the medians are "
                         "over all N x --reps replays (default: 1)")
    ap.add_argument("--gate-us", type=int, default=200, metavar="US",
                    help="length of the spin kernel the queued replays wait behind (default: 200, as vattn bench)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the first shape (default: 1)")
    ap.add_argument("--json", metavar="FILE", help="also write the results as JSON (schema vattn-peers-bench 1)")
    ap.add_argument("--list", action="store_true", help="print the shapes and kernels that would run, and exit")
    a = ap.parse_args(argv)
    if (min(a.batch) < 1 or min(a.drafts) < 1 or a.heads < 1 or a.reps < 1 or a.warmup < 0 or a.gate_us < 1
            or a.max_splits < 1 or a.rounds < 1):
        ap.error("--batch, --drafts, --heads, --reps, --rounds, --gate-us and --max-splits need values >= 1, "
                 "--warmup >= 0")
    if a.no_vattn and a.kernel:
        ap.error("--kernel and --no-vattn exclude each other")
    kernels = [k for arg in (a.kernel or ["split-v2"]) for k in arg.split(",") if k]
    a.kernel = [] if a.no_vattn else list(dict.fromkeys(kernels))
    return a


def shapes(a):
    """(batch, drafts, tree, prefix) in vattn bench's order."""
    return [(b, t, "chain" if t <= 16 else "random", p) for b in a.batch for t in a.drafts for p in a.prefix]


def work(b, t, p, h):
    """vattn bench's unique bytes (KV rows + q in, out + lse out) and flops."""
    n_q = b * t
    return ((b * p + n_q) * D_QK * 2 + n_q * h * (D_QK * 2 + D_V * 2 + 4), b * t * h * (p + t) * 2 * (D_QK + D_V))


# ---------------------------------------------------------------------------- vattn bench

def run_vattn_bench(a, kernels):
    """One `vattn bench --kernel K1,K2,..`: (report dict, None) or (None, why not)."""
    if not os.access(a.vattn, os.X_OK):
        return None, f"no vattn binary at {a.vattn}"
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bench.json")
        cmd = [a.vattn, "bench", "--kernel", ",".join(kernels), "--json", path, "--reps", str(a.reps),
               "--prefix", ",".join(map(str, a.prefix)), "--batch", ",".join(map(str, a.batch)),
               "--drafts", ",".join(map(str, a.drafts))]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=150 * len(kernels))
        except subprocess.TimeoutExpired:
            return None, f"vattn bench ran past {150 * len(kernels)} s"
        if p.returncode != 0 or not os.path.exists(path):
            lines = [l for l in (p.stderr + p.stdout).splitlines() if l.strip()]
            return None, f"vattn bench exit {p.returncode}: {lines[-1] if lines else 'no output'}"
        with open(path) as f:
            return json.load(f), None


def vattn_bench(a, rep):
    """Times a.kernel with vattn bench: all in one run (vattn bench 2 takes a list, times them on
    the same inputs against the same ceilings), else one run each (a vattn without lists, or a
    revision not available: that one is reported). Returns {(batch, drafts, prefix): {kernel: case}}."""
    reports = []
    r, why = run_vattn_bench(a, a.kernel)
    if r is not None:
        reports.append(r)
    elif len(a.kernel) == 1:
        rep["unavailable"][a.kernel[0]] = why
    else:
        for k in a.kernel:
            r, why = run_vattn_bench(a, [k])
            if r is not None:
                reports.append(r)
            else:
                rep["unavailable"][k] = why
    rows = {}
    for r in reports:
        names = r.get("kernels") or [r["kernel"]]
        rep["vattn_kernels"] += [k for k in names if k not in rep["vattn_kernels"]]
        rep["device"] = f"{r['device']} ({r['sms']} SMs)"
        if rep["roofline_from"] is None:
            rep.update(roofline_from=names[0], copy_gbps=r["copy_gbps"], mma_tflops=r["mma_tflops"])
        for c in r["cases"]:
            rows.setdefault((c["batch"], c["drafts"], c["prefix"]), {})[c.get("kernel", r["kernel"])] = c
    for k in rep["vattn_kernels"]:
        print(f"bench_peers: vattn bench --kernel {k}: {sum(k in v for v in rows.values())} shapes", flush=True)
    for k, why in rep["unavailable"].items():
        print(f"bench_peers: vattn bench --kernel {k}: not available: {why}", flush=True)
    return rows


# ---------------------------------------------------------------------------- inputs

def tree_mask(np, tree, t, rng):
    """T x T ancestor-or-self mask: a chain, or a random tree (node i's parent uniform in 0..i-1)."""
    parent = [-1] + [i - 1 if tree == "chain" else int(rng.integers(0, i)) for i in range(1, t)]
    m = np.zeros((t, t), bool)
    for i in range(t):
        if parent[i] >= 0:
            m[i] = m[parent[i]]
        m[i, i] = True
    return m


class Inputs:
    """One shape's tensors. A pool of `sets` copies of the shape's keys (B x (P + T) rows of 576 per
    copy); copy s lists its keys as a random permutation of its own slot range, request b owning
    keys b*(P+T) .. (b+1)*(P+T)-1, its last T the drafts'. FlashInfer reads all P + T from the pool;
    SGLang reads the first P from the pool and the drafts from k_extend, the draft rows of copy 0."""

    def __init__(self, torch, np, b, t, tree, p, h, seed):
        dev, bf16 = "cuda", torch.bfloat16
        self.b, self.t, self.tree, self.p, self.h = b, t, tree, p, h
        self.n_q = n_q = b * t
        self.sets = max(1, min(MAX_SETS, int(ROTATE_BYTES / max(b * p * D_QK * 2, 1))))
        per_set = b * (p + t)
        g = torch.Generator(device=dev)
        g.manual_seed(seed)
        self.pool = torch.empty((self.sets * per_set, 1, D_QK), dtype=bf16, device=dev).uniform_(-1, 1, generator=g)
        self.q = torch.empty((n_q, h, D_QK), dtype=bf16, device=dev).uniform_(-1, 1, generator=g)
        self.out = torch.empty((n_q, h, D_V), dtype=bf16, device=dev)
        self.lse = torch.empty((n_q, h), dtype=torch.float32, device=dev)
        self.fi_indices, self.prefix_indices = [], []
        for s in range(self.sets):
            perm = (torch.randperm(per_set, generator=g, device=dev) + s * per_set).view(b, p + t)
            self.fi_indices.append(perm.reshape(-1).to(torch.int32).contiguous())
            self.prefix_indices.append(perm[:, :p].reshape(-1).to(torch.int64).contiguous())
            if s == 0:
                self.k_extend = self.pool[perm[:, p:].reshape(-1)].contiguous()  # [n_q, 1, 576]
        self.qo_indptr = [i * t for i in range(b + 1)]
        self.fi_kv_indptr = [i * (p + t) for i in range(b + 1)]
        self.fi_kv_len = [p + t] * b
        m = tree_mask(np, tree, t, np.random.default_rng(seed))
        self.draft_mask = m
        full = np.concatenate([np.ones((t, p), bool), m], axis=1).ravel()
        self.mask = torch.from_numpy(np.tile(full, b)).to(dev)
        self.mask_indptr = torch.arange(b + 1, dtype=torch.int64, device=dev) * (t * (p + t))
        self.sgl_qo_indptr = torch.tensor(self.qo_indptr, dtype=torch.int32, device=dev)
        self.sgl_kv_indptr = torch.tensor([i * p for i in range(b + 1)], dtype=torch.int32, device=dev)


# ---------------------------------------------------------------------------- peers

class FlashInferPeer:
    def __init__(self, torch, lib, name, backend, smem):
        self.torch, self.lib, self.name, self.backend, self.smem = torch, lib, name, backend, smem
        self.mask = "causal"
        self.description = None  # from the first plan
        self.plan = None

    def prepare(self, x):
        self.plan = self.lib.plan(x.qo_indptr, x.fi_kv_indptr, x.fi_kv_len, x.h, backend=self.backend, causal=True,
                                  smem_limit=self.smem)
        cfg = self.plan.config
        if self.description is None:
            how = ("its only configuration" if self.backend == "fa3" else
                   f"configuration for {cfg['dispatch_smem']} B/SM" +
                   (", the device's own" if cfg["dispatch_smem"] == cfg["device_smem"] else ", sm_120's"))
            stages = f"{cfg['num_stages']} stage" + ("s" if cfg["num_stages"] != 1 else "")
            self.description = (f"{self.lib.description.split(' MLA ')[0]} MLA {self.backend}: {stages}, "
                                f"{cfg['tile_kv']}-key KV tiles, {cfg['smem_bytes']} B shared memory per CTA "
                                f"({how}); causal mask")
        kv = x.pool
        self.views = (x.q[..., :D_V], x.q[..., D_V:], kv[..., :D_V], kv[..., D_V:])

    def call(self, x, s):
        stream = self.torch.cuda.current_stream().cuda_stream
        self.plan.run(*self.views, x.fi_indices[s], x.out, x.lse, SM_SCALE, stream)

    def finish(self):
        if self.plan is not None:
            self.plan.close()
            self.plan = None


class SglangPeer:
    name, mask = "sglang", "tree"

    def __init__(self, torch, fwd, version):
        self.torch, self.fwd = torch, fwd
        self.description = f"SGLang {version} Triton extend_attention_fwd (target_verify), its custom (tree) mask"

    def prepare(self, x):
        kb = x.pool
        self.v_extend = x.k_extend[..., :D_V].contiguous()
        self.fixed = (kb, kb[..., :D_V], x.sgl_qo_indptr, x.sgl_kv_indptr)

    def call(self, x, s):
        kb, vb, qo, kvp = self.fixed
        self.fwd(x.q, x.k_extend, self.v_extend, x.out, kb, vb, qo, kvp, x.prefix_indices[s], x.mask, False,
                 x.mask_indptr, x.t, 1.0, 1.0, SM_SCALE, lse_extend=x.lse)

    def finish(self):
        self.fixed = self.v_extend = None


def pack_draft_mask(np, m, batch):
    """The ABI's packed draft mask (vattn_abi.h) for `batch` requests with the same T x T mask m:
    row i of a request is ceil(T / 32) words, bit j % 32 of word j / 32 set when draft i sees draft
    j. Returns (uint32 words, words a request)."""
    t = m.shape[0]
    words = (t + 31) // 32
    bits = np.zeros((t, words), np.uint32)
    for i, j in zip(*np.nonzero(m)):
        bits[i, j // 32] |= np.uint32(1 << (j % 32))
    return np.tile(bits.ravel(), batch), t * words


class RevisionPeer:
    """A vattn revision library run through vattn.revision_lib: the same tensors as the peers (q, the
    pool, copy s's prefix slots, copy 0's draft rows as kv_draft), the tree mask packed as the ABI
    wants it, limits of the shape itself, the kernel's own split choice (forced_splits 0)."""
    mask = "tree"

    def __init__(self, torch, lib, max_splits):
        self.torch, self.lib, self.max_splits = torch, lib, max_splits
        self.name = f"{lib.name}.so"
        self.description = (f"vattn revision {lib.name} from {lib.path}, run in this loop through vattn.revision_lib "
                            f"(limits of the shape, max_splits {max_splits}); the tree mask")
        self.ws = None

    def prepare(self, x):
        import numpy as np

        from vattn.revision_lib import Args, Limits

        torch, dev = self.torch, "cuda"
        self.limits = Limits(max_requests=x.b, max_total_drafts=x.n_q, max_drafts_per_request=x.t, num_heads=x.h,
                             max_splits=self.max_splits)
        self.ws_bytes = self.lib.workspace_size(self.limits)
        self.ws = torch.zeros(self.ws_bytes + 256, dtype=torch.uint8, device=dev)
        self.ws_off = -self.ws.data_ptr() % 256  # the ABI's 256-byte alignment, whatever the allocator gave
        bits, per_request = pack_draft_mask(np, x.draft_mask, x.b)
        self.bits = torch.from_numpy(bits.view(np.int32)).to(dev)
        self.word_indptr = torch.arange(x.b + 1, dtype=torch.int64, device=dev) * per_request
        self.kv_indptr = torch.tensor([i * x.p for i in range(x.b + 1)], dtype=torch.int32, device=dev)
        self.forced = torch.zeros(1, dtype=torch.int32, device=dev)
        self.indices = [ix.to(torch.int32).contiguous() for ix in x.prefix_indices]
        self.args = [Args(q=x.q.data_ptr(), kv_pool=x.pool.data_ptr(), n_slots=x.pool.shape[0],
                          kv_indices=self.indices[s].data_ptr(), kv_indptr=self.kv_indptr.data_ptr(),
                          kv_draft=x.k_extend.data_ptr(), qo_indptr=x.sgl_qo_indptr.data_ptr(),
                          mask_bits=self.bits.data_ptr(), mask_word_indptr=self.word_indptr.data_ptr(),
                          forced_splits=self.forced.data_ptr(), out=x.out.data_ptr(), lse=x.lse.data_ptr(),
                          num_requests=x.b, n_q=x.n_q, num_heads=x.h, d_qk=D_QK, d_v=D_V, sm_scale=SM_SCALE)
                     for s in range(x.sets)]

    def call(self, x, s):
        self.lib.run(self.args[s], self.limits, self.ws.data_ptr() + self.ws_off, self.ws_bytes,
                     self.torch.cuda.current_stream().cuda_stream)

    def check(self):
        """After a call has completed: the workspace's device error word (VATTN_DEVERR_*) must be 0."""
        word = int(self.ws[self.ws_off:self.ws_off + 4].cpu().numpy().view("<u4")[0])
        if word != 0:
            raise RuntimeError(f"the kernel's device error word is 0x{word:x} (vattn_abi.h: VATTN_DEVERR_*)")

    def finish(self):
        self.ws = self.args = self.indices = self.bits = None


def make_peers(a, torch):
    """(peers, {name: why not})."""
    peers, missing = [], {}
    fi = [p for p in a.peers if p != "sglang"]
    if fi:
        from vattn.flashinfer_lib import SM120_SMEM_PER_SM, FlashInferLibError, Library

        try:
            lib = Library(a.flashinfer_lib)
        except FlashInferLibError as e:
            lib, why = None, str(e)
        for name in fi:
            backend = "fa3" if name == "fa3" else "fa2"
            if lib is None:
                missing[name] = why
            elif backend not in lib.backends:
                missing[name] = f"{lib.path}: built without {backend}"
            else:
                peers.append(FlashInferPeer(torch, lib, name, backend, SM120_SMEM_PER_SM if name == "fa2-sm120" else 0))
    if a.revision_lib:
        from vattn.revision_lib import Library as RevisionLibrary
        from vattn.revision_lib import RevisionLibError

        for path in a.revision_lib:
            try:
                peer = RevisionPeer(torch, RevisionLibrary(path), a.max_splits)
            except RevisionLibError as e:
                missing[os.path.basename(path)] = str(e)
                continue
            # Two builds of one revision (a patched tree beside HEAD) share its name: the column
            # takes the file's name then, so that their replays never pool.
            if any(p.name == peer.name for p in peers):
                peer.name = f"{peer.name}:{os.path.basename(path)}"
            if any(p.name == peer.name for p in peers):
                missing[path] = "given twice"
                continue
            peers.append(peer)
    if "sglang" in a.peers:
        from vattn.sglang_files import SglangFilesError, load

        try:
            mod, version = load(a.sglang_files)
            peers.append(SglangPeer(torch, mod.extend_attention_fwd, version))
        except (SglangFilesError, ImportError) as e:
            missing["sglang"] = str(e)
    return peers, missing


def median(v):
    return sorted(v)[len(v) // 2]  # as vattn/gpu/bench.cpp


def gate_cycles(torch, stream, us):
    """Clock cycles for torch.cuda._sleep to spin about `us` microseconds on this device; None
    (no queued table) when this torch has no _sleep."""
    if not callable(getattr(torch.cuda, "_sleep", None)):
        return None
    probe = 1_000_000
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.cuda.stream(stream):
        torch.cuda._sleep(probe)  # the first launch pays for itself
        e0.record(stream)
        torch.cuda._sleep(probe)
        e1.record(stream)
        e1.synchronize()
    return max(1, int(probe * us / max(1e-3, e0.elapsed_time(e1) * 1e3)))


def time_peer(torch, peer, x, a, stream, gate):
    """Graph-replay and queued times in us, one a replay (queued: each replay behind a spin kernel
    of `gate` cycles, as vattn bench times queued_us; empty without a gate), and a float copy of
    copy 0's output (for the cross-check and the accuracy table)."""
    with torch.cuda.stream(stream):
        peer.prepare(x)
        # The tensors are shared by every peer: NaN first, so a kernel that leaves rows unwritten
        # fails the check below instead of passing on the previous peer's output.
        x.out.fill_(float("nan"))
        x.lse.fill_(float("nan"))
        peer.call(x, 0)  # eager first: Triton compiles here, errors surface here
        stream.synchronize()
        if hasattr(peer, "check"):
            peer.check()
        if not bool(torch.isfinite(x.out).all()):
            raise RuntimeError("non-finite output")
        out0 = x.out.float().clone()
        graphs = []
        for s in range(x.sets):
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, stream=stream):
                peer.call(x, s)
            graphs.append(g)
        for i in range(a.warmup):
            graphs[i % x.sets].replay()
        stream.synchronize()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        times, queued = [], []
        for i in range(a.reps if gate is None else 2 * a.reps):
            if i >= a.reps:
                torch.cuda._sleep(gate)  # the replay is enqueued while the stream is still busy
            e0.record(stream)
            graphs[i % x.sets].replay()
            e1.record(stream)
            e1.synchronize()
            (times if i < a.reps else queued).append(e0.elapsed_time(e1) * 1e3)
        del graphs
    return times, queued, out0


# ---------------------------------------------------------------------------- accuracy

def reference(torch, x, mask_kind):
    """float64 output [n_q, h, d_v] of copy 0's inputs (the keys FlashInfer reads: request b's P + T
    rows of fi_indices[0], its drafts last) under the draft mask (`tree`) or the causal one."""
    t, p = x.t, x.p
    m = x.draft_mask if mask_kind == "tree" else torch.ones(t, t).tril().bool().cpu().numpy()
    seen = torch.cat([torch.ones(t, p, dtype=torch.bool), torch.from_numpy(m)], dim=1).to("cuda")[:, None, :]
    out = torch.empty((x.n_q, x.h, D_V), dtype=torch.float64, device="cuda")
    for b in range(x.b):
        rows = x.fi_indices[0][b * (p + t):(b + 1) * (p + t)].long()
        k = x.pool[rows, 0].double()                          # [P + T, d_qk]
        q = x.q[b * t:(b + 1) * t].double()                   # [T, H, d_qk]
        s = torch.einsum("thd,kd->thk", q, k) * SM_SCALE      # natural-log logits, as the kernels use sm_scale
        s.masked_fill_(~seen, float("-inf"))
        out[b * t:(b + 1) * t] = torch.einsum("thk,kd->thd", torch.softmax(s, dim=-1), k[:, :D_V])
        del k, q, s
    return out


def bf16_ulp_stats(np, out, ref, row_len=D_V):
    """A kernel's bf16 output against the float64 reference, rows of row_len elements (one query
    row and head).
    - misrounded: the share of elements more than half a bf16 ulp of their own reference value
      away (the ulp of |ref| in [2^e, 2^(e+1)) is 2^(e-7)); elements within 1/64 ulp of a rounding
      tie, and zeros, are left out of it, as the fp32-partials property does (docs/properties.md);
    - mean_row_ulps, max_row_ulps: the error in bf16 ulps of the row's largest |ref|. An element's
      own ulp would make a value that cancels to nearly 0 (a mean of values of both signs) count
      millions of ulps for an error no kernel that rounds P to bf16 for its mma can avoid.
    A non-finite output counts as misrounded and makes both errors inf."""
    out = np.asarray(out, np.float64).reshape(-1, row_len)
    ref = np.asarray(ref, np.float64).reshape(-1, row_len)
    bad = ~np.isfinite(out)
    diff = np.where(bad, np.inf, np.abs(np.where(bad, 0.0, out) - ref))
    rowmax = np.abs(ref).max(axis=1, keepdims=True)
    row_ulp = np.exp2(np.floor(np.log2(np.where(rowmax > 0, rowmax, 1.0))) - 7)
    row_err = diff / row_ulp
    keep = (ref != 0).ravel()
    r, d = ref.ravel()[keep], diff.ravel()[keep]
    ulp = np.exp2(np.floor(np.log2(np.abs(r))) - 7)
    pos = np.abs(r) / ulp
    judged = np.abs(pos - np.floor(pos) - 0.5) >= 1 / 64
    n = int(judged.sum())
    return {"elements": int(ref.size), "judged": n,
            "misrounded": float((d[judged] > 0.5 * ulp[judged]).sum() / n) if n else 0.0,
            "mean_row_ulps": float(row_err.mean()) if ref.size else 0.0,
            "max_row_ulps": float(row_err.max()) if ref.size else 0.0}


def time_shape(torch, peers, x, a, stream, gate, case, label, errors):
    """Every peer on one shape's inputs, a.rounds times, the order reversed every other round so
    that no kernel always runs first (or right after another's heat); the medians go into case
    (graph_us, queued_us, mask) over every round's replays. A peer that raises is reported in
    `errors`, left out of the later rounds and of the case. Returns ({name: copy 0's output from
    its first round}, whether one failed)."""
    outs, times, queued, broken = {}, {}, {}, set()
    for r in range(a.rounds):
        for peer in (peers if r % 2 == 0 else peers[::-1]):
            if peer.name in broken:
                continue
            try:
                g, qd, out0 = time_peer(torch, peer, x, a, stream, gate)
                times.setdefault(peer.name, []).extend(g)
                queued.setdefault(peer.name, []).extend(qd)
                outs.setdefault(peer.name, out0)
            except Exception as e:  # one kernel failing on one shape: say so, go on
                broken.add(peer.name)
                msg = f"{label}: {peer.name}: {type(e).__name__}: {e}"
                errors.append(msg)
                print(f"bench_peers: {msg}", flush=True)
            finally:
                peer.finish()
    for peer in peers:
        if peer.name in broken or peer.name not in times:
            outs.pop(peer.name, None)
            continue
        case["graph_us"][peer.name] = median(times[peer.name])
        if queued[peer.name]:
            case["queued_us"][peer.name] = median(queued[peer.name])
        case["mask"][peer.name] = peer.mask
    return outs, bool(broken)


# ---------------------------------------------------------------------------- report

def ratio_width(peer, kernel):
    """A ratio column's width: its header, PEER/REV, and at least 9."""
    return max(9, len(peer) + 1 + len(SHORT.get(kernel, kernel)))


def table_rows(rep, metric, kernels, ratio_cols):
    """One table's rows: each kernel's `metric` (graph_us or queued_us) and % of the roofline, then
    the peer / revision ratios."""
    lines = []
    for c in rep["cases"]:
        roof = c.get("roofline_us")
        times = c.get(metric, {})
        row = (f"{c['batch']:>4} {c['drafts']:>4} {c['tree']:<6} {c['prefix']:>7} "
               + (f"{roof:>8.2f}" if roof else f"{'-':>8}") + " |")
        for k in kernels:
            us = times.get(k)
            if us is None:
                row += f" {'-':>14}"
            else:
                pct = f"{100 * roof / us:3.0f}%" if roof else "   -"
                mark = "*" if c["tree"] != "chain" and c["mask"].get(k) == "causal" else " "
                row += f" {us:8.1f}{mark}{pct:>5}"
        for p, k in ratio_cols:
            pu, ku = times.get(p), times.get(k)
            row += f" {(f'{pu / ku:.2f}' if pu and ku else '-'):>{ratio_width(p, k)}}"
        lines.append(row)
    return lines


def table(rep):
    kernels = rep["vattn_kernels"] + [p["name"] for p in rep["peers"]]
    revs = [p["name"] for p in rep["peers"] if p.get("revision")]
    bases = rep["vattn_kernels"] + revs
    peers = [p["name"] for p in rep["peers"] if not p.get("revision")]
    rounds = rep.get("rounds", 1)
    lines = [f"peers bench: {rep['device']}; CUDA-graph replay, median of {rep['reps']} after {rep['warmup']} warm-up"
             + (f", peers {rounds} rounds a shape in alternating order" if rounds > 1 else "") + "; "
             + (f"roofline from vattn bench --kernel {rep['roofline_from']} (copy {rep['copy_gbps']:.0f} GB/s, mma.sync "
                f"{rep['mma_tflops']:.0f} TFLOP/s)" if rep["roofline_from"] else "no roofline (vattn bench did not run)")]
    for k in rep["vattn_kernels"]:
        lines.append(f"  {k:<10} vattn revision {k} (vattn bench graph_us, queued_us)")
    for p in rep["peers"]:
        lines.append(f"  {p['name']:<10} {p['description']}")
    for k, why in rep["unavailable"].items():
        lines.append(f"  {k:<10} NOT AVAILABLE: {why}")
    head = f"{'B':>4} {'T':>4} {'tree':<6} {'P':>7} {'roof_us':>8} |" + "".join(f" {k:>14}" for k in kernels) + " |"
    ratio_cols = [(p, k) for k in bases for p in peers]
    head += "".join(f" {p + '/' + SHORT.get(k, k):>{ratio_width(p, k)}}" for p, k in ratio_cols)
    lines.append(head)
    lines += table_rows(rep, "graph_us", kernels, ratio_cols)
    lines.append("us: graph replay; %: roofline_us / us. *: FlashInfer has no tree mask; on tree rows it ran its causal "
                 "mask over the same keys (the same work, another mask).")
    if any(c.get("queued_us") for c in rep["cases"]):
        lines.append(f"queued: the same replays, each enqueued behind a {rep.get('gate_us', 200)} us spin kernel (GPU "
                     "time alone: no host graph-launch latency)")
        lines.append(head)
        lines += table_rows(rep, "queued_us", kernels, ratio_cols)
    if ratio_cols:
        lines.append("PEER/REV: the peer's time over the revision's (above 1: the revision is faster)"
                     + ("; REV.so: the revision library timed in this loop (--revision-lib)." if revs else "."))
    if any(c.get("accuracy") for c in rep["cases"]):
        judged = [p["name"] for p in rep["peers"]]
        lines.append("accuracy: each kernel's output on copy 0's inputs against a float64 reference of its own mask: "
                     "the share of elements misrounded (over 1/2 bf16 ulp of the element) / the mean and the largest "
                     "error in bf16 ulps of the row's largest |value| (row ulps)")
        lines.append(f"{'B':>4} {'T':>4} {'tree':<6} {'P':>7} |" + "".join(f" {k:>20}" for k in judged))
        for c in rep["cases"]:
            acc = c.get("accuracy", {})
            row = f"{c['batch']:>4} {c['drafts']:>4} {c['tree']:<6} {c['prefix']:>7} |"
            for k in judged:
                st = acc.get(k)
                row += f" {'-':>20}" if st is None else (f" {100 * st['misrounded']:6.2f}% {st['mean_row_ulps']:5.3f} "
                                                       f"{st['max_row_ulps']:6.2f}")
            lines.append(row)
        pooled = []
        for k in judged:
            sts = [c["accuracy"][k] for c in rep["cases"] if k in c.get("accuracy", {})]
            n = sum(st["judged"] for st in sts)
            if n:
                mis = sum(st["misrounded"] * st["judged"] for st in sts) / n
                pooled.append(f"{k} {100 * mis:.2f}% (largest error {max(st['max_row_ulps'] for st in sts):.2f} row ulps)")
        if pooled:
            lines.append("misrounded over all shapes: " + ", ".join(pooled))
    for note in rep["notes"]:
        lines.append(note)
    return "\n".join(lines)


def main(argv=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    todo = shapes(a)
    if a.list:
        print(f"vattn bench --kernel: {', '.join(a.kernel) or '(not run)'}; peers: {', '.join(a.peers) or 'none'}"
              + "".join(f"; revision library {p}" for p in a.revision_lib) + ("; accuracy" if a.accuracy else ""))
        for b, t, tree, p in todo:
            print(f"B={b} T={t} tree={tree} P={p}")
        return 0
    t_start = time.time()
    sys.path.insert(0, os.path.join(ROOT, "python", "src"))
    rep = {"schema": "vattn-peers-bench", "version": 1, "device": "?", "reps": a.reps, "warmup": a.warmup,
           "rounds": a.rounds,
           "gate_us": a.gate_us,
           "heads": a.heads, "sm_scale": SM_SCALE, "vattn_kernels": [], "roofline_from": None, "copy_gbps": None,
           "mma_tflops": None, "peers": [], "unavailable": {}, "errors": [], "notes": [], "cases": []}
    vattn_rows = vattn_bench(a, rep) if a.kernel else {}
    # A revision not available is reported, not fatal; none at all (when asked for) is.
    failed = bool(a.kernel) and not rep["vattn_kernels"]

    peers = []
    if a.peers or a.revision_lib:
        try:
            import numpy as np
            import torch
        except ImportError as e:
            print(f"bench_peers: the peers need torch and numpy ({e})", file=sys.stderr)
            return 1
        if not torch.cuda.is_available():
            print("bench_peers: the peers need a CUDA device (torch.cuda.is_available() is False)", file=sys.stderr)
            return 1
        peers, missing = make_peers(a, torch)
        rep["unavailable"].update(missing)
        failed = failed or bool(missing)  # a peer asked for and not available fails the run
        prop = torch.cuda.get_device_properties(0)
        rep["device"] = f"{prop.name} ({prop.multi_processor_count} SMs)"
        stream = torch.cuda.Stream()
        gate = gate_cycles(torch, stream, a.gate_us)
        if gate is None:
            rep["notes"].append("no queued times for the peers: this torch has no torch.cuda._sleep")
    cross = []
    for i, (b, t, tree, p) in enumerate(todo):
        nbytes, flops = work(b, t, p, a.heads)
        case = {"batch": b, "drafts": t, "tree": tree, "prefix": p, "bytes": nbytes, "flops": flops,
                "graph_us": {}, "queued_us": {}, "mask": {}}
        vr = vattn_rows.get((b, t, p), {})
        if rep["roofline_from"] in vr:
            case["roofline_us"] = vr[rep["roofline_from"]]["roofline_us"]
        for k, c in vr.items():
            case["graph_us"][k] = c["graph_us"]
            if "queued_us" in c:
                case["queued_us"][k] = c["queued_us"]
            case["mask"][k] = "tree"
        if peers:
            x = Inputs(torch, np, b, t, tree, p, a.heads, a.seed + i)
            outs, bad = time_shape(torch, peers, x, a, stream, gate, case, f"B={b} T={t} P={p}", rep["errors"])
            failed = failed or bad
            if a.accuracy and outs:
                refs = {}
                for name, out0 in outs.items():
                    kind = "tree" if tree == "chain" else case["mask"][name]  # a chain's tree mask is the causal one
                    if kind not in refs:
                        refs[kind] = reference(torch, x, kind).cpu().numpy()
                    case.setdefault("accuracy", {})[name] = bf16_ulp_stats(np, out0.cpu().numpy(), refs[kind])
                del refs
            if tree == "chain" and len(outs) > 1:  # same inputs, same (causal) mask: the outputs must agree
                names = sorted(outs)
                d = max(float((outs[n] - outs[names[0]]).abs().max()) for n in names[1:])
                case["max_abs_out_diff"] = {"between": names, "value": d}
                cross.append(d)
            del x, outs
            torch.cuda.empty_cache()
        rep["cases"].append(case)
        done = ", ".join(f"{k} {v:.1f}" for k, v in case["graph_us"].items())
        print(f"bench_peers: B={b} T={t} P={p} done ({done} us)", flush=True)
    rep["peers"] = [{"name": p.name, "description": p.description, "mask": p.mask,
                     **({"revision": True} if isinstance(p, RevisionPeer) else {})} for p in peers]
    if cross:
        rep["notes"].append(f"chain rows, copy 0's inputs: the peers' outputs agree within max |diff| {max(cross):.3g} "
                            "(bf16 outputs of values in [-1, 1])")
    rep["notes"].extend(f"ERROR {e}" for e in rep["errors"])
    rep["seconds"] = round(time.time() - t_start, 1)
    print(table(rep))
    print(f"bench_peers: {len(todo)} shapes, {len(rep['vattn_kernels'])} vattn revisions, {len(peers)} peers, "
          f"{rep['seconds']:.0f} s" + (" (with failures or missing kernels)" if failed else ""))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rep, f, indent=1)
        print(f"wrote {a.json}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
