#!/usr/bin/env python3
"""ctest: peers/bench_peers.py's report without torch or a GPU.

1. With a stand-in `vattn` (a script that writes a bench JSON as `vattn bench --json` does) and
   no peers, main() runs vattn bench once for both revisions and prints the graph-replay table
   and the queued one, each with the revisions' own times; the JSON keeps both.
2. table() on a report with a peer: each table's ratios are that table's times (graph over
   graph, queued over queued); a report without queued times (an older JSON) prints no queued
   table.
3. time_peer() and gate_cycles() against a stand-in torch whose clock charges a host launch
   latency to a replay on an idle stream and none to one queued behind torch.cuda._sleep: the
   graph median is latency + kernel, the queued one the kernel alone, each replay behind its own
   spin; without torch.cuda._sleep there is no gate and no queued time.
4. --gate-us 0 is refused (exit 2).
5. time_shape() with --rounds 3: the order alternates, a peer failing in round 2 is reported
   once and left out of the case.
6. The accuracy judge (bf16_ulp_stats) on hand-placed values: errors in bf16 ulps of the
   reference, near-ties left out of the misrounded share, NaN as misrounded; the packed draft
   mask of a revision library (pack_draft_mask) for T = 40 (two words a row); table() with a
   revision library (--revision-lib) gives the peers ratios over it and prints the accuracy table.

usage: test_peers_bench.py --vattn PATH/TO/vattn --root REPO   (--vattn is not used)
"""

import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile

from package_checks import arguments, check, finish

FAKE_VATTN = r'''#!/usr/bin/env python3
import json, sys
args = sys.argv[1:]
opt = {args[i]: args[i + 1] for i in range(1, len(args) - 1, 2)}
kernels = opt["--kernel"].split(",")
cases = []
for i, k in enumerate(kernels):
    for p in map(int, opt["--prefix"].split(",")):
        cases.append({"kernel": k, "batch": int(opt["--batch"]), "drafts": int(opt["--drafts"]), "prefix": p,
                      "graph_us": 40.0 + 10 * i, "queued_us": 30.0 + 10 * i, "roofline_us": 2.0})
json.dump({"kernels": kernels, "kernel": kernels[0], "device": "Stand-in GPU", "sms": 132, "copy_gbps": 4000.0,
           "mma_tflops": 640.0, "cases": cases}, open(opt["--json"], "w"))
'''


class FakeCuda:
    """torch.cuda as time_peer and gate_cycles use it, on a simulated device clock (us): a spin of
    c cycles takes c / 1000 us (1 GHz); a replay takes KERNEL_US, plus LAUNCH_US of host latency
    when nothing is queued ahead of it on the stream."""
    KERNEL_US, LAUNCH_US = 30.0, 8.0

    def __init__(self):
        self.clock, self.busy, self.sleeps, self.replays = 0.0, False, 0, 0
        cuda = self

        class Event:
            def __init__(self, enable_timing=False):
                self.t = None

            def record(self, stream=None):
                self.t = cuda.clock

            def synchronize(self):
                pass

            def elapsed_time(self, end):
                return (end.t - self.t) / 1e3  # ms, as torch

        class CUDAGraph:
            def replay(self):
                cuda.clock += self.KERNEL_US + (0.0 if cuda.busy else self.LAUNCH_US)
                cuda.busy = False
                cuda.replays += 1

        CUDAGraph.KERNEL_US, CUDAGraph.LAUNCH_US = self.KERNEL_US, self.LAUNCH_US
        self.Event, self.CUDAGraph = Event, CUDAGraph

    def _sleep(self, cycles):
        self.clock += cycles / 1000.0
        self.busy = True  # the next launch is enqueued while the stream still spins
        self.sleeps += 1

    @contextlib.contextmanager
    def stream(self, s):
        yield

    @contextlib.contextmanager
    def graph(self, g, stream=None):
        yield


class FakeStream:
    def synchronize(self):
        pass


class FakeTensor:
    def __init__(self):
        self.fills = []

    def all(self):
        return True

    def fill_(self, v):
        self.fills.append(v)
        return self

    def float(self):
        return self

    def clone(self):
        return self


class FakeTorch:
    def __init__(self, cuda):
        self.cuda = cuda

    def isfinite(self, t):
        return FakeTensor()


def check_timing(bench_peers):
    class Peer:
        def prepare(self, x):
            pass

        def call(self, x, s):
            pass

    class X:
        sets, out, lse = 2, FakeTensor(), FakeTensor()

    class A:
        reps, warmup = 7, 3

    cuda = FakeCuda()
    torch = FakeTorch(cuda)
    gate = bench_peers.gate_cycles(torch, FakeStream(), 200)
    check(gate == 200_000, f"gate_cycles: 200 us at 1 GHz is 200000 cycles (got {gate})")
    cuda.sleeps = 0
    graph, queued, _ = bench_peers.time_peer(torch, Peer(), X(), A(), FakeStream(), gate)
    check(len(graph) == A.reps and all(abs(g - 38.0) < 1e-6 for g in graph),
          f"graph replay: launch latency + kernel = 38.0 us, one time a replay (got {graph})")
    check(len(queued) == A.reps and all(abs(q - 30.0) < 1e-6 for q in queued),
          f"queued: the kernel alone, 30.0 us (got {queued})")
    check(cuda.sleeps == A.reps and cuda.replays == A.warmup + 2 * A.reps,
          f"one spin per queued replay ({cuda.sleeps} spins, {cuda.replays} replays)")
    check(len(X.out.fills) == 1 and X.out.fills[0] != X.out.fills[0] and len(X.lse.fills) == 1,
          f"out and lse are set to NaN before the peer's first call ({X.out.fills}, {X.lse.fills})")
    cuda = FakeCuda()
    cuda._sleep = None  # a torch without _sleep: no gate, graph times only
    torch = FakeTorch(cuda)
    gate = bench_peers.gate_cycles(torch, FakeStream(), 200)
    graph, queued, _ = bench_peers.time_peer(torch, Peer(), X(), A(), FakeStream(), gate)
    check(gate is None and queued == [] and bench_peers.median(graph) == 38.0 and cuda.replays == A.warmup + A.reps,
          f"without torch.cuda._sleep: no gate, no queued time, graph time kept ({gate}, {queued}, {graph})")


def check_rounds(bench_peers):
    """time_shape(): rounds in alternating order, medians over every round's replays, a peer that
    fails in a later round dropped from the case (times, mask, output) and reported once."""
    calls = []

    class Peer:
        def __init__(self, name, fail_in_round=None):
            self.name, self.mask, self.fail_in_round, self.round = name, "tree", fail_in_round, 0

        def prepare(self, x):
            calls.append(self.name)
            self.round += 1
            if self.round == self.fail_in_round:
                raise RuntimeError("stand-in failure")

        def call(self, x, s):
            pass

        def finish(self):
            pass

    class X:
        sets, out, lse = 1, FakeTensor(), FakeTensor()

    class A:
        reps, warmup, rounds = 3, 0, 3

    cuda = FakeCuda()
    torch = FakeTorch(cuda)
    gate = bench_peers.gate_cycles(torch, FakeStream(), 200)
    case, errors = {"graph_us": {}, "queued_us": {}, "mask": {}}, []
    outs, bad = bench_peers.time_shape(torch, [Peer("a"), Peer("b", fail_in_round=2), Peer("c")], X(), A(), FakeStream(),
                                       gate, case, "B=1 T=1 P=1", errors)
    check(calls == ["a", "b", "c", "c", "b", "a", "a", "c"],
          f"rounds alternate the order; a peer that failed is not run again ({calls})")
    check(bad and len(errors) == 1 and "B=1 T=1 P=1: b: RuntimeError: stand-in failure" in errors[0],
          f"the failure is reported once, with the shape and the peer ({errors})")
    check(sorted(case["graph_us"]) == ["a", "c"] and sorted(case["mask"]) == ["a", "c"] and sorted(outs) == ["a", "c"]
          and abs(case["graph_us"]["a"] - 38.0) < 1e-6 and abs(case["queued_us"]["c"] - 30.0) < 1e-6,
          f"the failed peer leaves no time, mask or output; the others' medians are kept ({case}, {sorted(outs)})")


def check_accuracy_and_revisions(bench_peers):
    import numpy as np

    u = 2.0 ** -7  # a bf16 ulp in [1, 2)
    ref = np.array([1 + 0.25 * u, 1 + 0.75 * u, 1 + (0.5 + 1e-4) * u, -3 - 0.1 * 2 * u, 0.0, 2.0])
    out = np.array([1.0, 1.0, 1.0, -3.0, 5.0, np.nan])
    st = bench_peers.bf16_ulp_stats(np, out, ref, row_len=6)
    check(st["elements"] == 6 and st["judged"] == 4 and abs(st["misrounded"] - 0.5) < 1e-12
          and st["max_row_ulps"] == np.inf, f"ulp judge: zero left out, the near-tie not judged, 0.75 ulp and NaN "
          f"misrounded ({st})")
    # Rows of two: errors in ulps of the row's largest |ref| (row 2: -3 and 1e-6, ulp 2^-6).
    ref2 = np.array([1 + 0.25 * u, 1 + 0.75 * u, -3 - 0.1 * 2 * u, 1e-6])
    out2 = np.array([1.0, 1.0, -3.0, 1e-6 + 0.2 * 2 * u])
    st = bench_peers.bf16_ulp_stats(np, out2, ref2, row_len=2)
    check(abs(st["max_row_ulps"] - 0.75) < 1e-9 and abs(st["mean_row_ulps"] - (0.25 + 0.75 + 0.1 + 0.2) / 4) < 1e-9
          and abs(st["misrounded"] - 2 / 4) < 1e-12, f"ulp judge: a value near 0 errs 0.2 row ulps, not millions of its own "
          f"ulps, yet counts as misrounded ({st})")

    m = np.zeros((40, 40), bool)
    m[0, 0] = m[39, 0] = m[39, 33] = m[39, 39] = True
    bits, per = bench_peers.pack_draft_mask(np, m, 3)
    check(per == 80 and bits.size == 240 and bits[0] == 1 and bits[78] == 1 and bits[79] == (1 << 1) | (1 << 7)
          and bits[160 + 79] == bits[79] and int(np.count_nonzero(bits)) == 3 * 3,
          f"packed mask: 2 words a row, bit j % 32 of word j / 32, the same per request ({per}, {bits[78:80]})")

    rep = {"device": "Stand-in GPU (132 SMs)", "reps": 20, "warmup": 5, "gate_us": 200, "vattn_kernels": [],
           "roofline_from": None, "copy_gbps": None, "mma_tflops": None, "unavailable": {}, "notes": [],
           "peers": [{"name": "split-v2.so", "description": "stand-in", "mask": "tree", "revision": True},
                     {"name": "fa2", "description": "stand-in", "mask": "causal"}],
           "cases": [{"batch": 8, "drafts": 16, "tree": "chain", "prefix": 4096,
                      "graph_us": {"split-v2.so": 60.0, "fa2": 63.0}, "queued_us": {"split-v2.so": 60.0, "fa2": 57.0},
                      "mask": {"split-v2.so": "tree", "fa2": "causal"},
                      "accuracy": {"split-v2.so": {"elements": 10, "judged": 10, "misrounded": 0.1, "mean_row_ulps": 0.3,
                                                   "max_row_ulps": 1.0},
                                   "fa2": {"elements": 10, "judged": 10, "misrounded": 0.3, "mean_row_ulps": 0.4,
                                           "max_row_ulps": 2.0}}}]}
    text = bench_peers.table(rep)
    lines = text.splitlines()
    rows = [l for l in lines if l.strip().startswith("8   16 chain")]
    check(any("fa2/v2.so" in l for l in lines) and len(rows) == 3 and rows[0].split()[-1] == "1.05"
          and rows[1].split()[-1] == "0.95", f"fa2 over the revision library: 1.05 graph, 0.95 queued ({rows[:2]})")
    check(len(rows) == 3 and "10.00%" in rows[2] and "30.00%" in rows[2]
          and "split-v2.so 10.00% (largest error 1.00 row ulps), fa2 30.00% (largest error 2.00 row ulps)" in text,
          f"the accuracy table and its pooled line ({rows[2:] if len(rows) > 2 else rows})")


def main():
    a = arguments()
    sys.path.insert(0, os.path.join(a.root, "peers"))
    import bench_peers

    with tempfile.TemporaryDirectory() as tmp:
        fake = os.path.join(tmp, "vattn")
        with open(fake, "w") as f:
            f.write(FAKE_VATTN)
        os.chmod(fake, 0o755)
        out_json = os.path.join(tmp, "peers.json")
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            code = bench_peers.main(["--vattn", fake, "--kernel", "split-v1,split-v2", "--peers", "none",
                                     "--prefix", "4096", "--batch", "1", "--drafts", "16", "--json", out_json])
        text = buf.getvalue()
        check(code == 0, f"main() with a stand-in vattn and no peers exits 0 (got {code})")
        lines = text.splitlines()
        queued_at = next((i for i, l in enumerate(lines) if l.startswith("queued: ")), None)
        check(queued_at is not None, "the report has a queued table")
        graph_rows = [l for l in lines[:queued_at or 0] if l.strip().startswith("1   16 chain")]
        queued_rows = [l for l in lines[queued_at or 0:] if l.strip().startswith("1   16 chain")]
        check(len(graph_rows) == 1 and "40.0" in graph_rows[0] and "50.0" in graph_rows[0],
              f"graph table: split-v1 40.0 and split-v2 50.0 us ({graph_rows})")
        check(len(queued_rows) == 1 and "30.0" in queued_rows[0] and "40.0" in queued_rows[0],
              f"queued table: split-v1 30.0 and split-v2 40.0 us ({queued_rows})")
        rep = json.load(open(out_json))
        case = rep["cases"][0]
        check(case["queued_us"] == {"split-v1": 30.0, "split-v2": 40.0} and rep["gate_us"] == 200,
              f"the JSON keeps the queued times and the gate ({case.get('queued_us')}, {rep.get('gate_us')})")

    # A peer: each table's ratio is that table's peer time over the revision's.
    rep = {"device": "Stand-in GPU (132 SMs)", "reps": 20, "warmup": 5, "gate_us": 200, "vattn_kernels": ["split-v2"],
           "roofline_from": "split-v2", "copy_gbps": 4000.0, "mma_tflops": 640.0,
           "peers": [{"name": "fa2", "description": "stand-in", "mask": "causal"}], "unavailable": {}, "notes": [],
           "cases": [{"batch": 1, "drafts": 64, "tree": "random", "prefix": 4096, "roofline_us": 7.0,
                      "graph_us": {"split-v2": 50.0, "fa2": 40.0}, "queued_us": {"split-v2": 45.0, "fa2": 45.0},
                      "mask": {"split-v2": "tree", "fa2": "causal"}}]}
    text = bench_peers.table(rep)
    rows = [l for l in text.splitlines() if l.strip().startswith("1   64 random")]
    check(len(rows) == 2, f"one row per table ({len(rows)})")
    check(len(rows) == 2 and rows[0].split()[-1] == "0.80" and rows[1].split()[-1] == "1.00",
          f"fa2/v2 is 0.80 under graph replay and 1.00 queued ({[r.split()[-1] for r in rows]})")
    check(len(rows) == 2 and "40.0*" in rows[0], "FlashInfer's causal stand-in for the tree is marked")
    for c in rep["cases"]:
        del c["queued_us"]
    old = bench_peers.table(rep)
    check("queued:" not in old and len([l for l in old.splitlines() if l.strip().startswith("1   64")]) == 1,
          "a report without queued times prints the graph table only")

    check_timing(bench_peers)
    check_accuracy_and_revisions(bench_peers)
    check_rounds(bench_peers)

    p = subprocess.run([sys.executable, os.path.join(a.root, "peers", "bench_peers.py"), "--gate-us", "0", "--list"],
                       capture_output=True, text=True)
    check(p.returncode == 2 and "--gate-us" in p.stderr, f"--gate-us 0 is refused with exit 2 (got {p.returncode})")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
