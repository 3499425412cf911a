#!/usr/bin/env python3
"""ctest: the Python package (python/) installs with pip and agrees with vattn.

1. `pip install --target DIR ./python` works (--no-deps: numpy and h5py are Debian's) and
   `import vattn` comes from DIR.
2. It reads every committed fixture and regression case with the shapes `vattn info` prints.
3. A file it writes (from a fixture's cases) passes `vattn info` and `vattn replay`.
4. Broken files: the package and vattn both refuse each, naming the same case and field (a
   recipe that does not re-create its case, in the same words); bad recipe lines likewise.

usage: test_package.py --vattn PATH/TO/vattn --root REPO
"""

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

import h5py
import numpy as np


def install(root, tmp):
    site = os.path.join(tmp, "site")
    # From a copy: a build leaves build/ and *.egg-info behind, and the checkout stays clean.
    src = os.path.join(tmp, "python")
    shutil.copytree(os.path.join(root, "python"), src, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", site, src]
    # With the installed setuptools first (no network); an older one without `wheel` needs the
    # isolated build (setuptools from PyPI). Debian's pip wants --break-system-packages even
    # for --target (PEP 668).
    for extra in (["--no-build-isolation"], [], ["--no-build-isolation", "--break-system-packages"],
                  ["--break-system-packages"]):
        p = subprocess.run(cmd + extra, capture_output=True, text=True)
        if p.returncode == 0:
            break
    if p.returncode != 0:
        raise SystemExit(f"FAIL: pip install ./python: {p.stderr.strip()[-800:]}")
    sys.path.insert(0, site)
    import vattn
    assert os.path.dirname(vattn.__file__).startswith(site), vattn.__file__
    print(f"ok: pip install ./python, vattn {vattn.__version__} imported from the target")
    return vattn


def corrupt(path, change):
    with h5py.File(path, "r+") as f:
        name = sorted(f["cases"])[0]
        change(f["cases"][name])
        return name


def replace(name, data, bf16=False):
    def change(g):
        del g[name]
        d = g.create_dataset(name, data=data)
        if bf16:
            d.attrs["dtype"] = "bfloat16"
    return change


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vattn", required=True)
    ap.add_argument("--root", required=True)
    a = ap.parse_args()
    failures = []
    with tempfile.TemporaryDirectory(prefix="vattn-pkg-") as tmp:
        vattn = install(a.root, tmp)
        files = sorted(glob.glob(os.path.join(a.root, "fixtures", "*.h5")) +
                       glob.glob(os.path.join(a.root, "fixtures", "regressions", "*.h5")))
        for path in files:
            f = vattn.read(path)
            info = subprocess.run([a.vattn, "info", path], capture_output=True, text=True).stdout
            for c in f.cases:
                P = np.diff(c.kv_indptr).tolist()
                T = np.diff(c.qo_indptr).tolist()
                want = f"{c.name}  B={c.num_requests} H={c.num_heads} d_qk/d_v={c.d_qk}/{c.d_v} P={P} T={T}".replace(" ", "")
                if want not in info.replace(" ", ""):
                    failures.append(f"{path}: case {c.name}: the package reads {want}, vattn info says:\n{info}")
        print(f"ok: read {len(files)} files as vattn info does" if not failures else "reading disagrees")

        src = vattn.read(os.path.join(a.root, "fixtures", "k26_random_scattered.h5"))
        out = os.path.join(tmp, "written.h5")
        vattn.write(out, vattn.Header(source="synthetic:k26", optional={"notes": "written by the python package"}),
                    src.cases)
        p = subprocess.run([a.vattn, "replay", out], capture_output=True, text=True)
        if p.returncode != 0 or "passed, 0 failed" not in p.stdout:
            failures.append(f"replay of a file the package wrote: exit {p.returncode}\n{p.stdout}{p.stderr}")
        else:
            print("ok: a file the package wrote replays with vattn")

        # The writer never writes through a link nor leaves a temporary behind: a link planted at
        # the old fixed temporary name (written.h5.tmp) and one at the final path both point at a
        # file outside the folder, which stays as it was; a write that fails leaves nothing.
        outside = os.path.join(tmp, "outside.txt")
        with open(outside, "w") as f:
            f.write("precious\n")
        box = os.path.join(tmp, "box")
        os.mkdir(box)
        os.symlink(outside, os.path.join(box, "a.h5.tmp"))
        vattn.write(os.path.join(box, "a.h5"), vattn.Header(source="synthetic:k26"), src.cases)
        os.symlink(outside, os.path.join(box, "b.h5"))
        try:
            vattn.write(os.path.join(box, "b.h5"), vattn.Header(source="synthetic:k26"), src.cases)
            failures.append("write to a path that is a symbolic link did not raise")
        except vattn.CaseFileError as e:
            if "symbolic link" not in str(e):
                failures.append(f"write to a symbolic link raised, but did not say why: {e}")
        try:
            vattn.write(os.path.join(box, "c.h5"), vattn.Header(source="synthetic:k26", optional={"colour": "red"}),
                        src.cases)
            failures.append("write with a header attribute outside the schema did not raise")
        except vattn.CaseFileError:
            pass
        with open(outside) as f:
            if f.read() != "precious\n":
                failures.append("a file outside the folder was written through a planted link")
        left = sorted(set(os.listdir(box)) - {"a.h5", "a.h5.tmp", "b.h5"})
        if left or not os.path.islink(os.path.join(box, "a.h5.tmp")) or os.path.islink(os.path.join(box, "a.h5")):
            failures.append(f"after the writes the folder holds {sorted(os.listdir(box))}: expected a.h5 (a file) "
                            "and the two planted links, no temporary")
        if vattn.read(os.path.join(box, "a.h5")).cases[0].name != src.cases[0].name:
            failures.append("a.h5, written beside a planted link, does not read back")
        print("ok: the writer refuses a linked path, writes beside planted links, leaves no temporary")

        # Recipe lines: the package's parser refuses what vattn's refuses, with the same field and words.
        before = len(failures)
        for line in ["B=1 H=x P=[0] T=[1]", "B=2 P=[1,2,3] T=[1]", "H=8 P=[1]", "P=[1] T=[0]", "P=1,2 T=[1]",
                     "P=[1] T=[1] tree=bush", "P=[1] T=[1] scale=-1", "P=[1] T=[1] seed=-3", "P=[1] T=[1] H=2 H=3",
                     "P=[1] T=[1] poison=2", "P=[1] T=[1] color=red", "P=[1] T=[1] splits=257", "justaword",
                     "P=[1] T=[1] scale=1e999", "P=[1] T=[1] seed=18446744073709551616",
                     "P=[5,6] T=[2,3] limits=2/4/3/1", "P=[5] T=[2] splits=2 limits=1/2/2/1",
                     "P=[5] T=[2] limits=1/2/2", "P=[5] T=[2] sms=513", "P=[5] T=[2] sm_blocks=1"]:
            p = subprocess.run([a.vattn, "replay", "--recipe", line], capture_output=True, text=True)
            m = re.search(r"field '([^']*)': (.*)", p.stderr)
            try:
                vattn.parse_recipe(line)
                mine = None
            except vattn.RecipeError as e:
                mine = (e.field, e.reason)
            theirs = (m.group(1), m.group(2).strip()) if m else None
            if p.returncode != 2 or mine != theirs:
                failures.append(f"recipe '{line}': package {mine}, vattn (exit {p.returncode}) {theirs}")
        if len(failures) == before:
            print("ok: 20 bad recipe lines refused by both with the same field and reason")
        parsed = vattn.parse_recipe("H=2 P=[5] T=[3,4] tree=star")
        if (parsed["B"], parsed["P"], parsed["T"], parsed["layout"]) != (2, [5, 5], [3, 4], "scattered"):
            failures.append(f"parse_recipe broadcast or defaults: {parsed}")

        fixture = os.path.join(a.root, "fixtures", "uniform_chain.h5")
        broken = [
            ("kv_indices out of the pool", replace("kv_indices", np.array([10 ** 6] + [0] * 81, dtype=np.int32))),
            ("float32 sm_scale", lambda g: g.attrs.__setitem__("sm_scale", np.float32(0.1))),
            ("no bf16 marker", lambda g: g["q"].attrs.__delitem__("dtype")),
            ("int64 kv_indptr", replace("kv_indptr", np.array([0, 77, 82], dtype=np.int64))),
            ("decreasing qo_indptr", replace("qo_indptr", np.array([0, 16, 15], dtype=np.int32))),
            ("external link",
             lambda g: (g.__delitem__("kv_pool"), g.__setitem__("kv_pool", h5py.ExternalLink("/etc/x.h5", "/p")))),
            ("missing q", lambda g: g.__delitem__("q")),
            ("recipe of another shape", lambda g: g.attrs.__setitem__("recipe", g.attrs["recipe"].replace("H=", "H=1", 1))),
            ("recipe that does not parse", lambda g: g.attrs.__setitem__("recipe", "B=1 H=x P=[0] T=[1]")),
            ("recipe with another scale",
             lambda g: g.attrs.__setitem__("recipe", re.sub(r"scale=\S+", "scale=0.5", g.attrs["recipe"]))),
        ]
        for label, change in broken:
            path = os.path.join(tmp, re.sub(r"\W+", "_", label) + ".h5")
            shutil.copyfile(fixture, path)
            case = corrupt(path, change)
            p = subprocess.run([a.vattn, "info", path], capture_output=True, text=True)
            m = re.search(r"case '([^']*)': field '([^']*)'", p.stderr)
            try:
                vattn.read(path)
                failures.append(f"{label}: the package read it; vattn: {p.stderr.strip()}")
                continue
            except vattn.CaseFileError as e:
                mine = (e.case, e.field)
                e_reason = e.reason
            theirs = (m.group(1), m.group(2)) if m else None
            # The recipe check says why in the same words as vattn.
            same_words = mine[1] != "recipe" or e_reason in p.stderr
            if p.returncode != 2 or theirs != mine or mine[0] != case or not same_words:
                failures.append(f"{label}: package names {mine} ({e_reason}), vattn (exit {p.returncode}) {theirs}: "
                                f"{p.stderr.strip()}")
            else:
                print(f"ok: {label}: both refuse case '{mine[0]}' field '{mine[1]}'")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
# SPDX-License-Identifier: Apache-2.0
