#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""torch_op_check.py [--revision-dir DIR] [--vattn VATTN] [--planted LIB] [--out DIR]   (on the GPU machine)

vattn.torch on a GPU (issue 46, items 1-3), one PASS/FAIL line per check:
  opcheck        torch.library.opcheck on torch.ops.vattn.verify_attention (split-v2)
  reference      eager split-v1 and split-v2 against the float64 torch reference, under the tolerance model
  no-alloc       Plan.run with out/lse given, and Recorder.record, allocate nothing (caching-allocator counts)
  graph          the op captured in torch.cuda.graph, replayed 24 times with other lengths, indices, masks and
                 forced split counts written into the same tensors: each replay bitwise equal to an eager run
  recorder       a Recorder inside the captured graph (two layers, one recorded, every third step): drained to
                 case files that hold each step's call exactly, and `vattn replay --kernel split-v2` passes them
  shadow-peer    shadow mode, split-v2 serving and split-v1 beside it: every call agrees
  shadow-catch   shadow mode against the reference catches a planted revision (--planted; else a perturbed
                 output) and writes the call with both outputs; `vattn replay` fails serving, passes the reference
  shadow-graph   a shadowed call inside a graph capture is refused (skipped_in_graph), the graph still replays
  shadow-cost    Plan.run per call with shadow mode idle (sample_rate 0) against without: printed, not judged
Libraries: DIR/libvattn_rev_split_v{1,2}.so (default .device/build/revisions, as scripts/device/stage.sh stages
them); VATTN: .device/build/vattn (replay checks are left out, and say so, without it). Files go to DIR/out
(default $OUT/torch-op-check or /tmp/torch-op-check). Exit 0 when every check passed, 1 otherwise, 2 usage.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
import traceback
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python", "src"))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))  # torch_calls: the tests' call generator

RESULTS = []


def report(name, ok, detail):
    RESULTS.append((name, ok))
    print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}", flush=True)


def run_check(name, fn):
    try:
        fn()
    except Exception as e:
        traceback.print_exc()
        report(name, False, f"raised {type(e).__name__}: {e}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--revision-dir", default=os.path.join(ROOT, ".device", "build", "revisions"))
    ap.add_argument("--vattn", default=os.path.join(ROOT, ".device", "build", "vattn"))
    ap.add_argument("--planted", default=None, help="a revision library that must disagree (default: DIR/"
                                                    "libvattn_rev_v2_plant_drop_last_key.so when staged)")
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "/tmp"), "torch-op-check"))
    ap.add_argument("--replays", type=int, default=24)
    a = ap.parse_args()
    import numpy as np
    import torch

    import vattn
    import vattn.torch as vt
    from torch_calls import ARGS, make_call
    from vattn import torch_tolerance as tt
    from vattn.shadow import REFERENCE_PRODUCER

    if not torch.cuda.is_available():
        print("torch_op_check: no CUDA device visible to torch", file=sys.stderr)
        return 2
    for rev in vt.IN_TREE:
        if not os.path.isfile(vt.library_path(rev, a.revision_dir)):
            print(f"torch_op_check: no {vt.library_path(rev, a.revision_dir)} (scripts/device/stage.sh; --revision-dir)",
                  file=sys.stderr)
            return 2
    planted = a.planted or os.path.join(a.revision_dir, "libvattn_rev_v2_plant_drop_last_key.so")
    have_vattn = os.path.isfile(a.vattn) and os.access(a.vattn, os.X_OK)
    os.makedirs(a.out, exist_ok=True)
    out_dir = tempfile.mkdtemp(prefix="run-", dir=a.out)
    dev = torch.device("cuda", torch.cuda.current_device())
    print(f"torch_op_check: torch {torch.__version__}, {torch.cuda.get_device_name(dev)}, libraries in {a.revision_dir}, "
          f"files in {out_dir}", flush=True)
    H, B = 8, 3
    limits = dict(max_requests=4, max_total_drafts=96, max_drafts_per_request=40, num_heads=H, max_splits=16)

    def on_dev(call):
        return {k: (v.to(dev) if isinstance(v, torch.Tensor) else v) for k, v in call.items()}

    def draw(seed):
        rng = np.random.default_rng(seed)
        P = tuple(int(x) for x in rng.integers(0, 700, B))
        T = tuple(int(x) for x in rng.integers(1, 31, B))
        return on_dev(make_call(seed, P=P, T=T, H=H, n_slots=2400))

    def plan(rev, **kw):
        return vt.Plan(rev, revision_dir=a.revision_dir, device=dev, **dict(limits, **kw))

    def bits(t):
        return t.contiguous().view(torch.int16)

    # ---- opcheck ------------------------------------------------------------------------------------------
    def opcheck():
        p = plan("split-v2")
        c = draw(1)
        n_q = c["q"].shape[0]
        out, lse = p.empty_outputs(n_q)
        args = tuple(c[k] for k in ARGS) + (None, out, lse, p.workspace, float(c["sm_scale"]), p.path, p.limits)
        res = torch.library.opcheck(torch.ops.vattn.verify_attention.default, args)
        bad = {k: v for k, v in res.items() if v != "SUCCESS"}
        report("opcheck", not bad, f"torch.library.opcheck: {res}")

    # ---- eager against the reference ----------------------------------------------------------------------
    def reference():
        worst, fails = 0.0, []
        for rev in vt.IN_TREE:
            p = plan(rev)
            for seed in range(2, 8):
                c = draw(seed)
                out, lse = p.run(*[c[k] for k in ARGS], c["sm_scale"])
                p.check()
                ix = tt.HostIndex.of(c["kv_indices"], c["kv_indptr"], c["qo_indptr"], c["mask_bits"], c["mask_word_indptr"])
                ref = tt.reference(c["q"], c["kv_pool"], c["kv_draft"], ix, float(np.float32(c["sm_scale"])), p.d_v)
                v = tt.judge_reference(out, lse, ref, p.d_qk)
                worst = max(worst, float(v[2]))
                if int(v[0]):
                    fails.append(f"{rev} seed {seed}: {tt.describe(v)}")
        report("reference", not fails, f"split-v1, split-v2 x 6 calls each against the float64 torch reference; worst "
                                       f"err/bound {worst:.3g}" + (f"; {fails[:3]}" if fails else ""))

    # ---- allocation-free calls ------------------------------------------------------------------------------
    def no_alloc():
        p = plan("split-v2")
        rec = vt.Recorder.for_plan(p, os.path.join(out_dir, "noalloc"), max_kv_tokens=4096, start_writer=False)
        c = draw(9)
        out, lse = p.empty_outputs(c["q"].shape[0])
        args = [c[k] for k in ARGS]
        p.run(*args, c["sm_scale"], out=out, lse=lse)
        rec.record(0, *args, out, lse, c["sm_scale"])
        torch.cuda.synchronize()
        before = torch.cuda.memory_stats()["allocation.all.allocated"]
        for _ in range(10):
            p.run(*args, c["sm_scale"], out=out, lse=lse)
            rec.record(0, *args, out, lse, c["sm_scale"])
        torch.cuda.synchronize()
        after = torch.cuda.memory_stats()["allocation.all.allocated"]
        rec._closed = True
        report("no-alloc", after == before, f"10 x (Plan.run + Recorder.record): {after - before} allocations")

    # ---- the op in a CUDA graph -----------------------------------------------------------------------------
    class Static:
        """Capacity-sized device tensors that each replay's call is written into."""

        def __init__(self):
            z = torch.zeros
            self.q = z((limits["max_total_drafts"], H, 576), dtype=torch.bfloat16, device=dev)
            self.pool = z((2400, 576), dtype=torch.bfloat16, device=dev)
            self.idx = z(3 * 700 + 16, dtype=torch.int32, device=dev)
            self.kvp = z(B + 1, dtype=torch.int32, device=dev)
            self.draft = z((limits["max_total_drafts"], 576), dtype=torch.bfloat16, device=dev)
            self.qo = z(B + 1, dtype=torch.int32, device=dev)
            self.mask = z(limits["max_total_drafts"] * 2, dtype=torch.int32, device=dev)
            self.mwi = z(B + 1, dtype=torch.int64, device=dev)
            self.splits = z(1, dtype=torch.int32, device=dev)

        def load(self, c, splits):
            self.pool.copy_(c["kv_pool"])
            for dst, k in ((self.q, "q"), (self.idx, "kv_indices"), (self.draft, "kv_draft"), (self.mask, "mask_bits")):
                dst[: c[k].shape[0]].copy_(c[k])
            self.kvp.copy_(c["kv_indptr"])
            self.qo.copy_(c["qo_indptr"])
            self.mwi.copy_(c["mask_word_indptr"])
            self.splits.fill_(splits)

        def args(self):
            return [self.q, self.pool, self.idx, self.kvp, self.draft, self.qo, self.mask, self.mwi]

    def capture(fn):
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            fn()  # warm-up, eagerly, as torch.cuda.graph's documentation asks
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn()
        return g

    def graph():
        for rev in vt.IN_TREE:
            p = plan(rev)
            st = Static()
            st.load(draw(100), 0)
            out, lse = p.empty_outputs()
            out_e, lse_e = p.empty_outputs()
            scale = 0.1352
            g = capture(lambda p=p, st=st, out=out, lse=lse, scale=scale: p.run(*st.args(), scale, out=out, lse=lse,
                                                                  forced_splits=st.splits))
            mismatches, splits_seen = [], []
            for r in range(a.replays):
                c = draw(200 + r)
                st.load(c, [0, 1, 2, 3, 5, 7, 16][r % 7])
                out.fill_(float("nan"))
                g.replay()
                n_q = int(c["qo_indptr"][-1])
                splits_g = p.check()  # the replay's error word (raises when set) and split count
                p.run(*st.args(), scale, out=out_e, lse=lse_e, forced_splits=st.splits)
                splits_e = p.check()
                splits_seen.append(splits_g)
                if not (torch.equal(bits(out[:n_q]), bits(out_e[:n_q])) and torch.equal(lse[:n_q].view(torch.int32),
                                                                                        lse_e[:n_q].view(torch.int32))):
                    mismatches.append(r)
                if splits_e != splits_g:
                    mismatches.append(f"{r}: {splits_g} splits replayed, {splits_e} eager")
            report("graph", not mismatches, f"{rev}: {a.replays} replays with new lengths, indices, masks and split "
                                            f"counts {sorted(set(splits_seen))}, each bitwise equal to an eager run"
                                            + (f"; differ at {mismatches}" if mismatches else ""))

    # ---- the recorder in a CUDA graph ------------------------------------------------------------------------
    def recorder():
        d = os.path.join(out_dir, "recorder")
        p = plan("split-v2")
        rec = vt.Recorder.for_plan(p, d, max_kv_tokens=3 * 700, slots=3, layers={1}, steps=range(0, 1000, 3),
                                   gpu=torch.cuda.get_device_name(dev), model="torch_op_check.py calls",
                                   notes="recorded inside a CUDA graph by scripts/device/torch_op_check.py")
        st = Static()
        st.load(draw(300), 0)
        outs = [p.empty_outputs() for _ in range(2)]

        def forward():
            rec.begin_step()
            for layer in (0, 1):
                p.run(*st.args(), 0.1352, out=outs[layer][0], lse=outs[layer][1], layer=layer)

        forward()  # warm-up without the recorder (Recorder.for_plan does not attach it)
        p.recorder = rec
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            forward()
        rec.set_step(-1)  # the warm-up counted a step; the first replay is step 0
        calls = {}
        for r in range(12):
            c = draw(400 + r)
            st.load(c, 0)
            g.replay()
            calls[r] = (c, outs[1][0][: int(c["qo_indptr"][-1])].clone(), outs[1][1][: int(c["qo_indptr"][-1])].clone())
            if r % 4 == 3:
                rec.drain()
        stats = rec.close()
        files = sorted(f for f in os.listdir(d) if f.endswith(".h5"))
        want = [f"step{s:06d}_layer01_tp0.h5" for s in range(0, 12, 3)]
        exact = []
        for s in range(0, 12, 3):
            path = os.path.join(d, f"step{s:06d}_layer01_tp0.h5")
            if not os.path.exists(path):
                continue
            case = vattn.read(path).cases[0]
            c, o, l = calls[s]
            n_q = o.shape[0]
            ok = (np.array_equal(case.q, bits(c["q"]).cpu().numpy().view(np.uint16)[:n_q])
                  and np.array_equal(case.outputs[0].out, bits(o).cpu().numpy().view(np.uint16))
                  and np.array_equal(case.outputs[0].lse, l.cpu().numpy())
                  and np.array_equal(case.kv_slot_ids[case.kv_indices],
                                     c["kv_indices"][: int(c["kv_indptr"][-1])].cpu().numpy()))
            exact.append(ok)
        detail = f"12 replays, layer 1 of every third step: files {files}, stats written {stats['written']}"
        ok = files == want and all(exact) and len(exact) == 4
        if have_vattn and files:
            pr = subprocess.run([a.vattn, "replay", *[os.path.join(d, f) for f in files], "--kernel", "split-v2"],
                                capture_output=True, text=True)
            tail = [ln for ln in pr.stdout.splitlines() if ln.startswith("replay:")]
            ok = ok and pr.returncode == 0
            detail += f"; vattn replay --kernel split-v2: exit {pr.returncode} {tail}"
            if pr.returncode:
                print(pr.stdout[-3000:] + pr.stderr[-1000:])
        elif not have_vattn:
            detail += f"; vattn replay not run (no {a.vattn})"
        report("recorder", ok, detail + ("" if all(exact) else "; a file differs from its step's call"))

    # ---- shadow mode --------------------------------------------------------------------------------------------
    def shadow_peer():
        sh = vt.Shadow(os.path.join(out_dir, "shadow-peer"), second="split-v1", revision_dir=a.revision_dir,
                       sample_rate=1.0)
        p = plan("split-v2", shadow=sh)
        for seed in range(500, 510):
            c = draw(seed)
            p.run(*[c[k] for k in ARGS], c["sm_scale"])
        st = sh.close()
        report("shadow-peer", st["agreed"] == 10 and st["disagreed"] == 0 and st["written"] == 0,
               f"split-v2 serving, split-v1 beside it, 10 calls: agreed {st['agreed']}, disagreed {st['disagreed']}")

    def shadow_catch():
        d = os.path.join(out_dir, "shadow-catch")
        sh = vt.Shadow(d, second="reference", sample_rate=1.0, gpu=torch.cuda.get_device_name(dev))
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            if os.path.isfile(planted):
                how = f"planted revision {os.path.basename(planted)}"
                p = vt.Plan(planted, device=dev, shadow=sh, **limits)
                for seed in range(600, 604):
                    c = on_dev(make_call(seed, P=(77, 5, 130), T=(9, 4, 17), H=H, n_slots=2400))
                    p.run(*[c[k] for k in ARGS], c["sm_scale"])
            else:
                how = "split-v2 with one output element perturbed (no planted library staged)"
                p = plan("split-v2")
                sh.bind(p)
                for seed in range(600, 604):
                    c = draw(seed)
                    out, lse = p.run(*[c[k] for k in ARGS], c["sm_scale"])
                    out[0, 0, 7] += 1.0
                    sh.observe(p, 0, *[c[k] for k in ARGS], out, lse, sm_scale=c["sm_scale"])
            st = sh.close()
        caught = [str(w.message) for w in seen if "written to" in str(w.message)]
        files = sorted(f for f in os.listdir(d) if f.endswith(".h5"))
        ok = st["disagreed"] >= 1 and len(files) == st["written"] >= 1 and len(caught) == len(files)
        detail = f"{how}: disagreed {st['disagreed']} of {st['fired']}, files {files}"
        if have_vattn and files:
            pr = subprocess.run([a.vattn, "replay", os.path.join(d, files[0])], capture_output=True, text=True)
            # "call000000001_layer00  serving (stored)  FAIL ...": producer, then the verdict word
            lines = {ln.split()[1]: ("FAIL" if " FAIL " in ln else "PASS" if " PASS " in ln else "?")
                     for ln in pr.stdout.splitlines() if ln.startswith("call") and len(ln.split()) > 2}
            ok = ok and pr.returncode == 1 and lines.get("serving") == "FAIL" and lines.get(REFERENCE_PRODUCER) == "PASS"
            detail += f"; vattn replay: exit {pr.returncode}, {lines}"
        report("shadow-catch", ok, detail + (f"; first warning: {caught[0][:160]}" if caught else ""))

    def shadow_graph():
        sh = vt.Shadow(os.path.join(out_dir, "shadow-graph"), sample_rate=1.0)
        p = plan("split-v2")
        st = Static()
        st.load(draw(700), 0)
        out, lse = p.empty_outputs()
        p.run(*st.args(), 0.1352, out=out, lse=lse)  # warm-up, before the shadow is attached
        p.shadow = sh
        sh.bind(p)
        g = torch.cuda.CUDAGraph()
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            with torch.cuda.graph(g):
                p.run(*st.args(), 0.1352, out=out, lse=lse)
        g.replay()
        torch.cuda.synchronize()
        s = sh.close()
        report("shadow-graph", s["skipped_in_graph"] == 1 and s["fired"] == 0 and any("eager" in str(w.message) for w in seen),
               f"skipped_in_graph {s['skipped_in_graph']}, fired {s['fired']}; the graph replays")

    def shadow_cost():
        c = draw(800)
        args = [c[k] for k in ARGS]
        plain = plan("split-v2")
        idle = plan("split-v2", shadow=vt.Shadow(os.path.join(out_dir, "shadow-cost"), sample_rate=0.0))
        outs = plain.empty_outputs(c["q"].shape[0])
        times = {"without shadow": [], "shadow idle (sample_rate 0)": []}
        for _ in range(5):
            for label, p in (("without shadow", plain), ("shadow idle (sample_rate 0)", idle)):
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                for _ in range(500):
                    p.run(*args, c["sm_scale"], out=outs[0], lse=outs[1])
                torch.cuda.synchronize()
                times[label].append((time.perf_counter() - t0) / 500)
        best = {k: min(v) for k, v in times.items()}
        for k, v in best.items():
            print(f"shadow-cost: {k:30s} {v * 1e6:8.2f} us per call (enqueue + kernel, best of 5 x 500)")
        print(f"shadow-cost: idle shadow adds {(best['shadow idle (sample_rate 0)'] - best['without shadow']) * 1e6:.2f} "
              "us per call")
        for label, sec in vt.bench_idle(iters=100000, repeats=3).items():
            print(f"shadow-cost: observe() alone, {label:18s} {sec * 1e9:8.1f} ns per call")
        report("shadow-cost", True, "printed above (a measurement, not a check)")

    for name, fn in (("opcheck", opcheck), ("reference", reference), ("no-alloc", no_alloc), ("graph", graph),
                     ("recorder", recorder), ("shadow-peer", shadow_peer), ("shadow-catch", shadow_catch),
                     ("shadow-graph", shadow_graph), ("shadow-cost", shadow_cost)):
        run_check(name, fn)
    failed = [n for n, ok in RESULTS if not ok]
    print(f"{len(RESULTS) - len(failed)} passed, {len(failed)} failed" + (f" ({', '.join(failed)})" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
