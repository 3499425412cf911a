#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks that vattn/'s include graph has no upward edge (docs/architecture.md).

Each folder of vattn/ is a layer; a file may include headers of its own layer and of the layers
listed before it in LAYERS, never of a later one. Tests and tools outside vattn/ may include any
layer. kernels/ is below every layer; its own files include nothing of vattn/.
Usage: check_layers.py [REPO_ROOT]   (exit 0: no upward edge; 1: the edges found, one a line)
       check_layers.py --self-test   (the check finds an upward edge planted in a scratch tree)
"""

import os
import re
import sys
import tempfile

# Lowest first. A layer's sub-folders (fuzz/gen, fuzz/protocol, ...) are layers of their own.
LAYERS = [
    "kernels",
    "vattn/nocuda",
    "vattn/case",
    "vattn/recipe",
    "vattn/gen",
    "vattn/oracle",
    "vattn/check",
    "vattn/casefile",
    "vattn/gpu",
    "vattn/testbed",
    "vattn/fuzz/gen",
    "vattn/fuzz/protocol",
    "vattn/fuzz/worker",
    "vattn/fuzz/campaign",
    "vattn/cli",
]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SOURCE = (".h", ".cuh", ".cpp", ".cu", ".c")


def layer_of(path):
    """The index of the deepest layer folder that holds `path`, or None outside every layer."""
    best = None
    for i, layer in enumerate(LAYERS):
        if path == layer or path.startswith(layer + "/"):
            if best is None or len(layer) > len(LAYERS[best]):
                best = i
    return best


def self_test():
    """A check that cannot fail proves nothing: plant one upward and one sideways-down edge."""
    with tempfile.TemporaryDirectory() as t:
        files = {
            "vattn/case/case.h": '#include "vattn/cli/args.h"\n',  # upward: must be found
            "vattn/cli/args.h": '#include "vattn/case/case.h"\n',  # downward: fine
            "kernels/k.cuh": '#include "vattn/case/case.h"\n',  # the kernel reaching up: must be found
        }
        for rel, text in files.items():
            os.makedirs(os.path.join(t, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(t, rel), "w", encoding="utf-8") as f:
                f.write(text)
        found = check(t)
    ok = len(found) == 2 and "vattn/case/case.h (vattn/case)" in found[0] + found[1]
    print(f"check_layers self-test: {'ok' if ok else 'FAILED'} ({len(found)} planted edges found, 2 expected)")
    return 0 if ok else 1


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    bad = check(root)
    print(f"check_layers: {len(bad)} upward include(s)")
    return 1 if bad else 0


def check(root):
    """Every upward include below `root`, one line each (also printed)."""
    bad = []
    checked = 0
    for top in ("kernels", "vattn"):
        for d, _, names in os.walk(os.path.join(root, top)):
            for n in names:
                if not n.endswith(SOURCE):
                    continue
                rel = os.path.relpath(os.path.join(d, n), root)
                mine = layer_of(rel)
                with open(os.path.join(d, n), encoding="utf-8") as f:
                    text = f.read()
                checked += 1
                for inc in INCLUDE.findall(text):
                    if rel.startswith("kernels/"):
                        if inc.startswith("vattn/"):
                            bad.append(f"{rel}: includes {inc} (kernels/ builds with the CUDA toolkit alone)")
                        continue
                    theirs = layer_of(inc)
                    if theirs is not None and mine is not None and theirs > mine:
                        bad.append(f"{rel} ({LAYERS[mine]}) includes {inc} ({LAYERS[theirs]}): an upward edge")
    for line in bad:
        print(line)
    print(f"check_layers: {checked} files read")
    return bad


if __name__ == "__main__":
    sys.exit(main())
