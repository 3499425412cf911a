#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""ctest (label model): capture files of a model's verify calls (vattn.model_capture), from CPU tensors.

The kernel is CUDA-only, so the verify call here is a tiny DeepSeek-V3 model's, in the absorbed form
(vattn.mla_absorb; its prefix from spec_decode.prefill), with the float64 reference rounded to bf16 in
the kernel's place. It goes through the path scripts/device/model_loop.py takes on the GPU: a
vattn.torch Recorder (on CPU tensors) writes the file with describe_model's header, then
model_capture.finish adds the float64 oracle and writes it where captures go. Checked:
1. the finished file: source, model (architecture, seed), notes (JSON: configuration, seed, the loop's
   settings), the case's layer and step, outputs serving (bf16) and oracle_fp64 (float32), P <= 4096;
2. `vattn replay` passes it: the stored oracle against the recomputed one, serving against the oracle;
3. a stored oracle that is off by 1e-4 fails replay (the stored oracle is checked, not trusted);
4. finish never overwrites (a second finish of the same file gets -1) and refuses a file that already
   holds an oracle.

usage: test_model_capture.py --vattn PATH/TO/vattn --root REPO
"""

import json
import os
import subprocess
import tempfile

import numpy as np

from package_checks import arguments, check, finish


def main():
    a = arguments()
    import torch

    import vattn
    import vattn.torch as vt
    from vattn import model_capture as mc
    from vattn import spec_decode as sd

    torch.set_grad_enabled(False)
    seed, B, T = 5, 2, 6
    cfg, model = sd.build_model(seed=seed, layers=2, hidden=48, q_lora_rank=24, intermediate=64, vocab=211,
                                dtype=torch.bfloat16)
    rng = np.random.default_rng(seed)
    prompts = [rng.integers(0, 211, n).tolist() for n in (41, 23)]
    lens = np.array([40, 22])
    pre = sd.prefill(model, prompts, lens, torch.bfloat16, "cpu", chunk=16)
    drafter = sd.Drafter(model, T, 3)
    trees = sd.Trees([drafter.tree(p) for p in prompts])
    slots = rng.permutation(B * 64).reshape(B, 64)
    model_line, notes = mc.describe_model(cfg, seed, prompts=[41, 23], tree=T, generator="test_model_capture.py")

    with tempfile.TemporaryDirectory() as tmp:
        rec = vt.Recorder(os.path.join(tmp, "rec"), max_requests=B, max_total_drafts=B * T, max_drafts_per_request=T,
                          num_heads=8, max_kv_tokens=slots.size, device="cpu", source="capture:model-loop",
                          model=model_line, notes=notes, gpu="cpu", layers=[1],
                          description="the float64 reference rounded to bf16 (a CPU test)")
        be = sd.VattnBackend(model, B, T, slots, None, "cpu", recorder=rec)
        for l in range(2):
            for b in range(B):
                be.set_prefix(l, b, pre.rows(l, b, 0, int(lens[b])))
        run = sd.Runner(model, be, B, T, "cpu", graph=False)
        run.load(lens, trees)
        run.run()
        stats = rec.close()
        src = sorted(os.listdir(os.path.join(tmp, "rec")))
        check(src == ["step000000_layer01_tp0.h5"] and stats["written"] == 1, f"the recorder wrote {src}")
        src = os.path.join(tmp, "rec", src[0])
        dst_dir = os.path.join(tmp, "captured")
        path = mc.finish(src, dst_dir)
        check(os.path.basename(path) == "step000000_layer01_tp0.h5", f"finish wrote {path}")
        f = vattn.read(path)
        h, c = f.header, f.cases[0]
        check(h.source == "capture:model-loop", f"source: {h.source}")
        check("DeepseekV3ForCausalLM" in h.optional.get("model", "") and f"manual_seed({seed})" in h.optional["model"],
              f"model names the architecture and the seed: {h.optional.get('model')}")
        n = json.loads(h.optional.get("notes", "{}"))
        conf = n.get("config", {})
        check(n.get("seed") == seed and conf.get("kv_lora_rank") == 512 and conf.get("qk_rope_head_dim") == 64
              and conf.get("qk_nope_head_dim") == 128 and conf.get("v_head_dim") == 128
              and conf.get("num_attention_heads") == 8 and conf.get("rope_parameters", {}).get("factor") == 32.0
              and n.get("prompts") == [41, 23], f"notes hold the configuration, the seed and the loop's settings: {n}")
        check("oracle_fp64 by vattn.model_capture" in h.generator, f"generator: {h.generator}")
        check(c.int_attrs.get("layer") == 1 and c.int_attrs.get("step") == 0, f"case attributes {c.int_attrs}")
        prods = {o.producer: o for o in c.outputs}
        check(sorted(prods) == ["oracle_fp64", "serving"] and prods["oracle_fp64"].out.dtype == np.float32
              and prods["serving"].out.dtype == np.uint16 and prods["oracle_fp64"].lse is not None,
              f"outputs serving (bf16) and oracle_fp64 (float32): {sorted(prods)}")
        P = int(c.kv_indptr[-1])
        check(P == int(lens.sum()) and P <= 4096 and c.d_qk == 576 and c.num_heads == 8,
              f"P = {P} prefix tokens, d_qk {c.d_qk}, {c.num_heads} heads")
        pr = subprocess.run([a.vattn, "replay", path], capture_output=True, text=True)
        check(pr.returncode == 0 and "replay: 2 passed, 0 failed" in pr.stdout,
              f"vattn replay passes the finished file (exit {pr.returncode}: "
              f"{[ln for ln in pr.stdout.splitlines() if ln.startswith('replay:')]})")

        # A wrong stored oracle is caught.
        bad = vattn.read(path)
        for o in bad.cases[0].outputs:
            if o.producer == "oracle_fp64":
                o.out = (o.out * np.float32(1 + 1e-4)).astype(np.float32)
        bad_path = os.path.join(tmp, "bad.h5")
        vattn.write(bad_path, bad.header, bad.cases)
        pr = subprocess.run([a.vattn, "replay", bad_path], capture_output=True, text=True)
        check(pr.returncode == 1, f"vattn replay fails a stored oracle off by 1e-4 (exit {pr.returncode})")

        # Nothing overwritten; an oracle is added once.
        again = mc.finish(src, dst_dir)
        check(os.path.basename(again) == "step000000_layer01_tp0-1.h5", f"a second finish writes {again}")
        try:
            mc.finish(path, os.path.join(tmp, "third"))
            refused = False
        except ValueError as e:
            refused = "already holds oracle_fp64" in str(e)
        check(refused, "finish refuses a file that already holds oracle_fp64")
    return finish()


if __name__ == "__main__":
    raise SystemExit(main())
