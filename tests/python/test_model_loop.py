#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""ctest (label model): scripts/device/model_loop.py on the CPU (--device cpu: the float64 reference rounded
to bf16 stands in for the kernel, nothing is captured in a graph, times are eager), at a tiny size.

1. A whole run: the reference loop, the vattn loop with its kernel, logits and tokens checks, timing at
   two context lengths (the checks at each length), the recorder's files replayed by vattn, two capture
   files written: exit 0 and a PASS line for each check, the near-ties counted.
2. The same run with the absorbed form broken (each in its own run): the softmax scale without YaRN's
   mscale^2, q's RoPE part left unrotated. The logits check must fail and the script exit 1.
3. Usage errors exit 2 before anything is built.

usage: test_model_loop.py --vattn PATH/TO/vattn --root REPO
"""

import contextlib
import importlib.util
import io
import os
import re
import subprocess
import sys
import tempfile

from package_checks import arguments, check, finish

SIZE = ["--device", "cpu", "--layers", "2", "--hidden", "64", "--q-lora-rank", "32", "--intermediate", "128",
        "--vocab", "512", "--successor", "0.1", "--tree", "8", "--depth", "4", "--prompts", "61,37", "--steps", "6",
        "--record-every", "2", "--replays", "1"]


def load_script(root):
    spec = importlib.util.spec_from_file_location("model_loop", os.path.join(root, "scripts", "device", "model_loop.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main():
    a = arguments()
    script = os.path.join(a.root, "scripts", "device", "model_loop.py")
    with tempfile.TemporaryDirectory() as tmp:
        cap = os.path.join(tmp, "captures")
        pr = subprocess.run([sys.executable, script, *SIZE, "--contexts", "40,90", "--vattn", a.vattn, "--out", tmp,
                             "--capture-dir", cap], capture_output=True, text=True)
        out = pr.stdout
        print(out[-4000:] + pr.stderr[-2000:])
        check(pr.returncode == 0, f"model_loop.py --device cpu: exit {pr.returncode}")
        for name in ("kernel", "logits", "tokens", "timing", "recorder", "captures"):
            check(re.search(rf"^PASS {name}:", out, re.M) is not None, f"PASS {name}")
        check(re.search(r"^model_loop: 6 passed, 0 failed", out, re.M) is not None, "6 checks passed, none failed")
        check(re.search(r"\d+ of \d+ decisions were near-ties, \d+ of them went the other way", out) is not None,
              "the near-ties are counted")
        check(re.search(r"timing: context +90 x 2 requests.*kernel err/bound [0-9.e-]+, logits [0-9.e-]+ of their bound",
                        out) is not None, "timing checks the kernel and the logits at each length")
        check(re.search(r"PASS recorder: 4 files .* vattn replay \(stored outputs\): exit 0 \['replay: 4 passed, 0 failed'\]",
                        out) is not None, "the recorder's four files (steps 2 and 4, layers 0 and 1) pass vattn replay")
        files = sorted(os.listdir(cap)) if os.path.isdir(cap) else []
        check(len(files) == 2, f"two capture files: {files}")

        # The absorbed form broken: the logits check must catch it.
        def broken_scale(sd, ma):
            init = sd.VattnBackend.__init__

            def patched(self, *args, **kw):
                init(self, *args, **kw)
                self.sm_scale = 192 ** -0.5  # YaRN's mscale^2 left out
            sd.VattnBackend.__init__ = patched

        def unrotated_q(sd, ma):
            init = ma.AbsorbedAttention.__init__

            def patched(self, attn):
                init(self, attn)
                rope = self.rope
                self.rope = lambda q, k, cos, sin: (q, rope(q, k, cos, sin)[1])  # k rotated, q not
            ma.AbsorbedAttention.__init__ = patched

        for what, plant in (("sm_scale without mscale^2", broken_scale), ("q's RoPE part unrotated", unrotated_q)):
            import vattn.mla_absorb as ma
            import vattn.spec_decode as sd

            saved = (sd.VattnBackend.__init__, ma.AbsorbedAttention.__init__)
            plant(sd, ma)
            mod = load_script(a.root)
            buf = io.StringIO()
            try:
                with contextlib.redirect_stdout(buf):
                    code = mod.main([*SIZE, "--steps", "3", "--contexts", "", "--vattn", a.vattn, "--out", tmp])
            finally:
                sd.VattnBackend.__init__, ma.AbsorbedAttention.__init__ = saved
            text = buf.getvalue()
            figures = re.search(r"^(FAIL|PASS) logits:.*(worst ratio [0-9.e+-]+ \(step \d+\), \d+ over)", text, re.M)
            check(code == 1 and figures is not None and figures.group(1) == "FAIL",
                  f"planted ({what}): exit {code}, " + (f"{figures.group(1)} logits, {figures.group(2)}" if figures
                                                        else "no logits line"))

        for args, why in ((["--batch", "3"], "--prompts gives 2 lengths for --batch 3"),
                          (["--contexts", "4k"], "expected integers separated by commas")):
            pr = subprocess.run([sys.executable, script, *SIZE, *args], capture_output=True, text=True)
            check(pr.returncode == 2 and why in pr.stderr, f"{' '.join(args)}: exit {pr.returncode}, '{why}'")
    return finish()


if __name__ == "__main__":
    raise SystemExit(main())
