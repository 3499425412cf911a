"""What the python/ package's ctest drivers share: the --vattn/--root arguments, the package
imported from the source tree, and the ok/FAIL lines with their closing count."""

import argparse
import os
import sys

FAILS = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        FAILS.append(what)


def arguments():
    """The parsed --vattn and --root; python/src goes first on sys.path (the package as it is here)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--vattn", required=True)
    ap.add_argument("--root", required=True)
    a = ap.parse_args()
    a.src = os.path.join(a.root, "python", "src")
    sys.path.insert(0, a.src)
    return a


def finish():
    """The exit status: 1 when any check failed."""
    if FAILS:
        print(f"{len(FAILS)} check(s) failed")
        return 1
    print("all checks held")
    return 0
# SPDX-License-Identifier: Apache-2.0
