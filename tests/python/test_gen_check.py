#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""ctest: files written by `vattn gen` (every profile, several trees and layouts) agree with
the independent numpy float64 computation in check_file.py.

usage: test_gen_check.py --vattn PATH/TO/vattn
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
RUNS = [
    ["--profile", "uniform", "--tree", "chain", "--layout", "contiguous", "--prefix", "77,0", "--drafts", "16,1"],
    ["--profile", "k26", "--tree", "random", "--layout", "scattered", "--prefix", "300,1,40", "--drafts", "7,3,5"],
    ["--profile", "adversarial", "--tree", "padded", "--layout", "sparse", "--prefix", "64,0,17", "--drafts", "5,4,3"],
    ["--profile", "huge", "--tree", "ddtree", "--layout", "reversed", "--prefix", "129", "--drafts", "33"],
    ["--profile", "ties", "--tree", "star", "--layout", "sparse", "--prefix", "50,5", "--drafts", "9", "--poison"],
    ["--profile", "tiny", "--tree", "wide", "--layout", "scattered", "--prefix", "65,2", "--drafts", "17,2"],
    ["--profile", "k26", "--tree", "deep", "--layout", "contiguous", "--prefix", "1000", "--drafts", "65",
     "--heads", "2"],
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vattn", required=True)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="vattn-py-gen.")
    try:
        files = []
        for k, extra in enumerate(RUNS):
            path = os.path.join(tmp, f"gen{k}.h5")
            cmd = [args.vattn, "gen", "-o", path, "--heads", "3", "--seed", str(10 + k), "--cases", "2"]
            if "--heads" in extra:
                cmd = [args.vattn, "gen", "-o", path, "--seed", str(10 + k), "--cases", "2"]
            subprocess.run(cmd + extra, check=True)
            files.append(path)
        return subprocess.run([sys.executable, os.path.join(HERE, "check_file.py")] + files).returncode
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
