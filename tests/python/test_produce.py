#!/usr/bin/env python3
"""ctest: python -m vattn.produce (python/src/vattn/produce.py) without a GPU.

1. --producer numpy-reference adds outputs/numpy-reference (with lse) to every case of a copy of
   two fixtures, in place and with --output-dir (the original untouched); `vattn replay` holds it
   to the oracle and passes it.
2. The FlashInfer rule: a chain fixture may run, a tree fixture is skipped with the reason.
3. The GPU producers without torch (or without a GPU) exit 2 saying what is missing; an unknown
   producer and an unreadable file exit 2.

usage: test_produce.py --vattn PATH/TO/vattn --root REPO
"""

import os
import shutil
import subprocess
import sys
import tempfile

from package_checks import arguments, check, finish


def main():
    a = arguments()
    src = a.src
    import vattn
    from vattn import produce

    env = dict(os.environ, PYTHONPATH=src + os.pathsep + os.environ.get("PYTHONPATH", ""))

    def produce_cli(*args):
        p = subprocess.run([sys.executable, "-m", "vattn.produce", *args], capture_output=True, text=True, env=env)
        return p.returncode, p.stdout + p.stderr

    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for name in ("uniform_chain.h5", "ddtree_reversed.h5"):
            files.append(os.path.join(tmp, name))
            shutil.copyfile(os.path.join(a.root, "fixtures", name), files[-1])
        before = [len(vattn.read(f).cases) for f in files]
        code, out = produce_cli("--producer", "numpy-reference", *files)
        check(code == 0 and f"{sum(before)} produced, 0 skipped, 0 failed" in out, f"numpy-reference (exit {code}):\n{out}")
        for f in files:
            cf = vattn.read(f)
            outs = [o for c in cf.cases for o in c.outputs if o.producer == "numpy-reference"]
            check(len(outs) == len(cf.cases) and all(o.lse is not None for o in outs) and "numpy" in outs[0].description,
                  f"{os.path.basename(f)}: outputs/numpy-reference with lse on every case")
            p = subprocess.run([a.vattn, "replay", f], capture_output=True, text=True)
            code, rep = p.returncode, p.stdout
            rows = [l for l in rep.splitlines() if "numpy-reference (stored)" in l]
            check(code == 0 and len(rows) == len(cf.cases) and all(" PASS " in r and "no lse" not in r for r in rows),
                  f"vattn replay passes it, lse included (exit {code}):\n{rep}")
        # Again: the output is replaced, not added twice.
        produce_cli("--producer", "numpy-reference", files[0])
        check(sum(o.producer == "numpy-reference" for o in vattn.read(files[0]).cases[0].outputs) == 1,
              "a second run replaces its output")
        copies = os.path.join(tmp, "copies")
        orig = os.path.join(a.root, "fixtures", "uniform_chain.h5")
        code, out = produce_cli("--producer", "numpy-reference", "--output-dir", copies, orig)
        check(code == 0 and os.path.exists(os.path.join(copies, "uniform_chain.h5")), "--output-dir writes a copy")
        check(all(o.producer != "numpy-reference" for c in vattn.read(orig).cases for o in c.outputs),
              "and leaves the original alone")

        # 2. FlashInfer's rule, on a chain and on a tree.
        chain = vattn.read(os.path.join(a.root, "fixtures", "uniform_chain.h5")).cases[0]
        tree = vattn.read(os.path.join(a.root, "fixtures", "ddtree_reversed.h5")).cases[0]
        check(produce.not_a_chain(chain) == "", "a chain runs on a causal-only kernel")
        why = produce.not_a_chain(tree)
        check("tree, not a chain" in why and "no tree mask" in why, f"a tree is skipped with the reason: {why}")

        # 3. What cannot run says why, exit 2.
        try:
            import torch
            gpu = torch.cuda.is_available()
        except ImportError:
            gpu = False
        if not gpu:
            for name in ("sglang-triton", "flashinfer"):
                code, out = produce_cli("--producer", name, files[0])
                check(code == 2 and f"--producer {name}: needs" in out, f"{name} without torch/GPU: exit {code}: {out.strip()}")
        code, out = produce_cli("--producer", "nope", files[0])
        check(code == 2 and "invalid choice" in out, f"an unknown producer: exit {code}")
        bad = os.path.join(tmp, "bad.h5")
        with open(bad, "w") as f:
            f.write("not hdf5")
        code, out = produce_cli("--producer", "numpy-reference", bad)
        check(code == 2 and "bad.h5" in out, f"an unreadable file: exit {code}: {out.strip()}")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
# SPDX-License-Identifier: Apache-2.0
