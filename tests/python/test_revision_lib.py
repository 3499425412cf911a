#!/usr/bin/env python3
"""ctest: python/src/vattn/revision_lib.py against the revision libraries this build wrote.

1. Each library loads; its capabilities are the in-tree revision's (name, d_qk 576, d_v 512,
   sm_120a in the architectures): the Caps layout reads every field where C wrote it.
2. workspace_size() grows with the limits and refuses bad limits with the revision's status.
3. The Args and Limits layouts, through run()'s host-side checks (kernels/split_revision.cuh),
   which return before any CUDA call: one field broken at a time (a null pointer, a misaligned
   one, n_q, num_requests, sm_scale, d_qk, d_v, num_heads against the limits, the workspace)
   must give that field's status; a field read from the wrong offset would give another, or none.
   With every field right, run() reaches CUDA, which the test hides from the process
   (CUDA_VISIBLE_DEVICES empty), and says so (VATTN_ERR_CUDA). Two pointers the checks treat alike
   (null-checked, same alignment: kv_indices and kv_indptr, qo_indptr and mask_bits) could be
   swapped unseen here; a swap between alignment classes is caught (the 16-byte ones misaligned
   by 8). Only a GPU run's numbers see the rest (the gpu tests drive the same ABI from C++).
4. Files that are not revision libraries are refused naming the file; the module's command line
   prints the capabilities and exits 1 on a bad file.

usage: test_revision_lib.py --root REPO LIB.so...
"""

import argparse
import math
import os
import subprocess
import sys
import tempfile

from package_checks import check, finish


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("libs", nargs="+")
    a = ap.parse_args()
    sys.path.insert(0, os.path.join(a.root, "python", "src"))
    from vattn.revision_lib import Args, Library, Limits, RevisionLibError

    # No device for this process, whatever the machine has: run() with fake addresses must never
    # launch. The libraries link cudart statically, which reads this at its first CUDA call.
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    for path in a.libs:
        lib = Library(path)
        base = os.path.basename(path)
        want = "split-v2" if "v2" in base else "split-v1"
        check(lib.name == want and lib.caps["name"] == want, f"{base}: revision {lib.name!r}, caps name {lib.caps['name']!r}")
        check(lib.caps["d_qk"] == 576 and lib.caps["d_v"] == 512 and lib.caps["max_heads"] >= 8,
              f"{base}: d_qk {lib.caps['d_qk']}, d_v {lib.caps['d_v']}, max_heads {lib.caps['max_heads']}")
        check("sm_120a" in lib.caps["architectures"] and lib.caps["max_splits"] >= 128 and lib.caps["max_prefix"] >= 131072,
              f"{base}: architectures {lib.caps['architectures']!r}, max_splits {lib.caps['max_splits']}, "
              f"max_prefix {lib.caps['max_prefix']}")

        small = Limits(max_requests=1, max_total_drafts=16, max_drafts_per_request=16, num_heads=8, max_splits=16)
        big = Limits(max_requests=8, max_total_drafts=512, max_drafts_per_request=64, num_heads=8, max_splits=128)
        ws_small, ws_big = lib.workspace_size(small), lib.workspace_size(big)
        check(0 < ws_small < ws_big, f"{base}: workspace {ws_small} B for 1 x 16 drafts, 16 splits; {ws_big} B for 8 x 64, 128")
        try:
            lib.workspace_size(Limits(max_requests=0, max_total_drafts=16, max_drafts_per_request=16, num_heads=8,
                                      max_splits=16))
            check(False, f"{base}: workspace_size with max_requests 0 refused")
        except RevisionLibError as e:
            check(e.status == 1 and "INVALID_ARGUMENT" in str(e) and base in str(e),
                  f"{base}: workspace_size with max_requests 0 refused: {e}")

        # Fake device addresses: run() checks them host-side and, refusing, never touches them.
        good = dict(q=0x10000, kv_pool=0x20000, n_slots=64, kv_indices=0x30000, kv_indptr=0x31000, kv_draft=0x40000,
                    qo_indptr=0x41000, mask_bits=0x42000, mask_word_indptr=0x43000, forced_splits=0x44000,
                    out=0x50000, lse=0x60000, num_requests=1, n_q=16, num_heads=8, d_qk=576, d_v=512,
                    sm_scale=0.1446796)
        ws = 0x1000000
        cases = [(f, None, 1) for f in ("q", "kv_pool", "kv_indices", "kv_indptr", "kv_draft", "qo_indptr", "mask_bits",
                                        "mask_word_indptr", "out", "lse")]
        cases += [("q", 0x10008, 1), ("kv_pool", 0x20008, 1), ("kv_draft", 0x40008, 1), ("out", 0x50004, 1),
                  ("mask_word_indptr", 0x43004, 1), ("lse", 0x60002, 1),
                  ("forced_splits", 0x44002, 1), ("n_slots", -1, 1), ("n_q", 0, 1), ("num_requests", 0, 1),
                  ("sm_scale", math.nan, 1), ("sm_scale", 0.0, 1), ("d_qk", 575, 2), ("d_v", 576, 2),
                  ("num_heads", 129, 2), ("num_heads", 4, 3), ("num_requests", 2, 3), ("n_q", 17, 3)]
        for field, value, status in cases:
            args = Args(**{**good, field: value})
            got = lib.run_status(args, small, ws, ws_small, 0)
            check(got == status, f"{base}: run() with {field} = {value!r}: status {got} (want {status})")
        for what, ptr, nbytes in (("null", None, ws_small), ("1 byte short", ws, ws_small - 1),
                                  ("misaligned", ws + 128, ws_small)):
            got = lib.run_status(Args(**good), small, ptr, nbytes, 0)
            check(got == 4, f"{base}: run() with the workspace {what}: status {got} (want 4)")
        try:
            lib.run(Args(**{**good, "d_v": 511}), small, ws, ws_small, 0)
            check(False, f"{base}: run() raises on a refusal")
        except RevisionLibError as e:
            check(e.status == 2 and "UNSUPPORTED" in str(e) and "d_qk 576" in str(e), f"{base}: run() raises: {e}")
        got = lib.run_status(Args(**good), small, ws, ws_small, 0)
        check(got == 5, f"{base}: run() with every field right and no device visible: status {got} (want 5, CUDA)")

    with tempfile.TemporaryDirectory() as tmp:
        junk = os.path.join(tmp, "junk.so")
        with open(junk, "w") as f:
            f.write("not an ELF file\n")
        refusals = [(os.path.join(tmp, "missing.so"), "no such file"), (junk, "cannot load it")]
        if _libm_path():  # a real shared library without the revision symbol
            refusals.append((_libm_path(), "no symbol vattn_get_revision_v1"))
        for path, want in refusals:
            try:
                Library(path)
                check(False, f"{path}: refused")
            except RevisionLibError as e:
                check(os.path.basename(path) in str(e) and want in str(e), f"refused: {e}")
        env = dict(os.environ, PYTHONPATH=os.path.join(a.root, "python", "src"))
        p = subprocess.run([sys.executable, "-m", "vattn.revision_lib", a.libs[0]], capture_output=True, text=True, env=env)
        check(p.returncode == 0 and "d_qk: 576" in p.stdout, f"python3 -m vattn.revision_lib LIB: exit {p.returncode}")
        p = subprocess.run([sys.executable, "-m", "vattn.revision_lib", junk], capture_output=True, text=True, env=env)
        check(p.returncode == 1 and "junk.so" in p.stderr, f"python3 -m vattn.revision_lib junk.so: exit {p.returncode}, "
              f"{p.stderr.strip()}")
    return finish()


def _libm_path():
    """The C math library's path: a real shared library without the revision symbol."""
    for d in ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib/aarch64-linux-gnu"):
        p = os.path.join(d, "libm.so.6")
        if os.path.isfile(p):
            return p
    return None


if __name__ == "__main__":
    sys.exit(main())
