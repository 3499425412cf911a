#!/usr/bin/env bash
# fuzz_resume.sh VATTN MODE
# A campaign stopped part-way and continued with --resume loses nothing and runs nothing twice.
#   kill9          host:bf16-reference, 150 cases: the supervisor is killed (SIGKILL) once its journal
#                  holds >= 20 case lines; its worker processes die with it (PR_SET_PDEATHSIG) and
#                  the journal keeps every line written so far (no end line). `--resume DIR` exits 0;
#                  the journal's case lines then cover 0..149 exactly once, the lines from before the
#                  kill are still there, there are 2 run lines, summary.json counts 150 cases. Then:
#                  --resume of the finished campaign exits 0 quickly and runs no case; --out on it
#                  exits 2 pointing at --resume and leaves the journal as it was; --resume refuses
#                  another --kernel, a --seed, and a directory that holds no campaign.
#   interrupt      the same campaign stopped with SIGINT: exit 0, an end line and a summary that say
#                  "interrupted", no worker left; --resume completes it, each index once.
#   investigating  host:faulty:hang@P=298 killed (SIGKILL) while it confirms its finding, the stream
#                  running beside it (case lines after the finding line): --resume finishes the
#                  campaign and the investigation, with still one finding directory (no second one for
#                  the same signature), whose count equals the journal's case lines that carry its id.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/fuzz_lib.sh"
mode=$2
d=$tmp/campaign

# start_campaign ARGS...: `vattn fuzz ARGS` in the background; $sup is its pid.
start_campaign() {
  "$vattn" fuzz "$@" >"$tmp/first.out" 2>"$tmp/first.err" </dev/null &
  sup=$!
  echo "started: vattn fuzz $* (pid $sup)"
}
# wait_for TEXT COUNT [SECONDS]: until the journal has COUNT lines containing TEXT (SECONDS, 30 by
# default, at most), or the supervisor ended.
wait_for() {
  for _ in $(seq $((${3:-30} * 20))); do
    [ "$(grep -c -- "$1" "$d/journal.jsonl" 2>/dev/null)" -ge "$2" ] 2>/dev/null && return 0
    kill -0 $sup 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}
# note_workers: the supervisor's children now, in $workers; each must be a vattn fuzz-worker.
# (A worker being replaced may be missing, or not yet exec'd, for a moment: look again then.)
note_workers() {
  local cmd w bad
  for _ in $(seq 20); do
    workers=$(pgrep -P $sup || true)
    bad=
    for w in $workers; do
      cmd=$(tr '\0' ' ' <"/proc/$w/cmdline" 2>/dev/null)
      case $cmd in
        "$vattn fuzz-worker "*) ;;
        *) bad="$bad $w ($cmd)" ;;
      esac
    done
    [ -n "$workers" ] && [ -z "$bad" ] && break
    sleep 0.1
  done
  [ -n "$workers" ] && echo "ok: the supervisor has worker processes ($workers)" ||
    fail "no worker process found under the supervisor"
  [ -z "$bad" ] && echo "ok: each is a vattn fuzz-worker" || fail "children of the supervisor that are not fuzz-workers:$bad"
  for w in $workers; do echo "worker $w: $(tr '\0' ' ' <"/proc/$w/cmdline" 2>/dev/null)"; done
}
# workers_gone: none of $workers is running a second later (a zombie that its new parent has
# not reaped yet is dead).
workers_gone() {
  sleep 1
  local left
  left=$(live_workers "$d")
  [ -z "$left" ] && echo "ok: no live process writes to $d/workers/" ||
    fail "live worker processes of the campaign: $left"
  for w in $workers; do
    state=$(sed 's/^.*) //' "/proc/$w/stat" 2>/dev/null | cut -d' ' -f1)
    if [ -z "$state" ] || [ "$state" = Z ] || [ "$state" = X ]; then
      echo "ok: worker $w is gone (${state:-reaped})"
    else
      fail "worker $w outlived the supervisor (state $state): $(tr '\0' ' ' <"/proc/$w/cmdline")"
      kill -9 "$w" 2>/dev/null  # ours: a leftover of the supervisor this test started
    fi
  done
}
# killed_mid_campaign CASES: the supervisor died of SIGKILL with fewer than CASES case lines.
killed_mid_campaign() {
  kill -9 $sup
  wait $sup 2>/dev/null
  local code=$?
  before=$(case_lines "$d")
  echo "killed the supervisor (wait status $code) with $before case lines journaled"
  [ $code -eq 137 ] && echo "ok: the supervisor died of the SIGKILL" ||
    { fail "the supervisor was not killed by the SIGKILL (exit $code): it ended first?"; show first; }
  [ "$before" -lt "$1" ] && echo "ok: killed mid-campaign ($before of $1 cases)" ||
    fail "the kill did not come mid-campaign: $before case lines"
  check journal "$d" --runs 1 --no-end
  cp "$d/journal.jsonl" "$tmp/journal.before"
}
# kept_journal: the journal from before the stop is a prefix of the journal now.
kept_journal() {
  if cmp -s "$tmp/journal.before" <(head -c "$(stat -c %s "$tmp/journal.before")" "$d/journal.jsonl"); then
    echo "ok: the journal from before the stop is kept as it was, the resumed run appended to it"
  else
    fail "the resumed run rewrote the journal from before the stop"
  fi
}

case $mode in
kill9)
  start_campaign --kernel host:bf16-reference "${small[@]}" --cases 150 --seed 9 --out "$d"
  wait_for '"t":"case"' 20 || fail "the journal never reached 20 case lines"
  note_workers
  killed_mid_campaign 150
  [ "$before" -ge 20 ] || fail "only $before case lines before the kill"
  workers_gone

  # --resume continues the same stream to the end.
  fuzz resume --resume "$d" --case-timeout 2 --heartbeat-timeout 5
  want_rc resume 0
  has resume out "vattn fuzz: 150 cases, 0 findings"
  has resume out "over 2 run(s)"
  check journal "$d" --cases 150 --verdict pass --runs 2 --end --findings 0
  check summary "$d" --cases 150 --findings 0 --this-run $((150 - before))
  check no-findings "$d"
  kept_journal
  python3 - "$d/journal.jsonl" <<'PY' || fail "the resumed run's run line"
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if '"t":"run"' in l]
ok = len(runs) == 2 and runs[1].get("resumed") is True and runs[1].get("run") == 2
print(("ok: " if ok else "FAIL: ") + "the second run line says resumed, run 2: " + json.dumps(runs[-1:]))
sys.exit(0 if ok else 1)
PY

  # --resume of a finished campaign: nothing to run, exit 0 at once.
  cp "$d/journal.jsonl" "$tmp/journal.done"
  t0=$(date +%s.%N)
  fuzz again --resume "$d"
  t1=$(date +%s.%N)
  want_rc again 0
  secs=$(python3 -c "print(round($t1 - $t0, 2))")
  python3 -c "import sys; sys.exit(0 if $secs < 10 else 1)" && echo "ok: resuming a finished campaign took $secs s" ||
  fail "resuming a finished campaign took $secs s"
  has again out "vattn fuzz: 150 cases, 0 findings"
  check journal "$d" --cases 150 --runs 3 --end
  check summary "$d" --cases 150 --this-run 0

  # --out on an existing campaign: exit 2, pointing at --resume; the journal is untouched.
  cp "$d/journal.jsonl" "$tmp/journal.done"
  fuzz out-again --kernel host:bf16-reference "${small[@]}" --cases 150 --seed 9 --out "$d"
  want_rc out-again 2
  has out-again err "already holds a campaign"
  has out-again err "--resume $d"
  cmp -s "$tmp/journal.done" "$d/journal.jsonl" && echo "ok: the journal is untouched" || fail "--out changed the existing journal"

  # --resume keeps the campaign's kernel and seed, and needs a campaign.
  fuzz other-kernel --resume "$d" --kernel host:faulty
  want_rc other-kernel 2
  has other-kernel err "--resume keeps its kernel"
  fuzz with-seed --resume "$d" --seed 3
  want_rc with-seed 2
  has with-seed err "--resume keeps the campaign's seed"
  mkdir -p "$tmp/empty"
  fuzz no-campaign --resume "$tmp/empty"
  want_rc no-campaign 2
  has no-campaign err "no such journal"
  cmp -s "$tmp/journal.done" "$d/journal.jsonl" && echo "ok: the refused --resume runs left the journal as it was" ||
  fail "a refused --resume changed the journal"
  ;;
interrupt)
  start_campaign --kernel host:bf16-reference "${small[@]}" --cases 150 --seed 9 --out "$d"
  wait_for '"t":"case"' 20 || fail "the journal never reached 20 case lines"
  note_workers
  kill -INT $sup
  wait $sup
  code=$?
  before=$(case_lines "$d")
  [ $code -eq 0 ] && echo "ok: the interrupted supervisor exits 0" || { fail "the interrupted supervisor exited $code"; show first; }
  [ "$before" -lt 150 ] && echo "ok: interrupted mid-campaign ($before of 150 cases)" ||
  fail "the interrupt did not come mid-campaign: $before case lines"
  has first out "stopped: interrupted (resume with --resume $d)"
  has first out "vattn fuzz: $before cases, 0 findings"
  workers_gone
  check journal "$d" --runs 1 --end --verdict pass
  check summary "$d" --cases "$before" --this-run "$before" --findings 0
  python3 - "$d" <<'PY' || fail "the end line and summary.json of the interrupted run"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1] + "/journal.jsonl")]
end = [l for l in lines if l["t"] == "end"]
s = json.load(open(sys.argv[1] + "/summary.json"))
ok = len(end) == 1 and "interrupted" in end[0].get("reason", "") and "interrupted" in s.get("stopped", "")
print(("ok: " if ok else "FAIL: ") + "the end line and the summary say interrupted: " + json.dumps(end) + " / " + s.get("stopped", ""))
sys.exit(0 if ok else 1)
PY
  cp "$d/journal.jsonl" "$tmp/journal.before"
  fuzz resume --resume "$d" --case-timeout 2 --heartbeat-timeout 5
  want_rc resume 0
  check journal "$d" --cases 150 --verdict pass --runs 2 --end
  check summary "$d" --cases 150 --this-run $((150 - before))
  kept_journal
  ;;
investigating)
  # Seed 12: case 1395 is the stream's only case with P_b = 298 (in its first 80000); it hangs. The
  # kill comes while its investigation (a second worker) confirms it and the stream runs on.
  start_campaign --kernel host:faulty:hang@P=298 "${small[@]}" --cases 5000 --seed 12 --out "$d"
  wait_for '"t":"finding"' 1 90 || fail "no finding line"  # 1395 cases first: longer on a loaded machine
  sleep 1
  note_workers
  killed_mid_campaign 5000
  grep -q '"t":"finding-done"' "$d/journal.jsonl" && fail "the investigation had ended before the kill"
  beside=$(sed -n '/"t":"finding"/,$p' "$d/journal.jsonl" | grep -c '"t":"case"')
  [ "$beside" -ge 1 ] && echo "ok: the stream ran $beside case(s) while the finding was investigated" ||
    fail "no case line after the finding line: the investigation stopped the stream"
  workers_gone
  fuzz resume --resume "$d" --case-timeout 2 --heartbeat-timeout 5
  want_rc resume 1
  has resume out "vattn fuzz: 5000 cases, 1 finding"
  check journal "$d" --cases 5000 --runs 2 --end --findings 1
  check summary "$d" --cases 5000 --findings 1
  kept_journal
  python3 - "$d" <<'PY' || fail "the finding after --resume"
import json, os, sys
d = sys.argv[1]
dirs = sorted(os.listdir(d + "/findings"))
bad = []
if dirs != ["001-hang"]:
    bad.append(f"finding directories {dirs}, expected ['001-hang']")
else:
    j = json.load(open(d + "/findings/001-hang/finding.json"))
    lines = [json.loads(l) for l in open(d + "/journal.jsonl")]
    hits = [l for l in lines if l["t"] == "case" and l.get("f") == "001"]
    if j.get("signature") != "hang: deadline passed":
        bad.append(f"signature {j.get('signature')!r}")
    if j.get("count") != len(hits) or not hits:
        bad.append(f"count {j.get('count')} but {len(hits)} case lines carry f=001")
    if any(l.get("v") != "hang" for l in lines if l["t"] == "case" and l["v"] != "pass"):
        bad.append("a failed case line that is not a hang")
    if j.get("state") != "done" or not (j.get("investigation") or {}).get("confirmed"):
        bad.append(f"state {j.get('state')!r}, investigation {j.get('investigation')}: the resumed run did not finish it")
    print(f"finding 001-hang after --resume: count {j.get('count')}, state {j.get('state')}")
for b in bad:
    print("FAIL: " + b)
sys.exit(1 if bad else 0)
PY
  ;;
*)
  echo "fuzz_resume.sh: unknown mode '$mode'"
  exit 2
  ;;
esac
finish
# SPDX-License-Identifier: Apache-2.0
