#!/usr/bin/env python3
"""ctest: vattn.capture (python/src/vattn/capture.py) driven by a stand-in for SGLang's call.

The stand-in is one target_verify extend-attention call of an MLA model on host arrays (bf16
bits): two requests sharing part of their prefix, tree masks, a pool with rows nobody
references and an over-allocated kv_indices, and the "server's" output computed here in float64
and rounded to bf16. Checked:
1. every field the hook writes (q, the referenced rows only, their slots, remapped indices,
   indptrs, the draft masks cut from the custom mask, outputs/serving without lse, layer, step,
   tp_rank, source, model, gpu, notes), and that `vattn replay` holds the file (serving: no lse);
2. steps and layers not asked for are not captured; a full queue, a case over the size cap, a
   prefix that is not fully visible and a v_buffer that is not k_buffer's first 512 columns are
   skipped and counted, and serving goes on; a call that cannot be stored (that prefix, a kv
   index outside k_buffer) makes submit() return False and warn at that moment;
   max_total_bytes counts calls still queued; an existing file of the same name is never
   overwritten (numbered names instead);
3. install() on a stand-in backend class (SGLang's method names and argument order) captures
   the chosen step and layer of target_verify passes only and uninstall() restores it; without
   SGLang, install() says so.

usage: test_capture.py --vattn PATH/TO/vattn --root REPO
"""

import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np

from package_checks import arguments, check, finish


def bits(x):
    from vattn import float32_to_bf16
    return float32_to_bf16(np.asarray(x, np.float32))


def stand_in(rng, prefix=(37, 20), T=4, H=3, slots=500, shared=10):
    """The arguments of one extend-attention call in target_verify mode, as SGLang passes them."""
    from vattn import bf16_to_float32
    B = len(prefix)
    k_buffer = bits(rng.normal(0, 0.5, (slots, 1, 576)))
    v_buffer = k_buffer[..., :512]  # a view: SGLang's MLA value buffer is the key buffer's first 512 columns
    idx, firsts = [], None
    for b, p in enumerate(prefix):
        own = rng.choice(slots, p, replace=False)
        if b > 0:  # requests share a prefix (a radix cache): the same slots twice
            own[:shared] = firsts[:shared]
        firsts = own if b == 0 else firsts
        idx.append(own)
    kv_indptr = np.concatenate([[0], np.cumsum(prefix)]).astype(np.int32)
    kv_indices = np.concatenate(idx + [np.full(25, 7, np.int64)])  # over-allocated, like SGLang's
    qo_indptr = np.arange(0, (B + 1) * T, T, dtype=np.int32)
    n_q = B * T
    q = bits(rng.normal(0, 1, (n_q, H, 576)))
    k_extend = bits(rng.normal(0, 0.5, (n_q, 1, 576)))
    trees = [np.tril(np.ones((T, T), bool)), np.eye(T, dtype=bool) | (np.arange(T)[None, :] == 0)]
    masks, mask_indptr = [], [0]
    for b, p in enumerate(prefix):
        m = np.concatenate([np.ones((T, p), bool), trees[b % 2]], axis=1)
        masks.append(m.ravel())
        mask_indptr.append(mask_indptr[-1] + m.size)
    custom_mask = np.concatenate(masks)
    sm_scale = 0.1352
    # The "server's" output: float64 attention rounded to bf16.
    K = bf16_to_float32(k_buffer.reshape(slots, 576)).astype(np.float64)
    D = bf16_to_float32(k_extend.reshape(n_q, 576)).astype(np.float64)
    Q = bf16_to_float32(q).astype(np.float64)
    o = np.zeros((n_q, H, 512))
    for b, p in enumerate(prefix):
        keys = np.concatenate([K[idx[b]], D[qo_indptr[b]:qo_indptr[b + 1]]])
        for i in range(T):
            vis = np.concatenate([np.ones(p, bool), trees[b % 2][i]])
            s = Q[qo_indptr[b] + i] @ keys[vis].T * sm_scale
            w = np.exp(s - s.max(axis=1, keepdims=True))
            o[qo_indptr[b] + i] = (w / w.sum(axis=1, keepdims=True)) @ keys[vis][:, :512]
    args = dict(q=q, k_extend=k_extend, k_buffer=k_buffer, qo_indptr=qo_indptr, kv_indptr=kv_indptr,
                kv_indices=kv_indices, custom_mask=custom_mask, mask_indptr=np.asarray(mask_indptr, np.int64),
                sm_scale=sm_scale, o=bits(o), v_buffer=v_buffer)
    return args, trees, idx


def run(argv):
    p = subprocess.run(argv, capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def main():
    a = arguments()
    import vattn
    from vattn import capture

    rng = np.random.default_rng(5)
    args, trees, idx = stand_in(rng)
    with tempfile.TemporaryDirectory() as tmp:
        # 1. One captured call, every field.
        cap = capture.Capture(os.path.join(tmp, "c"), steps={5}, layers={3}, model="stand-in model", gpu="no GPU",
                              notes="a stand-in call (tests/python/test_capture.py)", tp_rank=1, description="stand-in")
        check(not cap.submit(4, 3, **args), "a step not asked for is not captured")
        check(not cap.submit(5, 2, **args), "a layer not asked for is not captured")
        check(cap.submit(5, 3, **args), "the chosen step and layer are queued")
        st = cap.close()
        check(st["written"] == 1 and st["captured"] == 1 and st["offered"] == 3, f"stats: {st}")
        path = os.path.join(tmp, "c", "step000005_layer03_tp1.h5")
        check(os.path.exists(path), "one file per call, named by step, layer and rank")
        f = vattn.read(path)
        c = f.cases[0]
        slots = np.unique(args["kv_indices"][: args["kv_indptr"][-1]])
        check(c.name == "step000005_layer03", f"case name {c.name}")
        check(f.header.source == "capture:sglang", "source capture:sglang")
        check(f.header.optional.get("model") == "stand-in model" and f.header.optional.get("gpu") == "no GPU"
              and "stand-in call" in f.header.optional.get("notes", ""), f"model, gpu, notes: {f.header.optional}")
        check(c.int_attrs == {"layer": 3, "step": 5, "tp_rank": 1}, f"layer, step, tp_rank: {c.int_attrs}")
        check(c.num_heads == 3 and abs(c.sm_scale - 0.1352) < 1e-12, "num_heads and sm_scale")
        check(np.array_equal(c.q, args["q"]), "q as the server had it")
        check(np.array_equal(c.kv_slot_ids, slots), f"kv_slot_ids: the {len(slots)} distinct referenced slots")
        check(c.kv_pool.shape == (len(slots), 576) and np.array_equal(c.kv_pool, args["k_buffer"][slots, 0]),
              "kv_pool holds only the referenced rows, in slot order (not the 500-row pool)")
        check(np.array_equal(c.kv_slot_ids[c.kv_indices], np.concatenate(idx)),
              "kv_indices address the same slots (shared prefix rows stored once)")
        check(np.array_equal(c.kv_indptr, args["kv_indptr"]) and np.array_equal(c.qo_indptr, args["qo_indptr"]),
              "kv_indptr and qo_indptr")
        check(np.array_equal(c.kv_draft, args["k_extend"][:, 0]), "kv_draft is k_extend")
        want_mask = np.concatenate([t.astype(np.uint8).ravel() for t in trees])
        check(np.array_equal(c.draft_mask, want_mask) and list(c.draft_mask_indptr) == [0, 16, 32],
              "draft_mask: each request's T_b x T_b draft block of the custom mask")
        o = [x for x in c.outputs if x.producer == "serving"]
        check(len(o) == 1 and o[0].lse is None and np.array_equal(o[0].out, args["o"]) and o[0].description == "stand-in",
              "outputs/serving: the server's out, no lse")
        code, out = run([a.vattn, "replay", path])
        served = [l for l in out.splitlines() if "serving (stored)" in l]
        check(code == 0 and len(served) == 1 and " PASS " in served[0] and "no lse" in served[0] and " 0 failed" in out,
              f"vattn replay holds serving to the oracle (exit {code}):\n{out}")
        code, out = run([a.vattn, "info", path])
        check(code == 0 and "source capture:sglang" in out, f"vattn info (exit {code})")

        # 2. Skips, counted; none stalls or raises.
        cap = capture.Capture(os.path.join(tmp, "q"), queue_size=1, start_writer=False)
        check(cap.submit(0, 0, **args) and not cap.submit(0, 1, **args), "a full queue: the second call is skipped")
        check(cap.stats()["skipped_queue_full"] == 1, "and counted")
        cap.drain()
        check(cap.stats()["written"] == 1, "drain() writes the queued one")
        cap = capture.Capture(os.path.join(tmp, "s"), max_case_bytes=10000)
        check(not cap.submit(0, 0, **args) and cap.close()["skipped_size"] == 1, "a case over max_case_bytes is skipped")
        bad = dict(args, custom_mask=args["custom_mask"].copy())
        bad["custom_mask"][0] = False  # request 0, draft 0 cannot see prefix key 0
        cap = capture.Capture(os.path.join(tmp, "m"))
        cap.submit(0, 0, **bad)
        st = cap.close()
        check(st["written"] == 0 and st["skipped_unsupported"] == 1 and "prefix is not fully visible" in st["errors"][0],
              f"a prefix not fully visible is refused with the reason: {st['errors']}")
        cap = capture.Capture(os.path.join(tmp, "v"))
        check(not cap.submit(0, 0, **dict(args, v_buffer=args["k_buffer"][..., :512].copy())),
              "a v_buffer that is not k_buffer's first 512 columns is refused")
        check(cap.close()["skipped_unsupported"] == 1, "and counted")

        # 2b. A call that cannot be stored is refused by submit() itself, with a warning then.
        cap = capture.Capture(os.path.join(tmp, "w"), start_writer=False)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            queued = cap.submit(0, 0, **bad)
            warned = [str(w.message) for w in seen if issubclass(w.category, capture.CaptureWarning)]
        check(not queued and cap.stats()["captured"] == 0, "submit() returns False for a call it cannot store")
        check(len(warned) == 1 and "prefix is not fully visible" in warned[0] and "step 0 layer 0" in warned[0],
              f"and warns when it happens, naming the call and the reason: {warned}")
        outside = dict(args, kv_indices=args["kv_indices"].copy())
        outside["kv_indices"][3] = 500  # the pool has 500 rows
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            try:
                queued = cap.submit(0, 1, **outside)
            except Exception as e:  # the hook must refuse, never raise into serving
                queued = f"raised {type(e).__name__}: {e}"
        check(queued is False and any("outside k_buffer" in str(w.message) for w in seen),
              f"a kv index outside k_buffer is refused at submit() with the reason: {queued}")
        cap.close()

        # 2c. max_total_bytes counts what is queued, not only what is written.
        probe = capture.Capture(os.path.join(tmp, "t0"), start_writer=False)
        probe.submit(0, 0, **args)
        one = probe.stats()["reserved_bytes"]
        probe.close()
        cap = capture.Capture(os.path.join(tmp, "t"), start_writer=False, queue_size=8, max_total_bytes=one + one // 2)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            first, second = cap.submit(0, 0, **args), cap.submit(0, 1, **args)
        check(one > 0 and first and not second and cap.stats()["skipped_total_cap"] == 1
              and any("max_total_bytes" in str(w.message) for w in seen),
              f"the second call would pass max_total_bytes while the first is still queued: refused and warned "
              f"({first}, {second}, {cap.stats()})")
        st = cap.close()
        check(st["written"] == 1 and st["bytes_written"] <= one + one // 2 and len(os.listdir(os.path.join(tmp, "t"))) == 1,
              f"one file written, within the cap: {st}")

        # 2d. Never over an existing file: a taken name gets a numbered one.
        d = os.path.join(tmp, "n")
        os.makedirs(d)
        precious = os.path.join(d, "step000005_layer03_tp1.h5")
        with open(precious, "wb") as fo:
            fo.write(b"someone else's file")
        for _ in range(2):  # two captures into one folder, as after a server restart
            cap = capture.Capture(d, steps={5}, layers={3}, tp_rank=1)
            cap.submit(5, 3, **args)
            cap.close()
        with open(precious, "rb") as fo:
            kept = fo.read()
        names = sorted(os.listdir(d))
        check(kept == b"someone else's file", "an existing file of the same name is left as it was")
        check(names == ["step000005_layer03_tp1-1.h5", "step000005_layer03_tp1-2.h5", "step000005_layer03_tp1.h5"],
              f"each capture got its own name: {names}")
        check(all(vattn.read(os.path.join(d, n)).cases[0].name == "step000005_layer03" for n in names[:2]),
              "and both are whole case files")

        # 3. install() on a stand-in backend: SGLang's method names and argument order.
        class Mode:
            def __init__(self, verify):
                self.verify = verify

            def is_target_verify(self):
                return self.verify

        class Batch:
            def __init__(self, verify):
                self.forward_mode = Mode(verify)

        class Layer:
            def __init__(self, i):
                self.layer_id, self.scaling = i, args["sm_scale"]

        class Backend:
            calls = 0

            def forward_extend(self, q, k, v, layer, forward_batch, save_kv_cache=True):
                return self._forward_extend_kernel(layer, args["q"], args["k_extend"], None, args["o"], args["k_buffer"],
                                                   args["v_buffer"], args["qo_indptr"], args["kv_indptr"],
                                                   args["kv_indices"], args["custom_mask"], False, args["mask_indptr"], 4,
                                                   1.0, 1.0, layer.scaling)

            def _forward_extend_kernel(self, layer, *a, **k):
                Backend.calls += 1
                return "o"

        original = (Backend.forward_extend, Backend._forward_extend_kernel)
        cap = capture.install(os.path.join(tmp, "i"), backend_class=Backend, steps={1}, layers={2}, tp_rank=0)
        be = Backend()
        returned = []
        for verify in (False, True, True):  # an extend pass, then two verify passes over layers 0..3
            for layer in range(4):
                returned.append(be.forward_extend(None, None, None, Layer(layer), Batch(verify)))
        check(returned == ["o"] * 12, "serving gets the backend's result back on every call")
        st = cap.close()
        files = sorted(os.listdir(os.path.join(tmp, "i")))
        check(files == ["step000001_layer02_tp0.h5"] and st["written"] == 1,
              f"install(): only target_verify step 1 layer 2 is captured: {files}")
        check(Backend.calls == 12, "the backend ran every call")
        capture.uninstall(Backend)
        check((Backend.forward_extend, Backend._forward_extend_kernel) == original, "uninstall() restores the backend")
        try:
            import sglang  # noqa: F401
            have_sglang = True
        except ImportError:
            have_sglang = False
        if not have_sglang:
            try:
                capture.install(os.path.join(tmp, "x"))
                check(False, "install() without SGLang must refuse")
            except capture.CaptureError as e:
                check("SGLang is not importable" in str(e), f"install() without SGLang says so: {e}")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
# SPDX-License-Identifier: Apache-2.0
