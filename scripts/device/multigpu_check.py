#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What a multi-GPU `vattn fuzz` run showed, from its campaign directories (issue 20).

    multigpu_check.py --one DIR --all DIR --crash DIR [--util FILE] [--json OUT]

--one: the same kernel on one GPU (the baseline); --all: on every GPU; --crash: a revision built
to crash on some inputs, on every GPU; --util: `nvidia-smi --query-gpu=index,utilization.gpu
--format=csv,noheader,nounits` samples taken during --all. Reads each directory's journal.jsonl
and summary.json (docs/fuzz-files.md) and checks:
  - one worker per GPU: --all and --crash have two or more worker slots, each with cases;
  - disjoint case streams: no case index has two verdicts in any campaign;
  - scaling: cases/s of --all over cases/s of --one (printed; not a pass/fail bound);
  - a crash leaves the other workers running: after the first crash verdict of --crash, every
    other slot has a verdict that is not a crash or hang (before any crash of its own);
  - --crash found a crash, --one and --all found nothing.
Prints a table and the verdict of each check; exit 0 when all hold, 1 when one does not, 2 when a
directory cannot be read. Standard library only: it runs on the GPU machine and in CI.
"""
import argparse
import collections
import json
import os
import sys


class Unreadable(Exception):
    pass


def load(d):
    """(journal rows, summary) of campaign directory d."""
    try:
        with open(os.path.join(d, "journal.jsonl")) as f:
            rows = [json.loads(line) for line in f if line.strip()]
        with open(os.path.join(d, "summary.json")) as f:
            summary = json.load(f)
    except (OSError, ValueError) as e:
        raise Unreadable(f"{d}: {e}") from e
    return rows, summary


def campaign(d):
    rows, summary = load(d)
    cases = [r for r in rows if r.get("t") == "case"]
    elapsed = float(summary.get("this_run", {}).get("elapsed_s", 0.0))
    slots = collections.OrderedDict()
    for w in summary.get("workers", []):
        slots[w["label"]] = {"cases": int(w.get("cases", 0)), "starts": int(w.get("worker_starts", 0))}
    for r in cases:  # a slot the summary does not list still counts
        slots.setdefault(r["g"], {"cases": 0, "starts": 0})
    dup = [i for i, n in collections.Counter(r["i"] for r in cases).items() if n > 1]
    findings = list(summary.get("findings", []))
    return {
        "dir": d,
        "kernel": next((r.get("kernel") for r in rows if r.get("t") == "campaign"), "?"),
        "cases": len(cases),
        "elapsed_s": elapsed,
        "cases_per_s": len(cases) / elapsed if elapsed > 0 else 0.0,
        "slots": {g: dict(s, cases_per_s=(s["cases"] / elapsed if elapsed > 0 else 0.0)) for g, s in slots.items()},
        "duplicate_indices": sorted(dup)[:20],
        "n_duplicates": len(dup),
        "findings": [f"{f.get('id', '?')} {f.get('signature', f.get('class', '?'))}" for f in findings],
        "crash_findings": sum(1 for f in findings if str(f.get("signature", f.get("class", ""))).startswith("crash")),
        "rows": cases,
    }


def crash_isolation(c):
    """(ok, text): after the first crash verdict, each other slot still passes cases. A slot may
    crash on cases of its own in between (a revision built to crash does so often); what must
    not happen is that the first crash stops the other workers for the rest of the campaign."""
    rows = c["rows"]
    first = next((k for k, r in enumerate(rows) if r["v"] == "crash"), None)
    if first is None:
        return False, "no crash verdict in the journal"
    crashed = rows[first]["g"]
    others = [g for g in c["slots"] if g != crashed]
    if not others:
        return False, f"only slot {crashed}: no other worker to keep running"
    texts, ok = [], True
    for g in others:
        after = [r["v"] for r in rows[first + 1:] if r["g"] == g]
        passed = after.count("pass")
        ok &= passed > 0
        texts.append(f"{g}: {len(after)} verdicts after it, {passed} pass")
    return ok, f"first crash: case {rows[first]['i']} on {crashed}; " + "; ".join(texts)


def utilisation(path):
    """Mean utilisation per GPU index from nvidia-smi csv samples (index, util)."""
    per = collections.defaultdict(list)
    try:
        with open(path) as f:
            for line in f:
                parts = [p.strip() for p in line.split(",")]
                if len(parts) == 2 and parts[0].isdigit() and parts[1].isdigit():
                    per[int(parts[0])].append(int(parts[1]))
    except OSError as e:
        raise Unreadable(f"{path}: {e}") from e
    return {i: (sum(v) / len(v), len(v)) for i, v in sorted(per.items())}


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--one", required=True, help="campaign directory: one GPU")
    ap.add_argument("--all", required=True, help="campaign directory: every GPU")
    ap.add_argument("--crash", required=True, help="campaign directory: a crashing revision on every GPU")
    ap.add_argument("--util", help="nvidia-smi samples during --all (index, utilization)")
    ap.add_argument("--json", help="also write the results here")
    a = ap.parse_args(argv)
    try:
        one, allg, crash = campaign(a.one), campaign(a.all), campaign(a.crash)
        util = utilisation(a.util) if a.util else {}
    except Unreadable as e:
        print(f"multigpu_check: cannot read {e}", file=sys.stderr)
        return 2

    print(f"{'campaign':8} {'kernel':34} {'slot':6} {'cases':>7} {'cases/s':>8} {'starts':>6}")
    for name, c in (("one", one), ("all", allg), ("crash", crash)):
        for g, s in c["slots"].items():
            print(f"{name:8} {c['kernel'][-34:]:34} {g:6} {s['cases']:7d} {s['cases_per_s']:8.2f} {s['starts']:6d}")
        print(f"{name:8} {'':34} {'total':6} {c['cases']:7d} {c['cases_per_s']:8.2f}   ({c['elapsed_s']:.0f} s)")
    scaling = allg["cases_per_s"] / one["cases_per_s"] if one["cases_per_s"] > 0 else 0.0
    print(f"scaling: {allg['cases_per_s']:.2f} cases/s on {len(allg['slots'])} workers against "
          f"{one['cases_per_s']:.2f} on 1: {scaling:.2f}x")
    for i, (mean, n) in util.items():
        print(f"GPU {i}: {mean:.0f}% busy on average ({n} samples)")

    checks = []
    for name, c in (("all", allg), ("crash", crash)):
        busy = [g for g, s in c["slots"].items() if s["cases"] > 0]
        checks.append((f"{name}: one worker per GPU, each with cases", len(c["slots"]) >= 2 and len(busy) == len(c["slots"]),
                       f"{len(busy)} of {len(c['slots'])} slots ran cases"))
    for name, c in (("one", one), ("all", allg), ("crash", crash)):
        checks.append((f"{name}: no case index run twice", c["n_duplicates"] == 0,
                       f"{c['n_duplicates']} duplicated" + (f" (e.g. {c['duplicate_indices']})" if c["n_duplicates"] else "")))
    checks.append(("one, all: no findings", not one["findings"] and not allg["findings"],
                   f"one: {one['findings'] or 'none'}; all: {allg['findings'] or 'none'}"))
    checks.append(("crash: a crash finding", crash["crash_findings"] > 0, f"{crash['findings'] or 'none'}"))
    ok_iso, text_iso = crash_isolation(crash)
    checks.append(("crash: the other workers keep running", ok_iso, text_iso))
    if util:
        checks.append(("all: every GPU busy (nvidia-smi mean >= 10%)", all(m >= 10 for m, _ in util.values()),
                       ", ".join(f"GPU {i} {m:.0f}%" for i, (m, _) in util.items())))
    failed = 0
    for what, ok, detail in checks:
        print(f"{'ok  ' if ok else 'FAIL'} {what}: {detail}")
        failed += 0 if ok else 1
    if a.json:
        out = {"scaling": scaling, "utilisation": {str(i): m for i, (m, _) in util.items()},
               "checks": [{"check": w, "ok": o, "detail": d} for w, o, d in checks]}
        for name, c in (("one", one), ("all", allg), ("crash", crash)):
            out[name] = {k: v for k, v in c.items() if k != "rows"}
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    print(f"multigpu_check: {len(checks) - failed} of {len(checks)} checks hold")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
