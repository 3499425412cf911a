#!/usr/bin/env bash
# fuzz_multigpu.sh VATTN: scripts/device/multigpu_step.sh (issue 20's two-GPU run) through its host
# path, and its checker scripts/device/multigpu_check.py on campaigns that must fail it:
#   - the step with VATTN_MULTI_TARGET=host, 6 s a campaign: exit 0, every check holds, per-worker
#     rows for host0 and host1, a scaling line, multigpu.json with the checks;
#   - the checker with the clean campaign as --crash: no crash finding, no crash to survive (exit 1);
#   - a journal with one case index twice: "no case index run twice" fails (exit 1);
#   - a campaign whose other worker gives no verdict after the first crash: isolation fails (exit 1);
#   - a directory that is not a campaign: exit 2; bad SECONDS or target: exit 2.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/fuzz_lib.sh"
root=$(cd "$here/../.." && pwd)
step="$root/scripts/device/multigpu_step.sh"
checker="$root/scripts/device/multigpu_check.py"

run step env OUT="$tmp/out" VATTN_MULTI_TARGET=host VATTN_EXE="$vattn" bash "$step" 6
want_rc step 0
has step out "multigpu_check: 8 of 8 checks hold"
has step out "all      host:bf16-reference                host1"
has step out "scaling: "
has step out "ok   crash: the other workers keep running: first crash: case"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert all(c['ok'] for c in d['checks']) and len(d['checks']) == 8, d['checks']" \
  "$tmp/out/multigpu.json" || fail "multigpu.json: not 8 passing checks"
m="$tmp/out/multigpu"

run nocrash python3 "$checker" --one "$m/one" --all "$m/all" --crash "$m/all"
want_rc nocrash 1
has nocrash out "FAIL crash: a crash finding"
has nocrash out "FAIL crash: the other workers keep running: no crash verdict in the journal"

cp -r "$m/all" "$tmp/dup"
# shellcheck disable=SC2094  # grep -m1 reads one line, then appends it once: a duplicated case line
grep -m1 '"t":"case"' "$tmp/dup/journal.jsonl" >>"$tmp/dup/journal.jsonl"
run dup python3 "$checker" --one "$m/one" --all "$tmp/dup" --crash "$m/crash"
want_rc dup 1
has dup out "FAIL all: no case index run twice: 1 duplicated"

# After the first crash the other slot never passes a case again: isolation fails.
cp -r "$m/crash" "$tmp/both"
python3 - "$tmp/both/journal.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
k = next(i for i, r in enumerate(rows) if r.get("t") == "case" and r["v"] == "crash")
other = "host1" if rows[k]["g"] == "host0" else "host0"
rows = rows[:k + 1] + [r for r in rows[k + 1:] if not (r.get("t") == "case" and r["g"] == other)]
with open(sys.argv[1], "w") as f:
    f.writelines(json.dumps(r) + "\n" for r in rows)
PY
run both python3 "$checker" --one "$m/one" --all "$m/all" --crash "$tmp/both"
want_rc both 1
has both out "0 verdicts after it, 0 pass"

run notdir python3 "$checker" --one "$tmp" --all "$m/all" --crash "$m/crash"
want_rc notdir 2
has notdir err "multigpu_check: cannot read"
run badsecs bash "$step" 1x
want_rc badsecs 2
has badsecs err "SECONDS must be a whole number"
run badtarget env VATTN_MULTI_TARGET=tpu VATTN_EXE="$vattn" bash "$step" 5
want_rc badtarget 2
has badtarget err "VATTN_MULTI_TARGET is gpu or host"
finish
