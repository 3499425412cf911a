#!/usr/bin/env bash
# fuzz_investigation.sh VATTN
# A finding is confirmed and shrunk beside the stream, not instead of it (issue 47, item 6): one
# host worker, host:faulty:hang@P=298, 1 s case deadlines, 16000 cases, on a pseudo-terminal.
# Seed 12 draws P_b = 298 once in its first 80000 cases, at case 1395: that case hangs, and its
# investigation (a second worker; each hang of the confirmation and of the shrink costs the 1 s
# deadline, each run a fresh process) runs while the stream goes on. Checks:
#   - one NNN-hang finding "hang: deadline passed", confirmed, shrunk to B=1 H=1 P=[298] T=[1];
#     every case ran (16000 case lines, each index once), exit 1;
#   - the progress line said "investigating 001 hang: deadline passed" and the journal's ticks
#     list the finding under "investigating";
#   - summary.json's stream_spans: the stream ran while the finding was investigated at no less
#     than half its rate without one. Both rates are measured in this run (stream-worker seconds
#     with cases to run, less the time a hung case held the worker), so a loaded machine slows
#     both; the numbers are printed.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/fuzz_lib.sh"
d=$tmp/campaign

run pty python3 "$here/fuzz_check.py" pty "$tmp/pty.log" -- "$vattn" fuzz --kernel host:faulty:hang@P=298 \
  --budget small --case-timeout 1 --heartbeat-timeout 5 --no-report --cases 16000 --seed 12 --out "$d"
want_rc pty 1
if grep -qF "investigating 001 hang: deadline passed" "$tmp/pty.log"; then
  echo "ok: the progress line says the finding is being investigated"
else
  fail "no progress line with 'investigating 001 hang: deadline passed'"
  tail -c 2000 "$tmp/pty.log"
fi
check finding "$d" --class hang --sig-is "hang: deadline passed" --first-has P=298 --confirmed \
  --shrunk "B=1 H=1 P=[298] T=[1]" --files repro.h5,shrunk.h5
check journal "$d" --cases 16000 --runs 1 --end --findings 1
check summary "$d" --cases 16000 --findings 1 --this-run 16000

python3 - "$d" <<'PY' || fail "the stream's rate while the finding was investigated"
import json, sys
d = sys.argv[1]
s = json.load(open(d + "/summary.json"))
ticks = [json.loads(l) for l in open(d + "/journal.jsonl") if '"t":"tick"' in l]
spans = s["stream_spans"]
clean, inv = spans["clean"], spans["investigating"]
iv = s["findings"][0]["investigation"]
print(f"investigation: {iv['runs']} runs, {iv['shrink_steps']} shrink steps, {iv['seconds']} s "
      f"({iv['busy_seconds']} s of it busy)")
print(f"stream without an investigation: {clean['cases']} cases in {clean['seconds']} s = {clean['cases_per_s']}/s")
print(f"stream while investigating:      {inv['cases']} cases in {inv['seconds']} s = {inv['cases_per_s']}/s")
bad = []
if clean["seconds"] < 1 or inv["seconds"] < 2:
    bad.append("too little time in one of the spans to compare them")
else:
    rate = clean["cases"] / clean["seconds"]
    expected = rate * inv["seconds"]  # the investigation window's length at the clean rate
    share = inv["cases"] / expected if expected > 0 else 0.0
    print(f"cases while investigating: {inv['cases']} of {expected:.0f} at the clean rate ({100 * share:.0f}%)")
    if share < 0.5:
        bad.append(f"the stream ran {100 * share:.0f}% of its clean rate while investigating (need >= 50%)")
if not any("001" in t.get("investigating", []) for t in ticks):
    bad.append("no tick line lists finding 001 under 'investigating'")
if not all(isinstance(t.get("rate"), (int, float)) for t in ticks):
    bad.append("a tick line without a rate")
for b in bad:
    print("FAIL: " + b)
if not bad:
    print("ok: the stream kept at least half its rate while the finding was confirmed and shrunk")
sys.exit(1 if bad else 0)
PY
finish
