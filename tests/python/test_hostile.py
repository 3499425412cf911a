#!/usr/bin/env python3
"""ctest: case files built to reach outside themselves, or to garble the terminal, are refused or
shown safely.

Nothing outside the file: an external link, a soft link, a dataset whose raw data lives in another
file (pointed at a "secret" file with a marker), a virtual dataset (over a real and over a
missing file) and a filter this libhdf5 lacks (LZF) must each end `vattn info` and `vattn replay`
(also with --json) with exit 2 and a message naming the case and the dataset; the secret's
marker must appear in no output and no report.

Printable output: a case name, a producer name and a description holding terminal escape codes
must reach the terminal escaped (no ESC or other control byte in what vattn prints), while the
file stays valid (exit 0 or 1 as the check says).

Memory: a small file declaring a 4.3 GiB pool that it never wrote is refused before anything is
allocated; --max-memory refuses a case that needs more, saying how much.

usage: test_hostile.py --vattn PATH/TO/vattn --fixture FIXTURE.h5
"""

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile

import h5py
import numpy as np

MARKER = b"VATTN-SECRET-MARKER-"


def first_case(f):
    return f["cases"][sorted(f["cases"].keys())[0]]


def hostile_copy(fixture, tmp, label, change):
    path = os.path.join(tmp, label + ".h5")
    shutil.copyfile(fixture, path)
    with h5py.File(path, "r+") as f:
        change(f, first_case(f), tmp)
    return path


def secret_file(tmp, nbytes):
    """A file standing for something private on the machine: the marker, repeated."""
    path = os.path.join(tmp, "secret.bin")
    data = (MARKER * (nbytes // len(MARKER) + 1))[:nbytes]
    with open(path, "wb") as out:
        out.write(data)
    return path


def secret_h5(tmp, like):
    path = os.path.join(tmp, "secret.h5")
    with h5py.File(path, "w") as f:
        raw = np.frombuffer((MARKER * (like.nbytes // len(MARKER) + 1))[:like.nbytes], dtype=like.dtype)
        f.create_dataset("pool", data=raw.reshape(like.shape))
    return path


def external_link(f, g, tmp):
    pool = g["kv_pool"][()]
    other = secret_h5(tmp, pool)
    del g["kv_pool"]
    g["kv_pool"] = h5py.ExternalLink(other, "/pool")


def soft_link(f, g, tmp):
    g["q_copy"] = g["q"][()]
    del g["q"]
    g["q"] = h5py.SoftLink(g.name + "/q_copy")


def external_storage(f, g, tmp):
    pool = g["kv_pool"][()]
    secret = secret_file(tmp, pool.nbytes)
    del g["kv_pool"]
    d = g.create_dataset("kv_pool", shape=pool.shape, dtype=pool.dtype, external=[(secret, 0, pool.nbytes)])
    d.attrs["dtype"] = "bfloat16"


def virtual(missing):
    def change(f, g, tmp):
        pool = g["kv_pool"][()]
        other = os.path.join(tmp, "gone.h5") if missing else secret_h5(tmp, pool)
        layout = h5py.VirtualLayout(shape=pool.shape, dtype=pool.dtype)
        layout[...] = h5py.VirtualSource(other, "pool", shape=pool.shape)
        del g["kv_pool"]
        d = g.create_virtual_dataset("kv_pool", layout, fillvalue=0)
        d.attrs["dtype"] = "bfloat16"
    return change


def lzf(f, g, tmp):
    q = g["q"][()]
    del g["q"]
    d = g.create_dataset("q", data=q, compression="lzf", chunks=True)
    d.attrs["dtype"] = "bfloat16"


def declared_huge(f, g, tmp):
    """A few KB of file declaring a 4,000,000 x 576 pool whose chunks were never written."""
    del g["kv_pool"]
    d = g.create_dataset("kv_pool", shape=(4000000, 576), dtype="uint16", chunks=(1024, 576))
    d.attrs["dtype"] = "bfloat16"


ESC_NAME = "evil\x1b[2K\x1b[1A\rname"


def escapes(f, g, tmp):
    old = g.name.rsplit("/", 1)[1]
    f["cases"].move(old, ESC_NAME)
    g = f["cases"][ESC_NAME]
    out = g["outputs"]
    # The stored oracle stays; a second producer (the oracle's output as bf16 bits) gets the escapes.
    evil = out.create_group("evil\x1b[31mproducer\x07")
    bits = out["oracle_fp64"]["out"][()].astype(np.float32).view(np.uint32)
    d = evil.create_dataset("out", data=((bits + 0x8000) >> 16).astype(np.uint16))
    d.attrs["dtype"] = "bfloat16"
    evil.create_dataset("lse", data=out["oracle_fp64"]["lse"][()])
    evil.attrs["description"] = "desc\x1b]0;title\x07\x1b[2J"
    f.attrs["notes"] = "notes\x1b[2J\x1b[H"
    f.attrs["source"] = "synthetic:\x1b[5mblink"


def run(argv):
    p = subprocess.run(argv, capture_output=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vattn", required=True)
    ap.add_argument("--fixture", required=True)
    a = ap.parse_args()
    failures = []
    with tempfile.TemporaryDirectory(prefix="vattn-hostile-") as tmp:
        refused = [
            ("external-link", external_link, ["kv_pool", "external link"]),
            ("soft-link", soft_link, ["'q'", "soft link"]),
            ("external-storage", external_storage, ["kv_pool", "external file"]),
            ("virtual", virtual(False), ["kv_pool", "virtual dataset"]),
            ("virtual-missing", virtual(True), ["kv_pool", "virtual dataset"]),
            ("lzf", lzf, ["'q'", "filter 32000 (lzf)", "gzip"]),
        ]
        for label, change, texts in refused:
            path = hostile_copy(a.fixture, tmp, label, change)
            report = os.path.join(tmp, label + ".json")
            for argv in ([a.vattn, "info", path], [a.vattn, "replay", path], [a.vattn, "replay", path, "--json", report]):
                code, out, err = run(argv)
                what = label + ": " + " ".join(os.path.basename(x) for x in argv[1:])
                if code != 2:
                    failures.append(f"{what}: exit {code}, expected 2")
                for t in texts + [path]:
                    if t.encode() not in err:
                        failures.append(f"{what}: stderr lacks {t!r}: {err.decode(errors='replace')!r}")
                if b"case '" not in err:
                    failures.append(f"{what}: stderr does not name the case: {err.decode(errors='replace')!r}")
                leaked = MARKER in out or MARKER in err
                if os.path.exists(report):
                    with open(report, "rb") as r:
                        leaked = leaked or MARKER in r.read()
                if leaked:
                    failures.append(f"{what}: the secret file's bytes reached the output")
            print(f"ok so far: {label}" if not failures else f"after {label}: {len(failures)} failure(s)")

        # Memory follows what the file holds, not what it declares: refused before allocating.
        path = hostile_copy(a.fixture, tmp, "declared-huge", declared_huge)
        for argv in ([a.vattn, "info", path], [a.vattn, "replay", path]):
            before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
            code, out, err = run(argv)
            peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
            what = "declared-huge: " + argv[1]
            if code != 2 or b"chunks its shape needs" not in err or b"field 'kv_pool'" not in err:
                failures.append(f"{what}: exit {code}, expected 2 naming kv_pool's missing chunks: {err!r}")
            if peak_kb > 400 * 1024 and peak_kb > before:
                failures.append(f"{what}: peak memory {peak_kb} KB (the declared pool is 4.3 GiB)")
        # --max-memory: a case over it is refused from its shapes, saying what it needs.
        code, out, err = run([a.vattn, "replay", a.fixture, "--max-memory", "0.00001"])
        if code != 2 or b"more than the limit of" not in err or b"needs" not in err:
            failures.append(f"--max-memory: exit {code}, expected 2 and 'needs N GiB ... more than the limit': {err!r}")
        code, out, err = run([a.vattn, "info", a.fixture, "--max-memory", "-1"])
        if code != 2 or b"--max-memory" not in err:
            failures.append(f"--max-memory -1: exit {code}, expected 2 naming the option: {err!r}")
        print("ok so far: memory" if not failures else f"after memory: {len(failures)} failure(s)")

        path = hostile_copy(a.fixture, tmp, "escapes", escapes)
        for argv in ([a.vattn, "info", path], [a.vattn, "replay", path]):
            code, out, err = run(argv)
            what = "escapes: " + argv[1]
            if code not in (0, 1):
                failures.append(f"{what}: exit {code}, expected 0 or 1 (the file is valid): {err!r}")
            for stream, data in (("stdout", out), ("stderr", err)):
                bad = sorted({c for c in data if (c < 0x20 and c not in (0x0a,)) or c == 0x7f})
                if bad:
                    failures.append(f"{what}: {stream} holds control bytes {bad}: {data[:400]!r}")
            if b"\\x1b" not in out:
                failures.append(f"{what}: the escape is not shown as \\x1b: {out[:400]!r}")
        print("ok so far: escapes" if not failures else f"after escapes: {len(failures)} failure(s)")
    for f in failures:
        print("FAIL:", f)
    if failures:
        return 1
    print("all hostile files refused or shown safely")
    return 0


if __name__ == "__main__":
    sys.exit(main())
# SPDX-License-Identifier: Apache-2.0
