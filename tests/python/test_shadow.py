#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""ctest (label torch): shadow mode (python/src/vattn/shadow.py) and the tolerance model in torch
ops (torch_tolerance.py), on CPU tensors.

1. judge_reference against vattn's own tolerance model: one call stored with producers that are
   right (the torch reference rounded to bf16) and planted wrong (an element pushed over its
   bound, a NaN, an lse moved, an empty row's -inf made NaN, every value scaled by 1.01); for
   each, the keys judge_reference raises are the keys `vattn replay --json` reports (its ratio
   check aside, which shadow mode does not run), and the worst err/bound figures agree.
2. judge_peer: a result agrees with itself and with another result inside the model; a head
   swapped, a NaN and an lse moved are caught.
3. Shadow end to end (second = the reference, with a stand-in for the plan): a right call is
   judged and not written; a planted fault is written at once, with a warning, holding both
   outputs, and `vattn replay` of the file fails the serving output and passes the reference's.
4. Sampling follows random.Random(seed); layers not asked for are never fired.
5. bench_idle() and `python3 -m vattn.shadow --bench-idle` print the cost of a call that does
   not fire.

usage: test_shadow.py --vattn PATH/TO/vattn --root REPO
"""

import json
import math
import os
import random
import subprocess
import sys
import tempfile
import types
import warnings

import numpy as np

from package_checks import arguments, check, finish


def main():
    a = arguments()
    import torch

    from torch_calls import ARGS, make_call, outputs_of
    from vattn import Output
    from vattn import torch_tolerance as tt
    from vattn.abi_case import case_from_abi
    from vattn.capture_sink import CaptureWarning
    from vattn.casefile import Header, write
    from vattn.shadow import Shadow

    def bits(t):
        return t.contiguous().view(torch.int16).numpy().view(np.uint16)

    call = make_call(7, P=(0, 61, 9), T=(6, 3, 35), H=4)  # request 0: no prefix, a padded node
    out, lse, ref, ix = outputs_of(call)
    n_q, H = out.shape[:2]
    d_qk = 576

    # 1. judge_reference against vattn replay, fault by fault.
    o64 = ref.out
    big = int(torch.argmax(o64.abs().flatten()))
    over = out.flatten().clone()
    x = float(o64.flatten()[big])
    bound = 3 * (1 / 256) * float(ref.abs_pv.flatten()[big]) + (1 / 256) * abs(x)
    over[big] = x + 3 * bound * (1 if x >= 0 else -1)
    nan_out = out.flatten().clone()
    nan_out[17] = float("nan")
    lse_moved = lse.clone()
    lse_moved[2, 1] += 1e-3
    empties = np.nonzero(ix.n_keys() == 0)[0]  # request 0's padded node: no key at all (out 0, lse -inf)
    lse_nan = lse.clone()
    if empties.size:
        lse_nan[int(empties[0]), 0] = float("nan")
    faults = {
        "right": (out, lse),
        "over_bound": (over.reshape(out.shape), lse),
        "nan_out": (nan_out.reshape(out.shape), lse),
        "lse_moved": (out, lse_moved),
        "scaled": ((out.double() * 1.01).to(torch.bfloat16), lse),
    }
    if empties.size:
        faults["empty_lse_nan"] = (out, lse_nan)
    check(empties.size > 0, f"the call has an empty row: rows {empties[:3]}")
    judged = {}
    for name, (o, l) in faults.items():
        v = tt.judge_reference(o, l, ref, d_qk)
        flags = int(v[0])
        judged[name] = ({k for k, b in tt.CHECKS.items() if flags & b}, float(v[2]), float(v[5]))
    with tempfile.TemporaryDirectory() as tmp:
        outputs = [Output(name, f"test fault {name}", bits(o), l.numpy()) for name, (o, l) in faults.items()]
        case = case_from_abi("judge", float(np.float32(call["sm_scale"])), bits(call["q"]),
                             bits(call["kv_pool"][torch.as_tensor(ix.kv_indices)]), ix.kv_indices, ix.kv,
                             bits(call["kv_draft"]), ix.qo, ix.mask_bits, ix.mwi, outputs, {})
        path = os.path.join(tmp, "judge.h5")
        write(path, Header(source="synthetic:test_shadow", generator="tests/python/test_shadow.py"), [case])
        report = os.path.join(tmp, "r.json")
        subprocess.run([a.vattn, "replay", path, "--json", report], capture_output=True, text=True)
        with open(report) as f:
            results = {r["producer"].split(" ")[0]: r for r in json.load(f)["results"]}
        for name, (keys, worst, lse_worst) in judged.items():
            r = results.get(name)
            if r is None:
                check(False, f"{name}: vattn replay reported it")
                continue
            theirs = {f.split(":")[0] for f in r["failures"]} - {"ratio"}
            same_worst = math.isclose(worst, r["worst_err_over_bound"], rel_tol=1e-3, abs_tol=1e-6)
            same_lse = math.isclose(lse_worst, r["lse_worst_err_over_bound"], rel_tol=1e-3, abs_tol=1e-6)
            check(keys == theirs and same_worst and same_lse,
                  f"{name}: judge_reference {sorted(keys) or 'agree'} (err/bound {worst:.4g}, lse {lse_worst:.4g}); "
                  f"vattn replay {sorted(theirs) or 'pass'} ({r['worst_err_over_bound']:.4g}, "
                  f"{r['lse_worst_err_over_bound']:.4g})")
        check(judged["right"][0] == set() and all(judged[k][0] for k in judged if k != "right"),
              "the right output agrees and every planted fault is caught")

        # 2. judge_peer.
        bounds = tt.peer_bounds(call["q"], call["kv_pool"], call["kv_draft"], ix, float(np.float32(call["sm_scale"])), 512)
        g = torch.Generator().manual_seed(3)
        ub = 0.4 * ((3 / 256) * ref.abs_pv + (1 / 256) * ref.out.abs())
        near = (ref.out + ub * (2 * torch.rand(ref.out.shape, generator=g, dtype=torch.float64) - 1)).to(torch.bfloat16)
        swapped = out.clone()
        swapped[:, [0, 1]] = out[:, [1, 0]]

        def peer(o2, l2):
            v = tt.judge_peer(out, lse, o2, l2, bounds, d_qk)
            return {k for k, b in tt.CHECKS.items() if int(v[0]) & b}

        check(peer(out, lse) == set() and peer(near, lse) == set(),
              "judge_peer: a result agrees with itself and with another inside the model")
        check(peer(swapped, lse) == {"out_bound"}, f"two heads swapped: {peer(swapped, lse)}")
        check(peer(nan_out.reshape(out.shape), lse) == {"nonfinite"}, "a NaN: nonfinite")
        check(peer(out, lse + 1e-2) == {"lse_bound"}, f"lse moved by 1e-2: {peer(out, lse + 1e-2)}")

        # 3. Shadow end to end, the reference as the second computation.
        d = os.path.join(tmp, "shadow")
        sh = Shadow(d, sample_rate=1.0, start_writer=False, gpu="no GPU (CPU tensors)")
        stand_in = types.SimpleNamespace(revision="stand-in")
        sh.bind(stand_in)
        args = [call[k] for k in ARGS]
        check(sh.observe(stand_in, 3, *args, out, lse, sm_scale=call["sm_scale"]), "a call fires at sample_rate 1")
        sh.write_pending()
        st = sh.stats()
        check(st["agreed"] == 1 and st["written"] == 0 and not os.listdir(d), f"a right call is judged, not written: {st}")
        bad_out = faults["over_bound"][0]
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            sh.observe(stand_in, 3, *args, bad_out, lse, sm_scale=call["sm_scale"])
            sh.write_pending()
            msgs = [str(w.message) for w in seen if issubclass(w.category, CaptureWarning)]
        files = sorted(os.listdir(d))
        st = sh.close()
        check(st["disagreed"] == 1 and st["written"] == 1 and files == ["call000000002_layer03_tp0.h5"]
              and any("out_bound" in m and "written to" in m for m in msgs),
              f"a planted fault is written at once, with a warning: {files}, {msgs}, {st}")
        if files:
            from vattn import read

            f = read(os.path.join(d, files[0]))
            c = f.cases[0]
            prods = sorted(o.producer for o in c.outputs)
            check(prods == ["reference_torch_fp64", "serving"] and "out_bound" in f.header.optional.get("notes", "")
                  and f.header.source == "capture:shadow", f"both outputs, the verdict in notes: {prods}, {f.header}")
            p = subprocess.run([a.vattn, "replay", os.path.join(d, files[0])], capture_output=True, text=True)
            lines = {ln.split()[1]: ln for ln in p.stdout.splitlines() if ln.startswith("call0")}
            check(p.returncode == 1 and " FAIL " in lines.get("serving", "") and " PASS " in lines.get(
                "reference_torch_fp64", ""), f"vattn replay fails serving and passes the reference (exit {p.returncode}):"
                                             f"\n{p.stdout[-800:]}")

        # 4. Sampling.
        sh = Shadow(os.path.join(tmp, "s"), sample_rate=0.3, seed=5, layers={1}, start_writer=False, queue_size=64)
        sh.bind(stand_in)
        small = make_call(8, P=(3,), T=(2,), H=4)
        so, sl, _, _ = outputs_of(small)
        fired = [i for i in range(60) if sh.observe(stand_in, i % 2, *[small[k] for k in ARGS], so, sl,
                                                    sm_scale=small["sm_scale"])]
        draw = random.Random(5).random
        want = [i for i in range(60) if i % 2 == 1 and draw() < 0.3]
        check(fired == want and sh.stats()["fired"] == len(want) and len(want) > 3,
              f"layer 1 only, sampled by random.Random(5) at 0.3: fired {fired}")
        sh.close()

    # 5. The cost of a call that does not fire.
    res = Shadow.__module__ and __import__("vattn.shadow", fromlist=["bench_idle"]).bench_idle(iters=20000, repeats=2)
    check(set(res) == {"sample_rate=0", "sample_rate=1e-9", "plain method call"} and all(0 < v < 1e-3 for v in res.values()),
          "bench_idle: " + ", ".join(f"{k} {v * 1e9:.0f} ns" for k, v in res.items()))
    p = subprocess.run([sys.executable, "-m", "vattn.shadow", "--bench-idle"], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=a.src))
    check(p.returncode == 0 and p.stdout.count("ns per call") == 3, f"python3 -m vattn.shadow --bench-idle:\n{p.stdout}")
    print(p.stdout, end="")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
