#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The closing summary of a ctest run, in pytest's manner, from the JUnit XML ctest wrote.

ctest counts a skipped test among the passed ("100% tests passed") and says why nowhere; this
prints what ran, what did not and why: each skipped test's reason (the line it printed), grouped,
the gpu-labelled ones last and one by one; the tests a label kept out (--deselected-label); the
failures; then one closing line, which it prints again as the very last line.

    ctest_summary.py --build DIR --junit FILE [--selection FILE] [--deselected-label LABEL]... [--hint TEXT]
                     [--seconds N]

--selection is `ctest --show-only=json-v1` with the caller's own filters (without the label it left
out): the tests the caller asked for, so that only those count as not run for that label.

Exit status: 0 when the summary was printed, 2 when the JUnit file or the test list cannot be read.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass

SKIP_LINE = re.compile(r"^\s*(?:SKIPPED|SKIP)\b[:\s]\s*(.*\S)")


@dataclass
class Result:
    name: str
    status: str  # passed, failed, skipped, disabled
    reason: str  # skipped: the line the test printed; failed: its last line
    seconds: float


def skip_reason(output: str) -> str:
    """The reason a skipped test gave: its last SKIP/SKIPPED line, else its last line."""
    lines = [line for line in output.splitlines() if line.strip()]
    for line in reversed(lines):
        m = SKIP_LINE.match(line)
        if m:
            return m.group(1)
    return lines[-1].strip() if lines else "(it printed no reason)"


def read_junit(path: str) -> list[Result]:
    root = ET.parse(path).getroot()
    results = []
    for case in root.iter("testcase"):
        name = case.get("name", "?")
        status = case.get("status", "")
        out = case.findtext("system-out") or ""
        seconds = float(case.get("time") or 0)
        skipped = case.find("skipped")
        failure = case.find("failure")
        if status == "disabled":
            results.append(Result(name, "disabled", "DISABLED property", seconds))
        elif skipped is not None and "SKIP_" in (skipped.get("message") or ""):
            results.append(Result(name, "skipped", skip_reason(out), seconds))
        elif status == "run" and failure is None:
            results.append(Result(name, "passed", "", seconds))
        else:  # failed, timed out, or not run for want of its executable (ctest counts those as failed)
            lines = [line.strip() for line in out.splitlines() if line.strip()]
            message = failure.get("message", "") if failure is not None else ""
            if skipped is not None and not message:
                message = skipped.get("message") or "not run"
            # Its last line says most (the FAIL line of a script); ctest's message adds only what is not
            # a plain failure (Timeout, a signal).
            extra = message if message.lower() not in ("", "fail", "failed") else ""
            last = lines[-1] if lines else ""
            reason = f"{extra}: {last}" if extra and last and extra not in last else last or extra or "failed"
            results.append(Result(name, "failed", reason, seconds))
    return results


def read_tests(build: str, selection: str | None) -> dict[str, dict[str, object]]:
    """The tests asked for (the selection file, else every test of the build) and their properties."""
    if selection:
        with open(selection, encoding="utf-8") as f:
            out = f.read()
    else:
        out = subprocess.run(
            ["ctest", "--test-dir", build, "--show-only=json-v1"], check=True, capture_output=True, text=True
        ).stdout
    tests = {}
    for test in json.loads(out).get("tests", []):
        tests[test.get("name", "?")] = {p.get("name"): p.get("value") for p in test.get("properties", [])}
    return tests


def short(reason: str, width: int = 70) -> str:
    """A reason cut to fit the closing line (the full text is in the lines above it)."""
    return reason if len(reason) <= width else reason[: width - 3].rstrip() + "..."


def names(items: list[str], most: int = 6) -> str:
    shown = ", ".join(items[:most])
    return shown + (f", +{len(items) - most} more" if len(items) > most else "")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True, help="the build folder ctest ran in")
    ap.add_argument("--junit", required=True, help="the JUnit XML file ctest wrote (--output-junit)")
    ap.add_argument("--selection", help="ctest --show-only=json-v1 of the tests asked for (default: all)")
    ap.add_argument(
        "--deselected-label", action="append", default=[], help="a label the run left out (ctest -LE): its tests are listed"
    )
    ap.add_argument("--hint", default="", help="how to run the deselected tests, for the closing line")
    ap.add_argument("--seconds", type=int, help="the run's wall time, measured by the caller")
    args = ap.parse_args()
    try:
        results = read_junit(args.junit)
    except (OSError, ET.ParseError) as e:
        print(f"ctest_summary: {args.junit}: cannot read ctest's results: {e}", file=sys.stderr)
        return 2
    try:
        tests = read_tests(args.build, args.selection)
    except (OSError, subprocess.CalledProcessError, json.JSONDecodeError) as e:
        print(f"ctest_summary: {args.build}: cannot list its tests (ctest --show-only=json-v1): {e}", file=sys.stderr)
        return 2

    labels = {name: props.get("LABELS") or [] for name, props in tests.items()}
    # ctest's JUnit says nothing of a timeout: a failure that ran as long as its TIMEOUT is one.
    for r in results:
        timeout = tests.get(r.name, {}).get("TIMEOUT")
        if r.status == "failed" and isinstance(timeout, (int, float)) and timeout > 0 and r.seconds >= timeout - 0.5:
            r.reason = f"timed out after {timeout:g} s; last line: {r.reason}"
    ran = {r.name for r in results}
    by = {s: [r for r in results if r.status == s] for s in ("passed", "failed", "skipped", "disabled")}
    # A test that ran but is not in the selection (a stale selection file) is judged by its name alone.
    is_gpu = {r.name: "gpu" in labels.get(r.name, []) for r in results}
    skipped_gpu = [r for r in by["skipped"] if is_gpu[r.name]]
    deselected = {
        label: [n for n, ls in labels.items() if label in ls and n not in ran] for label in args.deselected_label
    }

    reasons: dict[str, list[str]] = {}
    for r in by["skipped"]:
        reasons.setdefault(r.reason, []).append(r.name)
    parts = [f"{len(by['failed'])} failed"] if by["failed"] else []
    parts.append(f"{len(by['passed'])} passed")
    if by["skipped"]:
        why = "; ".join(f"{len(ns)}: {short(reason)}" for reason, ns in sorted(reasons.items(), key=lambda kv: -len(kv[1])))
        parts.append(f"{len(by['skipped'])} skipped ({why})")
    for label, ns in deselected.items():
        if ns:
            parts.append(f"{len(ns)} not run (label {label}{': ' + args.hint if args.hint else ''})")
    if by["disabled"]:
        parts.append(f"{len(by['disabled'])} disabled")
    took = f" in {args.seconds} s" if args.seconds is not None else ""
    closing = f"== {', '.join(parts)}{took} =="

    print()
    print(closing)
    for reason, ns in sorted(reasons.items(), key=lambda kv: -len(kv[1])):
        if any(not is_gpu[n] for n in ns):
            other = [n for n in ns if not is_gpu[n]]
            print(f"SKIPPED [{len(other)}] {reason}: {names(other)}")
    for label, ns in deselected.items():
        if ns:
            print(f"NOT RUN [{len(ns)}] label {label}: {names(ns)}")
    for r in by["disabled"]:
        print(f"DISABLED {r.name}")
    for r in by["failed"]:
        print(f"FAILED {r.name}: {r.reason}")
    # The gpu tests last, each with its reason: on a machine without a GPU they are the ones a
    # reader must not take for passes.
    if skipped_gpu:
        print(f"gpu-labelled tests skipped ({len(skipped_gpu)}), each with its reason:")
        for r in skipped_gpu:
            print(f"SKIPPED {r.name}: {r.reason}")
        these = "this gpu test" if len(skipped_gpu) == 1 else f"these {len(skipped_gpu)} gpu tests"
        print(
            f"NOTE: {these} did NOT run, though ctest's 'tests passed' counts skips. Run them on a GPU machine"
            " (ctest -L gpu); VATTN_REQUIRE_GPU=1 makes a gpu test that finds no GPU fail instead of skipping."
        )
    print(closing)
    return 0


if __name__ == "__main__":
    sys.exit(main())
