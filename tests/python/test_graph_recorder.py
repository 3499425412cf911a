#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""ctest (label torch): vattn.torch's Recorder (python/src/vattn/graph_recorder.py) on CPU tensors.

The device half runs the same torch ops on the CPU, so everything but the CUDA graph itself is
checked here (scripts/device/torch_op_check.py records inside a captured graph on the GPU):
1. record() enqueues only in-place ops, `out=` ops and views: no allocation, no host read
   (a TorchDispatchMode sees every aten op it issues);
2. the device-side selection (steps as a range, as a set, every step; sampling rates with a
   seed) keeps exactly the replays the host rule (Recorder.selects) names;
3. "replays": successive calls written into the same static tensors (other lengths, indices,
   masks), recorded each step, drained: each file holds that step's call exactly (q, the
   referenced rows by slot, the mask, outputs with lse) and `vattn replay` holds its output
   to the oracle;
4. what cannot be stored is counted and warned about when the host learns it: a call too big
   for the slots at record(), a prefix over max_kv_tokens and ring slots overwritten before
   drain() at drain(); the byte cap; a taken file name is not overwritten.

usage: test_graph_recorder.py --vattn PATH/TO/vattn --root REPO
"""

import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np

from package_checks import arguments, check, finish


def main():
    a = arguments()
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    import vattn
    from torch_calls import ARGS, StaticCall, make_call, outputs_of
    from vattn.capture_sink import CaptureWarning
    from vattn.torch import Recorder

    H, B = 3, 3
    lim = dict(max_requests=4, max_total_drafts=48, max_drafts_per_request=40, num_heads=H)

    def rec_for(d, **kw):
        kw.setdefault("max_kv_tokens", 80)
        return Recorder(d, device="cpu", **dict(lim, **kw))

    with tempfile.TemporaryDirectory() as tmp:
        # 1. record(): only in-place, out= and view ops.
        call = make_call(1)
        out, lse, _ref, _ix = outputs_of(call)
        rec = rec_for(os.path.join(tmp, "ops"))
        rec.begin_step()

        class Ops(TorchDispatchMode):
            def __init__(self):
                super().__init__()
                self.seen = []

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                self.seen.append(func)
                return func(*args, **(kwargs or {}))

        views = {"unsqueeze", "slice", "select", "view", "reshape", "_reshape_alias", "alias", "as_strided", "detach"}
        with Ops() as ops:
            rec.record(0, *[call[k] for k in ARGS], out, lse, call["sm_scale"])
        bad = []
        for f in ops.seen:
            base, overload = f.__name__.split(".")[0], f._overloadname
            if not (base.endswith("_") or overload.endswith("out") or base in views):
                bad.append(str(f))
        check(len(ops.seen) > 20 and not bad, f"record() issues {len(ops.seen)} aten ops, all in place, out= or views "
                                              f"(no allocation, no host read): {bad}")
        rec.close()

        # 2. The device's selection is the host's rule.
        for steps in (None, range(3, 40, 4), {0, 5, 6, 17, 33}):
            for rate, seed in ((1.0, 0), (0.37, 11)):
                rec = rec_for(os.path.join(tmp, "sel"), steps=steps, sample_rate=rate, seed=seed, slots=64, layers={0, 2},
                              start_writer=False)
                small = make_call(2, P=(3,), T=(2,))
                o, l, _, _ = outputs_of(small)
                kept_dev, kept_host = [], []
                for step in range(45):
                    rec.begin_step()
                    for layer in (0, 1, 2):
                        before = int(rec.head.item())
                        rec.record(layer, *[small[k] for k in ARGS], o, l, small["sm_scale"])
                        if int(rec.head.item()) > before:
                            kept_dev.append((step, layer))
                        if rec.selects(step, layer):
                            kept_host.append((step, layer))
                rec._closed = True  # nothing to write: only the decisions are compared
                check(kept_dev == kept_host and (rate == 1.0 or 0 < len(kept_dev) < 90),
                      f"steps {steps}, sample_rate {rate}: the device kept {len(kept_dev)} calls, the host rule "
                      f"{len(kept_host)}{'' if kept_dev == kept_host else f': {kept_dev[:6]} vs {kept_host[:6]}'}")

        # 3. Replays over one set of static tensors; every kept step drained to its own file.
        d = os.path.join(tmp, "replay")
        st = StaticCall(B, lim["max_total_drafts"], H, 300, 100, 200)
        rec = rec_for(d, slots=3, steps=range(0, 100, 2), gpu="no GPU (CPU tensors)", model="torch_calls stand-in")
        calls = [make_call(10 + s, P=(int(5 + 7 * s), s % 3, 11), T=(1 + s % 5, 2, 33 - s)) for s in range(6)]
        written_steps = []
        for s, c in enumerate(calls):
            o, l, _, _ = outputs_of(c)
            st.load(c, o, l)
            rec.begin_step()
            rec.record(4, *st.args(), c["sm_scale"])
            if s % 2 == 0:
                written_steps.append(s)
            if s in (3, 5):
                rec.drain()  # the host side, between "replays"
        stats = rec.close()
        files = sorted(os.listdir(d))
        check(files == [f"step{s:06d}_layer04_tp0.h5" for s in written_steps] and stats["written"] == 3,
              f"the even steps, one file each: {files}, {stats}")
        for s in written_steps:
            c = calls[s]
            path = os.path.join(d, f"step{s:06d}_layer04_tp0.h5")
            case = vattn.read(path).cases[0]
            n_q = int(c["qo_indptr"][-1])
            used = c["kv_indices"][: int(c["kv_indptr"][-1])].numpy()
            q_bits = c["q"].view(torch.int16).numpy().view(np.uint16)
            pool_bits = c["kv_pool"].view(torch.int16).numpy().view(np.uint16)
            want_mask = np.concatenate([m.astype(np.uint8).ravel() for m in c["masks"]])
            o, l, _, _ = outputs_of(c)
            serving = [x for x in case.outputs if x.producer == "serving"]
            ok = (np.array_equal(case.q, q_bits[:n_q]) and np.array_equal(case.kv_slot_ids[case.kv_indices], used)
                  and np.array_equal(case.kv_pool, pool_bits[case.kv_slot_ids])
                  and np.array_equal(case.draft_mask, want_mask) and case.int_attrs == {"layer": 4, "step": s, "tp_rank": 0}
                  and len(serving) == 1 and serving[0].lse is not None
                  and np.array_equal(serving[0].out, o.view(torch.int16).numpy().view(np.uint16))
                  and np.array_equal(serving[0].lse, l.numpy()) and abs(case.sm_scale - np.float32(0.1352)) < 1e-12)
            check(ok, f"step {s}: the file holds that step's call exactly (q, rows by slot, mask, out, lse, sm_scale)")
        p = subprocess.run([a.vattn, "replay", *[os.path.join(d, f) for f in files]], capture_output=True, text=True)
        check(p.returncode == 0 and p.stdout.count("serving (stored)") == 3, f"vattn replay holds each recorded output "
                                                                             f"to the oracle (exit {p.returncode}):\n"
                                                                             f"{p.stdout[-1500:]}{p.stderr[-500:]}")

        # 4. What cannot be stored, reported when the host learns it.
        d = os.path.join(tmp, "skips")
        rec = rec_for(d, slots=2, max_kv_tokens=30, start_writer=False)
        big = make_call(40, P=(20,), T=(50,))  # 50 rows: over max_total_drafts 48
        o, l, _, _ = outputs_of(big)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            rec.begin_step()
            took = rec.record(0, *[big[k] for k in ARGS], o, l, big["sm_scale"])
            at_record = [str(w.message) for w in seen if issubclass(w.category, CaptureWarning)]
        check(not took and rec.stats()["skipped_shape"] == 1 and len(at_record) == 1 and "does not fit" in at_record[0],
              f"a call too big for the slots: refused and warned at record(): {at_record}")
        long = make_call(41, P=(25, 10), T=(3, 2))  # 35 prefix tokens, the slots hold 30
        fine = make_call(42, P=(4,), T=(2,))
        for c in (long, fine, fine, fine, fine):  # five kept replays into two slots
            o, l, _, _ = outputs_of(c)
            rec.begin_step()
            rec.record(0, *[c[k] for k in ARGS], o, l, c["sm_scale"])
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            rec.drain()
            at_drain = [str(w.message) for w in seen if issubclass(w.category, CaptureWarning)]
        check(rec.stats()["skipped_overwritten"] == 3 and any("overwritten" in m for m in at_drain),
              f"three kept replays lost to a two-slot ring: counted and warned at drain(): {at_drain}")
        rec2 = rec_for(os.path.join(tmp, "kvcap"), max_kv_tokens=30, start_writer=False)
        o, l, _, _ = outputs_of(long)
        rec2.begin_step()
        rec2.record(0, *[long[k] for k in ARGS], o, l, long["sm_scale"])
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            rec2.drain()
            msgs = [str(w.message) for w in seen if issubclass(w.category, CaptureWarning)]
        check(rec2.stats()["skipped_kv_cap"] == 1 and any("35 tokens" in m and "max_kv_tokens" in m for m in msgs),
              f"a call whose prefixes pass max_kv_tokens: counted and warned at drain(): {msgs}")
        rec2.close()
        st2 = rec.close()
        check(st2["written"] == 2, f"the two records still in the ring are written: {st2}")

        d = os.path.join(tmp, "cap")
        os.makedirs(d)
        with open(os.path.join(d, "step000000_layer00_tp0.h5"), "w") as fo:
            fo.write("not ours")
        rec = rec_for(d, max_total_bytes=100 << 10, start_writer=False)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            for c in (fine, fine):
                o, l, _, _ = outputs_of(c)
                rec.begin_step()
                rec.set_step(0)
                rec.record(0, *[c[k] for k in ARGS], o, l, c["sm_scale"])
            rec.drain()
            msgs = [str(w.message) for w in seen if issubclass(w.category, CaptureWarning)]
        st3 = rec.close()
        with open(os.path.join(d, "step000000_layer00_tp0.h5")) as fo:
            kept = fo.read()
        check(st3["written"] == 1 and st3["skipped_total_cap"] == 1 and any("max_total_bytes" in m for m in msgs),
              f"max_total_bytes: the second record is refused and warned about: {st3}")
        check(kept == "not ours" and os.path.exists(os.path.join(d, "step000000_layer00_tp0-1.h5")),
              f"a taken name is left alone: {sorted(os.listdir(d))}")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
