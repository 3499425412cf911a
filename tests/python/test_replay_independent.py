#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""ctest: a file written by the independent Python implementation, replayed by vattn.

`vattn replay` must exit 1 and mark exactly the wrong_* producers FAIL (each for the reason its
bug should trigger), while oracle_fp64 and serving_correct PASS; with the wrong_* groups
removed the same file must replay with exit 0.

usage: test_replay_independent.py --vattn PATH/TO/vattn
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import h5py

HERE = os.path.dirname(os.path.abspath(__file__))
WRONG = {
    # producer -> a failure key it must raise (tolerance.cpp names each check)
    "wrong_scaled_head": None,  # any check may catch it (score, ratio or out_bound)
    "wrong_dropped_key": None,
    "wrong_nan": "nonfinite",
    "wrong_lse": "lse_bound",
}
CORRECT = {"oracle_fp64 (stored)", "serving_correct"}


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    print("$", " ".join(cmd), "->", p.returncode)
    print(p.stdout, p.stderr, sep="")
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vattn", required=True)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="vattn-py-replay.")
    problems = []
    try:
        path = os.path.join(tmp, "independent.h5")
        subprocess.run([sys.executable, os.path.join(HERE, "write_case.py"), path], check=True)
        report = os.path.join(tmp, "report.json")
        p = run([args.vattn, "replay", path, "--json", report])
        if p.returncode != 1:
            problems.append(f"replay exit code {p.returncode}, expected 1")
        with open(report) as f:
            rep = json.load(f)
        cases = sorted({r["case"] for r in rep["results"]})
        if len(cases) != 2:
            problems.append(f"expected 2 cases in the report, got {cases}")
        for case in cases:
            rows = {r["producer"]: r for r in rep["results"] if r["case"] == case}
            if set(rows) != CORRECT | set(WRONG):
                problems.append(f"{case}: producers {sorted(rows)}")
            for name in CORRECT:
                if name in rows and not rows[name]["pass"]:
                    problems.append(f"{case}: {name} FAILED: {rows[name]['failures']}")
            for name, key in WRONG.items():
                r = rows.get(name)
                if r is None:
                    continue
                if r["pass"]:
                    problems.append(f"{case}: {name} PASSED (a planted bug went unseen)")
                elif key and not any(f.startswith(key) for f in r["failures"]):
                    problems.append(f"{case}: {name} failed for {r['failures']}, expected '{key}'")
            # A stored output is marked as such in the table (it is not a run of that producer).
            for name, r in rows.items():
                if r["kind"] == "stored" and f"{name} (stored)" not in p.stdout:
                    problems.append(f"{case}: the table does not mark the stored output {name} as '(stored)'")
            # The text table says the same as the JSON.
            for line in p.stdout.splitlines():
                parts = line.split()
                if len(parts) > 2 and parts[0] == case and parts[1] in rows:
                    want = "PASS" if rows[parts[1]]["pass"] else "FAIL"
                    if want not in line:
                        problems.append(f"table row disagrees with JSON: {line}")
        if rep["passed"] != 4 or rep["failed"] != 8:
            problems.append(f"summary passed={rep['passed']} failed={rep['failed']}, expected 4 and 8")
        if "replay: 4 passed, 8 failed" not in p.stdout:
            problems.append("summary line missing")

        # Only the correct producers left: exit 0.
        clean = os.path.join(tmp, "clean.h5")
        shutil.copy(path, clean)
        with h5py.File(clean, "r+") as f:
            for case in f["cases"]:
                for name in WRONG:
                    del f["cases"][case]["outputs"][name]
        p = run([args.vattn, "replay", clean])
        if p.returncode != 0 or "replay: 4 passed, 0 failed" not in p.stdout:
            problems.append(f"clean file: exit {p.returncode}, expected 0 with 4 passed")

        # --case picks one case.
        p = run([args.vattn, "replay", clean, "--case", "py001_chain_contiguous"])
        if p.returncode != 0 or "replay: 2 passed, 0 failed" not in p.stdout:
            problems.append(f"--case: exit {p.returncode}, expected 0 with 2 passed")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for m in problems:
        print("PROBLEM:", m)
    print("test_replay_independent:", "FAIL" if problems else "ok")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
