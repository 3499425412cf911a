#!/usr/bin/env python3
"""A stand-in for `vattn fuzz` (tests/mutation/pipeline.sh tests `mutants.py run` without a GPU).

    stand_in_vattn.py fuzz --kernel DIR/lib/mNNNNN.so --out CAMPAIGN --threads T [other options]

Writes what `mutants.py run` reads of a campaign: summary.json and journal.jsonl. Mutant number N
is killed unless N % 3 == 2; its finding line says elapsed_s = 1.5 + 10 N and the failing case
took 0.25 s. Each campaign appends "mutant gpu threads" to $STAND_IN_LOG/campaigns and holds
$STAND_IN_LOG/busy-<gpu> while it runs: finding it taken (two campaigns on one GPU at a time)
appends a line to $STAND_IN_LOG/overlaps.
"""

import json
import os
import sys
import time


def main():
    args = sys.argv[1:]
    if not args or args[0] != "fuzz":
        print("stand_in_vattn.py: only `fuzz`", file=sys.stderr)
        return 2
    opt, i = {}, 1
    while i < len(args):
        if args[i] == "--no-report":
            i += 1
            continue
        opt[args[i]] = args[i + 1]
        i += 2
    log = os.environ["STAND_IN_LOG"]
    gpu = os.environ.get("CUDA_VISIBLE_DEVICES", "unset")
    mutant = os.path.basename(opt["--kernel"]).split(".")[0]
    n = int(mutant[1:])
    busy = os.path.join(log, "busy-" + gpu)
    try:
        fd = os.open(busy, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        os.close(fd)
        mine = True
    except FileExistsError:
        mine = False
        with open(os.path.join(log, "overlaps"), "a") as f:
            f.write(f"{mutant} on GPU {gpu}\n")
    with open(os.path.join(log, "campaigns"), "a") as f:
        f.write(f"{mutant} {gpu} {opt['--threads']}\n")
    time.sleep(0.5)
    out = opt["--out"]
    os.makedirs(out)
    killed = n % 3 != 2
    with open(os.path.join(out, "journal.jsonl"), "w") as f:
        f.write(json.dumps({"t": "start", "run": 1}) + "\n")
        for c in range(4):
            f.write(json.dumps({"t": "case", "i": c, "v": "ok", "s": 0.1}) + "\n")
        if killed:
            first = {"index": 4, "verdict": "wrong", "check": "vs oracle", "total_s": 0.25}
            f.write(json.dumps({"t": "finding", "id": "001", "sig": "wrong: vs oracle", "first": first,
                                "elapsed_s": 1.5 + 10 * n}) + "\n")
            f.write(json.dumps({"t": "case", "i": 4, "v": "wrong", "f": "001"}) + "\n")
    findings = [{"id": "001", "signature": "wrong: vs oracle", "first_case": {"index": 4}}] if killed else []
    # A survivor's campaign also saw a crash that a fresh worker did not repeat: no kill.
    unconfirmed = [] if killed else ["002"]
    if not killed:
        findings.append({"id": "002", "signature": "crash: SIGSEGV", "first_case": {"index": 7}})
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump({"campaign_cases": 5 if killed else 40, "findings": findings, "unconfirmed": unconfirmed}, f)
    if mine:
        os.remove(busy)
    return 1 if killed else 0


if __name__ == "__main__":
    sys.exit(main())
# SPDX-License-Identifier: Apache-2.0
