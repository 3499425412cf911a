#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The closing line of scripts/replay-all.sh, from `vattn replay --json`'s report.

A replay without a GPU passes every file by comparing each stored output with a recomputed oracle:
the kernel did not run. This says so in one line: what passed and what those passes compared
(stored outputs, or live runs of the kernel), what was not run and why, what could not be used.

    replay_summary.py REPORT.json [--files N]

Exit status: 0 when the line was printed, 2 when the report cannot be read (missing, not JSON, or
not a vattn-replay-report version 1; the message names the file and the field).
"""

from __future__ import annotations

import argparse
import json
import sys


class ReportError(Exception):
    pass


def field(report: dict, name: str, kind: type):
    value = report.get(name)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise ReportError(f"field '{name}': expected {kind.__name__}, found {type(value).__name__}")
    return value


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def closing_line(report: dict, files: int | None) -> str:
    if report.get("schema") != "vattn-replay-report" or report.get("version") != 1:
        raise ReportError("field 'schema'/'version': not a vattn-replay-report version 1")
    passed = field(report, "passed", int)
    failed = field(report, "failed", int)
    results = field(report, "results", list)
    not_run = field(report, "not_run", list)
    unusable = field(report, "unusable", list)
    kinds: dict[str, int] = {}
    for i, r in enumerate(results):
        if not isinstance(r, dict) or not isinstance(r.get("kind"), str):
            raise ReportError(f"field 'results[{i}].kind': missing")
        kinds[r["kind"]] = kinds.get(r["kind"], 0) + 1
    live = kinds.get("live", 0)
    stored = kinds.get("stored_oracle", 0) + kinds.get("stored", 0)
    what = [f"{plural(stored, 'stored output')} held to the recomputed oracle"] if stored else []
    if live:
        what.append(f"{plural(live, 'live run')} of a kernel or the GPU oracle")
    else:
        what.append("no kernel ran")
    parts = [f"{passed} passed", f"{failed} failed ({'; '.join(what)})"]
    if not_run:
        reasons = []
        for i, n in enumerate(not_run):
            if not isinstance(n, dict):
                raise ReportError(f"field 'not_run[{i}]': not an object")
            where = f" for case {n['case']}" if isinstance(n.get("case"), str) else ""
            reasons.append(f"{n.get('producer', '?')}{where}: {n.get('reason', '?')}")
        parts.append(f"{len(not_run)} not run ({'; '.join(reasons)})")
    if unusable:
        parts.append(f"{plural(len(unusable), 'unusable input')} (named above)")
    if files is not None:
        parts.append(f"{plural(files, 'file')} given")
    return f"== replay-all: {', '.join(parts)} =="


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("report", help="the JSON report of vattn replay --json")
    ap.add_argument("--files", type=int, help="how many case files were given")
    args = ap.parse_args()
    try:
        with open(args.report, encoding="utf-8") as f:
            report = json.load(f)
        if not isinstance(report, dict):
            raise ReportError("not a JSON object")
        print(closing_line(report, args.files))
    except (OSError, ValueError, ReportError) as e:
        print(f"replay_summary: {args.report}: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
