#!/usr/bin/env python3
"""ctest: python -m vattn.produce (python/src/vattn/produce.py) without a GPU.

1. --producer numpy-reference adds outputs/numpy-reference (with lse) to every case of a copy of
   two fixtures, in place and with --output-dir (the original untouched); `vattn replay` holds it
   to the oracle and passes it.
2. The FlashInfer rule: a chain fixture may run, a tree fixture is skipped with the reason.
3. The GPU producers without torch (or without a GPU) exit 2 saying what is missing; an unknown
   producer and an unreadable file exit 2.
4. FlashInfer through libvattn_flashinfer_mla.so (peers/), without a GPU: the --flashinfer-*
   options and their refusals; a missing or non-library file exits 2 naming it; the ctypes
   binding (vattn.flashinfer_lib) matches peers/flashinfer_mla.h (functions, struct fields in
   order, ABI version, backend and status codes); the paged layout the producer hands FlashInfer,
   attended causally in numpy, gives the fixture's stored oracle; and, when a library is built at
   .device/flashinfer/ (or $VATTN_FLASHINFER_LIB), it loads without CUDA and describes itself.

usage: test_produce.py --vattn PATH/TO/vattn --root REPO
"""

import os
import re
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

        # 4. FlashInfer from the library.
        flashinfer_lib_checks(a, produce_cli, files[0], bad, gpu)
    return finish()


def flashinfer_lib_checks(a, produce_cli, chain_file, not_a_library, gpu):
    import ctypes

    import numpy as np

    import vattn
    from vattn import flashinfer_lib, produce
    from vattn.bf16 import bf16_to_float32

    refusals = [
        (("--producer", "numpy-reference", "--flashinfer-lib", "x.so"), "--flashinfer-lib is for --producer flashinfer"),
        (("--producer", "sglang-triton", "--flashinfer-backend", "fa3"), "--flashinfer-backend is for --producer flashinfer"),
        (("--producer", "flashinfer", "--flashinfer-backend", "fa4"), "invalid choice: 'fa4'"),
        (("--producer", "flashinfer", "--flashinfer-smem", "sm120"), "--flashinfer-smem needs --flashinfer-lib"),
        (("--producer", "flashinfer", "--flashinfer-lib", "x.so", "--flashinfer-backend", "fa3", "--flashinfer-smem",
          "sm120"), "--flashinfer-smem is for --flashinfer-backend fa2"),
        (("--producer", "flashinfer", "--flashinfer-lib", "x.so", "--flashinfer-smem", "12k"),
         "'12k' is neither a positive number of bytes nor sm120"),
        (("--producer", "flashinfer", "--flashinfer-lib", "x.so", "--flashinfer-smem", "0"),
         "'0' is neither a positive number of bytes nor sm120"),
    ]
    for args, want in refusals:
        code, out = produce_cli(*args, chain_file)
        check(code == 2 and want in out and "Traceback" not in out, f"{' '.join(args)}: exit {code}, says '{want}'")
    code, out = produce_cli("--help")
    check(code == 0 and all(o in out for o in ("--flashinfer-lib", "--flashinfer-backend", "--flashinfer-smem",
                                                "outputs/flashinfer-fa2")), "--help names the --flashinfer-* options")
    missing = os.path.join(os.path.dirname(not_a_library), "no-such-dir", "libvattn_flashinfer_mla.so")
    code, out = produce_cli("--producer", "flashinfer", "--flashinfer-lib", missing, chain_file)
    check(code == 2 and f"--producer flashinfer: {missing}: no such file" in out and "build_flashinfer.sh" in out,
          f"a missing library: exit {code}, names the path: {out.strip()}")
    code, out = produce_cli("--producer", "flashinfer", "--flashinfer-lib", not_a_library, chain_file)
    check(code == 2 and f"{not_a_library}: cannot load it" in out, f"a file that is no library: exit {code}: {out.strip()}")

    # The binding against the header, declaration by declaration.
    header = open(os.path.join(a.root, "peers", "flashinfer_mla.h")).read()
    body = re.sub(r"/\*.*?\*/", "", header, flags=re.S)
    ctypes_of = {"const void*": ctypes.c_void_p, "void*": ctypes.c_void_p, "float*": ctypes.c_void_p,
                 "const int32_t*": ctypes.c_void_p, "int64_t": ctypes.c_int64, "int32_t": ctypes.c_int32,
                 "float": ctypes.c_float}
    for struct, binding in (("vfi_run_args", flashinfer_lib.RunArgs), ("vfi_plan_config", flashinfer_lib.PlanConfig)):
        m = re.search(rf"typedef struct {struct} \{{(.*?)\}} {struct};", body, re.S)
        fields = []
        for decl in (m.group(1).split(";") if m else []):
            decl = " ".join(decl.split())
            if not decl:
                continue
            typ, names = re.match(r"((?:const )?\w+\*?)\s+(.*)", decl).groups()
            fields += [(n.strip(), ctypes_of.get(typ, typ)) for n in names.split(",")]
        have = list(binding._fields_)
        check(m is not None and fields == have,  # (the sizes are checked against the library when it loads)
              f"struct {struct}: the header's fields and types, in order, are the binding's ({len(fields)} fields)" +
              ("" if fields == have else f": header {fields}, binding {have}"))
    protos = dict(re.findall(r"\b(vfi_\w+)\(([^)]*)\)", body))
    check(set(protos) == set(flashinfer_lib._SIGNATURES), f"the header's functions are the binding's: {sorted(protos)}")
    for name, params in protos.items():
        n = 0 if params.strip() in ("", "void") else len(params.split(","))
        have = len(flashinfer_lib._SIGNATURES.get(name, (None, []))[1])
        check(n == have, f"{name}: {n} parameters in the header, {have} in the binding")
    abi = re.search(r"#define VFI_ABI_VERSION (\d+)", header)
    check(abi and int(abi.group(1)) == flashinfer_lib.ABI_VERSION, "VFI_ABI_VERSION is the binding's")
    check("VFI_BACKEND_FA2 = 0" in body and "VFI_BACKEND_FA3 = 1" in body and flashinfer_lib.BACKENDS == {"fa2": 0, "fa3": 1},
          "backend codes agree")
    check("VFI_ERR_UNSUPPORTED = 2" in body, "VFI_ERR_UNSUPPORTED is 2, the code the producer turns into a skip")

    # The paged layout, attended with FlashInfer's causal mask, is the verify attention of a chain
    # (the chain fixture, and H=8 with an empty prefix and a single draft).
    gen = os.path.join(os.path.dirname(not_a_library), "chain8.h5")
    subprocess.run([a.vattn, "gen", "-o", gen, "--tree", "chain", "--profile", "k26", "--heads", "8", "--prefix",
                    "0,300", "--drafts", "1,16", "--seed", "3"], check=True, capture_output=True)
    chains = vattn.read(os.path.join(a.root, "fixtures", "uniform_chain.h5")).cases + vattn.read(gen).cases
    for c in chains:
        cache, kv_indptr, kv_indices, kv_len = produce.FlashInferMla.layout(c)
        keys_all = bf16_to_float32(cache).astype(np.float64)
        q = bf16_to_float32(c.q).astype(np.float64)
        out = np.zeros((q.shape[0], c.num_heads, c.d_v))
        lse = np.zeros((q.shape[0], c.num_heads))
        for b in range(c.num_requests):
            q0, q1 = c.qo_indptr[b], c.qo_indptr[b + 1]
            keys = keys_all[kv_indices[kv_indptr[b]:kv_indptr[b + 1]]]
            for i in range(q1 - q0):
                k = keys[:kv_len[b] - (q1 - q0) + i + 1]  # causal: the last query sees every key
                s = q[q0 + i] @ k.T * c.sm_scale
                mx = s.max(axis=1, keepdims=True)
                w = np.exp(s - mx)
                out[q0 + i] = (w / w.sum(axis=1, keepdims=True)) @ k[:, :c.d_v]
                lse[q0 + i] = mx[:, 0] + np.log(w.sum(axis=1))
        oracle = next(o for o in c.outputs if o.producer == "oracle_fp64")
        err = max(np.abs(out - oracle.out).max(), np.abs(lse - oracle.lse).max())
        check(err < 1e-4, f"{c.name}: FlashInfer's paged causal layout gives the oracle (max |diff| {err:.2g})")

    lib_path = os.environ.get("VATTN_FLASHINFER_LIB") or os.path.join(a.root, ".device", "flashinfer",
                                                                        "libvattn_flashinfer_mla.so")
    if not os.path.isfile(lib_path):
        print(f"note: no library at {lib_path} (peers/build_flashinfer.sh); its load check not run")
        return
    lib = flashinfer_lib.Library(lib_path)  # no CUDA call
    check(re.search(r"FlashInfer \d+\.\d+", lib.description) and "fa2" in lib.backends,
          f"{lib_path} loads without CUDA: {lib.description}; backends {lib.backends}")
    if not gpu:
        code, out = produce_cli("--producer", "flashinfer", "--flashinfer-lib", lib_path, chain_file)
        check(code == 2 and "--producer flashinfer: needs" in out, f"the library without torch/GPU: exit {code}: {out.strip()}")


if __name__ == "__main__":
    sys.exit(main())
# SPDX-License-Identifier: Apache-2.0
