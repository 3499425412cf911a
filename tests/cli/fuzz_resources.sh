#!/usr/bin/env bash
# fuzz_resources.sh VATTN MODE
# A case the suite could not run for want of a resource (the device full of other processes'
# memory) is no finding (issue 47, item 7). host:faulty's oom action throws the ResourceError the
# GPU target's cudaMalloc of a case's buffers throws (vattn/case/resource_error.h). Each MODE is one
# ctest test:
#   oom        host:faulty:oom@P=77, 100 cases, seed 7 (P_b = 77 at cases 2, 44, 85, 89): exit 0,
#              no finding directory, 96 cases passed and 4 not run (verdict "resource", never
#              "pass"); the journal holds 3 resource lines per such case (retry, retry, gave up,
#              each its attempt number) before its case line; summary.json's resources say 12
#              errors, 8 retried, 4 given up and list the 4 cases; the closing line says
#              "96 cases, 0 findings; 4 not run (resource errors)"
#   oom-once   host:faulty:oom-once@P=77 (the first run of a recipe only): every case passes, the
#              4 cases retried once each on a fresh worker; exit 0, nothing given up
#   recipe     `vattn fuzz --recipe` of a case with P_b = 77: oom gives "NOT RUN" and exit 2 after
#              3 attempts, oom-once passes on its second
here=$(cd "$(dirname "$0")" && pwd)
source "$here/fuzz_lib.sh"
mode=$2
d=$tmp/campaign
export VATTN_FAULTY_STATE=$tmp/faulty-state  # where host:faulty's -once rules mark what they ran
mkdir -p "$VATTN_FAULTY_STATE"

# resources DIR ERRORS RETRIED GAVE_UP: summary.json's resources and the journal's resource lines.
resources() {
  python3 - "$@" <<'PY'
import collections, json, sys
d, errors, retried, gave_up = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
s = json.load(open(d + "/summary.json"))
lines = [json.loads(l) for l in open(d + "/journal.jsonl")]
r = s.get("resources", {})
bad = []
got = (r.get("errors"), r.get("retried"), r.get("gave_up"))
print(f"summary resources: errors {got[0]}, retried {got[1]}, gave up {got[2]}")
if got != (errors, retried, gave_up):
    bad.append(f"resources {got}, expected {(errors, retried, gave_up)}")
if len(r.get("not_run", [])) != gave_up or s.get("verdicts", {}).get("resource", 0) != gave_up:
    bad.append(f"not_run {r.get('not_run')} / verdicts {s.get('verdicts')}: expected {gave_up} not run")
if s.get("this_run", {}).get("not_run") != gave_up:
    bad.append(f"this_run {s.get('this_run')}")
if s.get("findings") or s.get("failed") != 0:
    bad.append(f"findings {s.get('findings')}, failed {s.get('failed')}: a resource error is no failure")
res = [l for l in lines if l.get("t") == "resource"]
if len(res) != errors:
    bad.append(f"{len(res)} resource lines in the journal, expected {errors}")
# Per case: attempts 1, 2, ... in order, "retry" until the last, which says "gave up" only when the
# case was given up, and comes before the case's own line.
by_case = collections.defaultdict(list)
case_at = {}
for n, l in enumerate(lines):
    if l.get("t") == "resource":
        by_case[l.get("i")].append((n, l))
    elif l.get("t") == "case":
        case_at[l["i"]] = (n, l)
for i, rs in by_case.items():
    attempts = [l.get("attempt") for _, l in rs]
    thens = [l.get("then") for _, l in rs]
    n_case, case = case_at.get(i, (-1, {}))
    gave = case.get("v") == "resource"
    want = ["retry"] * (len(rs) - 1) + ["gave up" if gave else "retry"]
    if attempts != list(range(1, len(rs) + 1)) or thens != want or rs[-1][0] > n_case:
        bad.append(f"case {i}: resource lines {[l for _, l in rs]}, case line {case}")
    if gave and case.get("sig"):
        bad.append(f"case {i}: a not-run case line with a signature {case}")
for b in bad:
    print("FAIL: " + b)
if not bad:
    print("ok: resource errors counted, retried and journaled; no finding")
sys.exit(1 if bad else 0)
PY
}

case $mode in
oom)
  # One case in flight at a time: a retry's worker replacement sends back no case that had run.
  fuzz oom --kernel host:faulty:oom@P=77 "${small[@]}" --window 1 --cases 100 --seed 7 --out "$d"
  want_rc oom 0
  has oom out "vattn fuzz: 96 cases, 0 findings; 4 not run (resource errors)"
  has oom out "resource errors: 12, retried 8, gave up 4"
  has oom out "not run: case 2: B=1 H=1 P=[77] T=[3] "
  lacks oom out "finding 001"
  check no-findings "$d"
  check journal "$d" --cases 100 --runs 1 --end --findings 0
  check summary "$d" --cases 100 --findings 0 --this-run 96
  resources "$d" 12 8 4 || fail "resource accounting"
  python3 -c '
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1] + "/journal.jsonl") if "\"t\":\"case\"" in l]
v = {l["i"]: l["v"] for l in lines}
bad = {i: x for i, x in v.items() if (x == "resource") != (i in (2, 44, 85, 89)) or x not in ("pass", "resource")}
print(("FAIL: " if bad else "ok: ") + "cases 2, 44, 85, 89 not run, every other one passed" + (f": {bad}" if bad else ""))
sys.exit(1 if bad else 0)' "$d" || fail "the case lines"
  ;;
oom-once)
  # One case in flight at a time: no case with P_b = 77 runs (and is marked) in a worker that a
  # retry then replaces before its verdict is read.
  fuzz once --kernel host:faulty:oom-once@P=77 "${small[@]}" --window 1 --cases 100 --seed 7 --out "$d"
  want_rc once 0
  has once out "vattn fuzz: 100 cases, 0 findings"
  lacks once out "not run"
  has once out "resource errors: 4, retried 4, gave up 0"
  check no-findings "$d"
  check journal "$d" --cases 100 --verdict pass --runs 1 --end --findings 0
  check summary "$d" --cases 100 --findings 0 --this-run 100
  resources "$d" 4 4 0 || fail "resource accounting"
  # Each retry ran on a fresh worker: a start of the slot's worker per retry, besides the first.
  python3 -c '
import json, sys
s = json.load(open(sys.argv[1] + "/summary.json"))
starts = s["workers"][0]["worker_starts"]
print(("ok: " if starts == 5 else "FAIL: ") + f"{starts} worker starts: the first and one per retry (expected 5)")
sys.exit(0 if starts == 5 else 1)' "$d" || fail "fresh workers for the retries"
  ;;
recipe)
  line="B=1 H=1 P=[77] T=[3] tree=chain profile=uniform layout=contiguous poison=0 seed=1 scale=0.1446796 splits=0"
  fuzz always --kernel host:faulty:oom@P=77 --recipe "$line"
  want_rc always 2
  has always out "NOT RUN $line  out of device memory 3 times: host:faulty oom@P=77"
  lacks always out "PASS"
  lacks always out "FAIL"
  has always err "out of device memory"
  fuzz first-only --kernel host:faulty:oom-once@P=77 --recipe "$line"
  want_rc first-only 0
  has first-only out "PASS $line"
  has first-only err "again in a fresh worker"
  ;;
*)
  echo "fuzz_resources.sh: unknown mode '$mode'"
  exit 2
  ;;
esac
finish
