#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# fuzz_record.sh VATTN MODE
# A night's record is kept and its folder is untrusted (issue 51). Host targets, no GPU.
#   fulldisk  a wrong answer and a crash on a "full disk" (ulimit -f 64: writes past 64 KiB fail
#             with EFBIG): each campaign stops with exit 2 naming the file it could not write, the
#             failed case stays a failure in the journal (never input-error, never "0 findings"),
#             the journal and summary.json say why; with room again --resume finishes the finding,
#             its evidence written.
#   stale     a campaign stopped cleanly, then resumed and killed (its summary.json is older than
#             its journal), with a line garbled mid-journal and a case journaled twice: fuzz-merge
#             and vattn report count it from the journal (distinct case indices, its real findings),
#             say so and name the garbled line; without any summary.json too.
#   reuse     a finding line garbled in the journal: --resume names the line, and the next finding
#             of that signature gets a new folder; the old folder's evidence is untouched.
#   confined  a campaign made with a relative --out is resumed from another working directory that
#             holds a folder of the same relative path: the campaign's own files are updated, the
#             other folder is untouched; a journal whose finding dir is ../../x or an absolute
#             folder elsewhere is refused by --resume, fuzz-merge and report, naming the line.
#   kernel    a campaign line naming a revision library with its SHA-256: --resume says it loads
#             it, "as recorded"; refuses it once its bytes changed, when no digest was recorded or
#             the path is relative, unless --allow-changed-kernel (documented in --help).
#   options   run options recorded in each run line and reused by --resume (workers, threads,
#             deadlines, shrink limits, cases); one given again is said and recorded; a recorded
#             value the command line would refuse is an error naming the line and the field.
#   hostile   campaign-line fields (shard [0,0] and [3,2], seed, cases, budget) and summary counts
#             that cannot be: --resume and fuzz-merge exit 2 naming the file and the field.
#   readers   the campaign's own files replaced by what no campaign writes: journal.jsonl and
#             summary.json as a FIFO (no writer: an unbounded wait before), finding.json as a link
#             to /dev/zero (endless), summary.json nested 100000 deep, a journal line of 2 MiB:
#             within seconds, --resume exits 2 naming the file; fuzz-merge says why it cannot use
#             summary.json and counts from the journal (the finding: exit 1); the long line is
#             reported by its number and skipped.
#   preempt   a campaign with a hang to shrink, killed (kill -9) every 5 s and resumed: the case
#             count grows, the shrinking goes on from where it was (its runs never go back), and
#             the campaign finishes with the finding shrunk.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/fuzz_lib.sh"
mode=$2
d=$tmp/campaign
# snapshot DIR: every path under DIR with its type and content digest, sorted.
snapshot() { (cd "$1" && find . -printf '%y %p %l\n' | sort && find . -type f -exec sha1sum {} + | sort); }
json_get() {  # json_get FILE EXPRESSION(d)
  python3 -c 'import json,sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}
expect_eq() {  # expect_eq WHAT GOT WANT
  if [ "$2" = "$3" ]; then echo "ok: $1 = $3"; else fail "$1: got '$2', expected '$3'"; fi
}
# edit_journal DIR PYTHON: rewrites DIR/journal.jsonl; PYTHON sees `lines` (the parsed lines, in
# order) and may change them; `raw` (the text lines) is what is written back when it sets it.
edit_journal() {
  python3 - "$1/journal.jsonl" "$2" <<'PY'
import json, sys
path, code = sys.argv[1], sys.argv[2]
text = [l for l in open(path, encoding="utf-8").read().split("\n") if l]
lines = [json.loads(l) for l in text]
raw = None
exec(code)
if raw is None:
    raw = [json.dumps(l, separators=(",", ":")) for l in lines]
open(path, "w", encoding="utf-8").write("\n".join(raw) + "\n")
PY
}
# distinct DIR EXPR: a figure over the journal's case lines, first line per index (python: `cases`).
distinct() {
  python3 - "$1/journal.jsonl" "$2" <<'PY'
import json, sys
cases = {}
for text in open(sys.argv[1], encoding="utf-8"):
    try:
        l = json.loads(text)
    except ValueError:
        continue
    if isinstance(l, dict) and l.get("t") == "case" and isinstance(l.get("i"), int):
        cases.setdefault(l["i"], l)
print(eval(sys.argv[2]))
PY
}
have_matplotlib() { python3 -c 'import matplotlib, numpy' 2>/dev/null || /usr/bin/python3 -c 'import matplotlib, numpy' 2>/dev/null; }

case $mode in
fulldisk)
  (ulimit -f 64 && exec "$vattn" fuzz --kernel host:faulty:wrong@H=3 "${small[@]}" --cases 200 --seed 3 --out "$d") \
    >"$tmp/full.out" 2>"$tmp/full.err" </dev/null
  rc=$?
  want_rc full 2
  has full err "STOPPING: the evidence of finding 001"
  has full err "could not be written"
  has full err "File too large"
  lacks full out ", 0 findings"
  python3 - "$d" <<'PY' || fail "the journal and summary.json of the full-disk run"
import json, sys
d = sys.argv[1]
lines = [json.loads(l) for l in open(d + "/journal.jsonl")]
cases = [l for l in lines if l.get("t") == "case"]
lost = [l for l in cases if l.get("evidence_error")]
bad = []
if not (len(lost) == 1 and lost[0]["v"] == "wrong" and lost[0].get("f") == "001" and "File too large" in lost[0]["evidence_error"]):
    bad.append(f"one wrong case line of finding 001 with its evidence_error: {lost}")
if any(l["v"] == "input-error" for l in cases):
    bad.append("a case line became input-error")
fatal = [l for l in lines if l.get("t") == "suite-error" and l.get("what") == "fatal"]
if len(fatal) != 1 or "could not be written" not in fatal[0].get("detail", ""):
    bad.append(f"one fatal suite-error line naming what could not be written: {fatal}")
s = json.load(open(d + "/summary.json"))
if "File too large" not in (s.get("suite_failure") or ""):
    bad.append(f"summary.json suite_failure: {s.get('suite_failure')}")
if not any("File too large" in e.get("detail", "") for e in s.get("suite_error_list", [])):
    bad.append(f"summary.json suite_error_list: {s.get('suite_error_list')}")
if s.get("failed", 0) < 1 or len(s.get("findings", [])) != 1:
    bad.append(f"summary.json failed {s.get('failed')}, findings {len(s.get('findings', []))}")
for b in bad:
    print("FAIL: " + b)
print("ok: the case stays a failure, the journal and summary.json say why" if not bad else "")
sys.exit(1 if bad else 0)
PY
  fuzz resumed --resume "$d"
  want_rc resumed 1
  check journal "$d" --cases 200 --runs 2 --end --findings 1
  check finding "$d" --class wrong --files repro.h5,shrunk.h5
  # A crash leaves no result: its repro files are written after the shrinking, by a worker.
  (ulimit -f 64 && exec "$vattn" fuzz --kernel host:faulty:crash@T=17 "${small[@]}" --cases 60 --seed 1 --out "$tmp/crash") \
    >"$tmp/crash.out" 2>"$tmp/crash.err" </dev/null
  rc=$?
  want_rc crash 2
  has crash err "STOPPING: a repro file of finding 001 could not be written"
  has crash err "File too large"
  ;;
stale)
  fuzz first --kernel host:faulty:wrong@H=3 "${small[@]}" --cases 30 --seed 3 --out "$d"
  want_rc first 1
  "$vattn" fuzz --resume "$d" --cases 100000 --no-report >"$tmp/second.out" 2>"$tmp/second.err" </dev/null &
  sup=$!
  for _ in $(seq 600); do
    [ "$(case_lines "$d")" -ge 300 ] && break
    kill -0 $sup 2>/dev/null || break
    sleep 0.05
  done
  kill -9 $sup
  wait $sup 2>/dev/null
  echo "killed the resumed run with $(case_lines "$d") case lines"
  # A line garbled mid-journal, a case journaled twice (as two writers did before the lock), and
  # the torn tail a kill leaves.
  edit_journal "$d" '
raw = [json.dumps(l, separators=(",", ":")) for l in lines]
raw.insert(5, "{\"t\":\"case\",\"i\":7,\"v\":\"pa")
first_wrong = next(l for l in lines if l.get("t") == "case" and l.get("v") == "wrong")
raw.append(json.dumps(first_wrong, separators=(",", ":")))'
  printf '{"t":"case","i":99999,"v":"pa' >>"$d/journal.jsonl"
  want_cases=$(distinct "$d" "len(cases)")
  want_wrong=$(distinct "$d" "sum(1 for l in cases.values() if l['v'] == 'wrong')")
  expect_eq "the stale summary's cases (before the kill)" "$(json_get "$d/summary.json" "d['campaign_cases']")" 30
  run merge "$vattn" fuzz-merge --no-report --out "$tmp/m" "$d"
  want_rc merge 1
  has merge out "counted from its journal: summary.json is older than journal.jsonl"
  has merge out "line 6: not a JSON object"
  expect_eq "merged cases (distinct indices)" "$(json_get "$tmp/m/summary.json" "d['campaign_cases']")" "$want_cases"
  expect_eq "merged verdicts (one per index)" "$(json_get "$tmp/m/summary.json" "sum(d['verdicts'].values())")" "$want_cases"
  expect_eq "merged failed" "$(json_get "$tmp/m/summary.json" "d['failed']")" "$want_wrong"
  expect_eq "merged finding count" "$(json_get "$tmp/m/summary.json" "[f['count'] for f in d['findings']]")" "[$want_wrong]"
  expect_eq "its evidence" "$(json_get "$tmp/m/summary.json" "d['findings'][0]['parts'][0]['evidence']")" \
    "$d/findings/001-wrong"
  if have_matplotlib; then
    run report "$vattn" report "$d" --out "$tmp/report.html"
    want_rc report 0
    has report err "reported from its journal"
    grep -qF "$(python3 -c "print(f'{$want_cases:,}')") over 2 run(s)" "$tmp/report.html" &&
      echo "ok: the report counts $want_cases cases" || fail "the report does not count $want_cases cases over 2 runs"
    grep -qF "counted from the journal" "$tmp/report.html" && echo "ok: the report says so" ||
      fail "the report does not say it was counted from the journal"
  else
    echo "note: no python3 with matplotlib: vattn report not run"
  fi
  # A part that never stopped cleanly has no summary.json at all: counted from its journal too.
  rm "$d/summary.json"
  run merge2 "$vattn" fuzz-merge --no-report --out "$tmp/m2" "$d"
  want_rc merge2 1
  has merge2 out "no summary.json"
  expect_eq "merged cases without a summary" "$(json_get "$tmp/m2/summary.json" "d['campaign_cases']")" "$want_cases"
  ;;
reuse)
  fuzz first --kernel host:faulty:wrong@H=3 "${small[@]}" --cases 10 --seed 3 --out "$d"
  want_rc first 1
  before=$(snapshot "$d/findings/001-wrong")
  n=$(grep -n '"t":"finding"' "$d/journal.jsonl" | cut -d: -f1)
  sed -i "${n}s/.*/{\"t\":\"finding\",\"id\":\"001\" garbled/" "$d/journal.jsonl"
  fuzz resumed --resume "$d" --cases 60
  want_rc resumed 1
  has resumed err "journal.jsonl: line $n: not a JSON object: skipped"
  [ "$(snapshot "$d/findings/001-wrong")" = "$before" ] && echo "ok: finding 001's folder is as it was" ||
    fail "finding 001's folder changed: $(snapshot "$d/findings/001-wrong")"
  [ -f "$d/findings/002-wrong/finding.json" ] && expect_eq "the new finding's id" \
    "$(json_get "$d/findings/002-wrong/finding.json" "d['id']")" "002" || fail "no findings/002-wrong: $(ls "$d/findings")"
  ;;
confined)
  mkdir -p "$tmp/A" "$tmp/B/c1/findings/001-wrong"
  (cd "$tmp/A" && "$vattn" fuzz --kernel host:faulty:wrong@H=3 "${small[@]}" --cases 10 --seed 3 --out c1) \
    >"$tmp/first.out" 2>"$tmp/first.err" </dev/null
  rc=$?
  want_rc first 1
  expect_eq "the finding line's dir" \
    "$(grep '"t":"finding"' "$tmp/A/c1/journal.jsonl" | python3 -c 'import json,sys; print(json.load(sys.stdin)["dir"])')" \
    "findings/001-wrong"
  echo '{"theirs": true}' >"$tmp/B/c1/findings/001-wrong/finding.json"
  theirs=$(snapshot "$tmp/B")
  (cd "$tmp/B" && "$vattn" fuzz --resume ../A/c1 --cases 40 --no-report) >"$tmp/resumed.out" 2>"$tmp/resumed.err" </dev/null
  rc=$?
  want_rc resumed 1
  [ "$(snapshot "$tmp/B")" = "$theirs" ] && echo "ok: the other folder of the same relative path is untouched" ||
    fail "resuming from $tmp/B wrote there: $(snapshot "$tmp/B")"
  check finding "$tmp/A/c1" --class wrong --files repro.h5,shrunk.h5 --min-hits 2
  # A journal is untrusted: a finding folder outside the campaign is refused, naming the line.
  n=$(grep -n '"t":"finding"' "$tmp/A/c1/journal.jsonl" | cut -d: -f1)
  mkdir "$tmp/outside"  # an existing folder elsewhere, as /etc would be (never /etc itself: a broken vattn writes there)
  k=0
  for bad in ../../x "$tmp/outside" findings/../../x/findings/001-wrong/..; do
    k=$((k + 1))
    h=$tmp/h$k
    cp -r "$tmp/A/c1" "$h"
    edit_journal "$h" "
for l in lines:
    if l.get('t') == 'finding': l['dir'] = '$bad'"
    fuzz "resume$k" --resume "$h" --cases 60
    echo "h$k: the finding line's dir is $bad"
    want_rc "resume$k" 2 && has "resume$k" err "journal.jsonl:$n: field 'dir'"
    run "merge$k" "$vattn" fuzz-merge --no-report --out "$tmp/m$k" "$h"
    want_rc "merge$k" 2 && has "merge$k" err "journal.jsonl:$n: field 'dir'"
    run "report$k" "$vattn" report "$h" --out "$tmp/r$k.html"
    want_rc "report$k" 2 && has "report$k" err "journal.jsonl:$n: field 'dir'"
  done
  [ ! -e "$tmp/x" ] && [ -z "$(ls -A "$tmp/outside")" ] && echo "ok: nothing written outside" ||
    fail "written outside the campaign: $(ls -A "$tmp/outside" "$tmp/x" 2>&1)"
  ;;
kernel)
  fuzz base --kernel host:bf16-reference "${small[@]}" --cases 5 --seed 1 --out "$d"
  want_rc base 0
  mkdir "$tmp/lib"
  lib=$tmp/lib/librev.so
  echo "revision one" >"$lib"
  sum=$(sha256sum "$lib" | cut -d' ' -f1)
  # pin DIR KERNEL [SHA]: the campaign line names KERNEL (and its digest).
  pin() {
    edit_journal "$1" "
lines[0]['kernel'] = '$2'
lines[0].pop('kernel_sha256', None)
if '${3:-}': lines[0]['kernel_sha256'] = '${3:-}'"
  }
  pin "$d" "$lib" "$sum"
  fuzz same --resume "$d"
  want_rc same 2  # no GPU here (or the text file does not load): what matters is what it said first
  has same err "loads the revision library $lib (sha256 $sum, as recorded)"
  echo "revision two" >"$lib"
  now=$(sha256sum "$lib" | cut -d' ' -f1)
  lines_before=$(wc -l <"$d/journal.jsonl")
  fuzz changed --resume "$d"
  want_rc changed 2 && has changed err "sha256 $now, recorded $sum" && has changed err "--allow-changed-kernel"
  lacks changed err "loads the revision library"
  expect_eq "journal lines after a refused resume" "$(wc -l <"$d/journal.jsonl")" "$lines_before"
  pin "$d" "$lib"
  fuzz unrecorded --resume "$d"
  want_rc unrecorded 2 && has unrecorded err "recorded no digest" && lacks unrecorded err "loads the revision library"
  pin "$d" "lib/librev.so"
  (cd "$tmp" && "$vattn" fuzz --resume "$d") >"$tmp/relative.out" 2>"$tmp/relative.err" </dev/null
  rc=$?
  want_rc relative 2 && has relative err "relative to the folder it was started from"
  pin "$d" "$lib" "$sum"
  fuzz allowed --resume "$d" --allow-changed-kernel
  want_rc allowed 2 && has allowed err "--allow-changed-kernel: loads the revision library $lib (sha256 $now)"
  fuzz usage --kernel host:bf16-reference --allow-changed-kernel "${small[@]}" --cases 5 --out "$tmp/u"
  want_rc usage 2 && has usage err "--allow-changed-kernel goes with --resume"
  run help "$vattn" fuzz --help
  has help out "--allow-changed-kernel"
  ;;
options)
  fuzz first --kernel host:bf16-reference "${small[@]}" --cases 20 --seed 1 --workers 2 --threads 1 --window 3 \
    --max-shrink-runs 7 --max-shrink-seconds 60 --investigation-share 0.5 --out "$d"
  want_rc first 0
  fuzz second --resume "$d" --cases 40 --case-timeout 3
  want_rc second 0
  has second err "--case-timeout 3: the campaign's last run used 2"
  fuzz third --resume "$d"
  want_rc third 0
  has third out "all 40 cases ran"
  python3 - "$d" <<'PY' || fail "the run lines' options"
import json, sys
runs = [l for l in map(json.loads, open(sys.argv[1] + "/journal.jsonl")) if l.get("t") == "run"]
want = {"workers": 2, "threads": 1, "window": 3, "max_shrink_runs": 7, "max_shrink_seconds": 60,
        "investigation_share": 0.5, "heartbeat_timeout": 5}
bad = []
for n, r in enumerate(runs, 1):
    o = r.get("options") or {}
    for k, v in want.items():
        if o.get(k) != v:
            bad.append(f"run {n}: options.{k} = {o.get(k)!r}, expected {v!r}")
    cases, timeout = (20, 2) if n == 1 else (40, 3)
    if o.get("cases") != cases or o.get("case_timeout") != timeout:
        bad.append(f"run {n}: cases {o.get('cases')}, case_timeout {o.get('case_timeout')}")
for b in bad:
    print("FAIL: " + b)
print("ok: every run line records the run options, and each resume reused them" if not bad else "")
sys.exit(1 if bad else 0)
PY
  expect_eq "the resumed runs' worker slots" "$(python3 -c '
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
second = [n for n, l in enumerate(lines) if l.get("t") == "run"][1]
print(sorted({l["g"] for l in lines[second:] if l.get("t") == "case"}))' "$d/journal.jsonl")" "['host0', 'host1']"
  # A recorded value the command line would refuse.
  n=$(grep -n '"t":"run"' "$d/journal.jsonl" | tail -1 | cut -d: -f1)
  edit_journal "$d" "
[l for l in lines if l.get('t') == 'run'][-1]['options']['workers'] = 0"
  fuzz bad --resume "$d" --cases 50
  want_rc bad 2 && has bad err "journal.jsonl:$n: field 'options.workers'"
  ;;
hostile)
  fuzz base --kernel host:bf16-reference "${small[@]}" --cases 10 --seed 1 --out "$d"
  want_rc base 0
  k=0
  for change in "'shard': [0, 0]" "'shard': [3, 2]" "'seed': 'x'" "'seed': -3" "'cases': -7" "'budget': 'huge'"; do
    k=$((k + 1))
    h=$tmp/h$k
    cp -r "$d" "$h"
    edit_journal "$h" "lines[0].update({$change})"
    field=$(echo "$change" | cut -d"'" -f2)
    echo "h$k: the campaign line with $change"
    fuzz "resume$k" --resume "$h"
    want_rc "resume$k" 2 && has "resume$k" err "journal.jsonl:1: field '$field'"
    run "merge$k" "$vattn" fuzz-merge --no-report --out "$tmp/m$k" "$h"
    want_rc "merge$k" 2 && has "merge$k" err "journal.jsonl:1: field '$field'"
  done
  # The summary's counts, read by fuzz-merge (current: the journal is as long as it says).
  for change in "d['campaign_cases'] = -5" "d['verdicts']['pass'] = 'many'" "d['findings'] = [{'signature': 'x', 'count': -1}]"; do
    k=$((k + 1))
    h=$tmp/h$k
    cp -r "$d" "$h"
    python3 -c "import json,sys; d = json.load(open(sys.argv[1])); $change; json.dump(d, open(sys.argv[1], 'w'))" \
      "$h/summary.json"
    echo "h$k: summary.json with $change"
    run "merge$k" "$vattn" fuzz-merge --no-report --out "$tmp/m$k" "$h"
    want_rc "merge$k" 2 && has "merge$k" err "$h/summary.json"
  done
  ;;
readers)
  fuzz base --kernel host:faulty:wrong@H=3 "${small[@]}" --cases 12 --seed 1 --out "$d"
  want_rc base 1
  fins=("$d"/findings/*/)
  [ -f "${fins[0]}finding.json" ] || fail "the base campaign has no finding.json"
  # within SECONDS NAME ARGS...: run with a deadline (a read that blocks would hang the test).
  within() {
    local secs=$1 name=$2
    shift 2
    run "$name" timeout "$secs" "$@"
    [ "$rc" -ne 124 ] || fail "$name: still running after $secs s (a read blocked)"
  }
  h=$tmp/fifo-journal && cp -r "$d" "$h" && rm "$h/journal.jsonl" && mkfifo "$h/journal.jsonl"
  within 20 resume-fifo "$vattn" fuzz --resume "$h" --no-report
  want_rc resume-fifo 2 && has resume-fifo err "journal.jsonl" && has resume-fifo err "not a regular file"
  h=$tmp/fifo-summary && cp -r "$d" "$h" && rm "$h/summary.json" && mkfifo "$h/summary.json"
  within 20 merge-fifo "$vattn" fuzz-merge --no-report --out "$tmp/m-fifo" "$h"
  want_rc merge-fifo 1 && has merge-fifo out "counted from its journal: summary.json cannot be used" &&
    has merge-fifo out "is not a regular file"
  h=$tmp/zero-finding && cp -r "$d" "$h" && fins=("$h"/findings/*/) &&
    rm "${fins[0]}finding.json" && ln -s /dev/zero "${fins[0]}finding.json"
  within 20 resume-zero "$vattn" fuzz --resume "$h" --no-report
  want_rc resume-zero 2 && has resume-zero err "finding.json" && has resume-zero err "not a regular file"
  h=$tmp/deep-summary && cp -r "$d" "$h" &&
    python3 -c "import sys; open(sys.argv[1], 'w').write('[' * 100000 + ']' * 100000)" "$h/summary.json"
  within 20 merge-deep "$vattn" fuzz-merge --no-report --out "$tmp/m-deep" "$h"
  want_rc merge-deep 1 && has merge-deep out "summary.json cannot be used" && has merge-deep out "nested deeper than 64"
  h=$tmp/long-line && cp -r "$d" "$h" &&
    python3 -c "import sys; open(sys.argv[1], 'a').write('{\"t\":\"note\",\"x\":\"' + 'y' * (2 << 20) + '\"}\n')" \
      "$h/journal.jsonl"
  within 20 merge-long "$vattn" fuzz-merge --no-report --out "$tmp/m-long" "$h"
  want_rc merge-long 1 && has merge-long out "longer than 1048576 bytes: skipped"
  ;;
preempt)
  "$vattn" fuzz --kernel host:faulty:hang@P=77 --budget small --case-timeout 2 --heartbeat-timeout 5 --no-report \
    --cases 60 --seed 5 --out "$d" >"$tmp/run.out" 2>"$tmp/run.err" </dev/null &
  sup=$!
  counts=""
  finished=0
  for round in $(seq 30); do
    for _ in $(seq 50); do
      kill -0 $sup 2>/dev/null || break
      sleep 0.1
    done
    if ! kill -0 $sup 2>/dev/null; then
      wait $sup
      rc=$?
      echo "round $round: the campaign ended (exit $rc)"
      finished=$round
      break
    fi
    kill -9 $sup
    wait $sup 2>/dev/null
    for _ in $(seq 50); do [ -z "$(live_workers "$d")" ] && break; sleep 0.1; done
    counts="$counts $(case_lines "$d")"
    echo "round $round: killed with $(case_lines "$d") case lines; last shrink line:" \
      "$(grep '"t":"shrink"' "$d/journal.jsonl" | tail -1 | cut -c1-100)"
    "$vattn" fuzz --resume "$d" --no-report >>"$tmp/run.out" 2>>"$tmp/run.err" </dev/null &
    sup=$!
  done
  counts="$counts $(case_lines "$d")"
  [ "$finished" -gt 0 ] && echo "ok: the campaign finished after $finished rounds" ||
    { fail "30 rounds of 5 s did not finish the campaign"; kill -9 $sup 2>/dev/null; wait $sup 2>/dev/null; }
  expect_eq "its exit" "$rc" 1
  python3 - "$d" "$counts" <<'PY' || fail "progress under preemption"
import json, sys
d, counts = sys.argv[1], [int(x) for x in sys.argv[2].split()]
lines = [json.loads(l) for l in open(d + "/journal.jsonl")]
bad = []
if len(counts) < 3 or counts != sorted(counts) or counts[-1] <= counts[0]:
    bad.append(f"the case count after each round does not grow: {counts}")
runs = [l["runs"] for l in lines if l.get("t") == "shrink"]
if not runs or any(b < a for a, b in zip(runs, runs[1:])):
    bad.append(f"the shrinking went back (its runs, in order): {runs}")
starts = sum(1 for l in lines if l.get("t") == "run")
if starts < 3:
    bad.append(f"only {starts} run(s): the campaign was not preempted")
for b in bad:
    print("FAIL: " + b)
print(f"ok: cases after each round {counts}; shrink runs {runs[:1]}..{runs[-1:]} never went back" if not bad else "")
sys.exit(1 if bad else 0)
PY
  check journal "$d" --cases 60 --end --findings 1
  check finding "$d" --class hang --shrunk "B=1 H=1 P=[77] T=[1]" --confirmed
  ;;
*)
  fail "unknown mode '$mode'"
  ;;
esac
finish
