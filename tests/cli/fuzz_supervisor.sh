#!/usr/bin/env bash
# fuzz_supervisor.sh VATTN MODE
# The `vattn fuzz` supervisor without a GPU, through the host targets (small budget, fixed seeds,
# 2 s case deadlines). Each MODE is one ctest test:
#   crash       host:faulty:crash@T=17: exit 1, one NNN-crash finding (SIGSEGV) whose first case
#               has T_b = 17, confirmed in a fresh worker, shrunk to B=1 H=1 P=[0] T=[17], with
#               repro.h5 and shrunk.h5 (case files holding those recipes); its reproduce command
#               fails (exit 1, FAIL) and the same recipe with T=[16] passes (exit 0)
#   hang        host:faulty:hang@P=77: the hung worker is ended at the deadline, one NNN-hang finding
#               "hang: deadline passed" shrunk to B=1 H=1 P=[77] T=[1]; the campaign still runs all
#               its cases (N case lines and an end line) and leaves no worker behind
#   wrong       host:faulty:wrong@H=3: one NNN-wrong finding "wrong: vs oracle @ <bucket>" (the
#               last head of every row: heads=some rows=whole-requests) shrunk to B=1 H=3 P=[0]
#               T=[1]; `vattn replay` of its repro files fails (the stored output)
#   duplicates  host:faulty:wrong@H=8 (a third of the cases), two workers: one finding whose count
#               equals the journal's case lines that carry its id, and is > 1
#   clean       host:bf16-reference: exit 0, no findings, every case line "pass", summary.json
#   unconfirmed host:faulty:crash-once@T=17 (a crash on a recipe's first run only): the crash's
#               directory is written, but the three fresh workers' re-runs pass: not confirmed, no finding,
#               exit 0; the summary lists it as unconfirmed and the closing line says so
#   stop        host:faulty:wrong@H=3, --cases 100000 --stop-after-findings 1: the campaign stops
#               once its finding is confirmed and shrunk (exit 1), long before the 100000 cases
#   usage       bad targets, rules, options and recipes, a GPU revision with no GPU: exit 2, saying why
#   output      not on a terminal: only the summary (no \r, no escape, no FINDING line, stderr
#               empty); on a pseudo-terminal: a progress line with "cases" and FINDING lines
#   mix         --mix-from a folder written by `vattn gen` (and a file that is not HDF5): exit 0,
#               DIR/mix.json of schema vattn-fuzz-mix with the folder's two shapes, the journal's
#               campaign line names it, about half the case lines are "captured"; --resume goes on
#               with the same mix; a changed mix.json, a missing or empty folder, one with no
#               readable case file and --mix-from with --resume or --recipe exit 2, saying why
#   plan        --plan-variants: a stream that draws other GPUs' plans stops, before any case, at a
#               target whose ready message says it has no plan hook (host targets have none): exit
#               2 naming it and --plan-variants off, nothing left behind; off (the host default) it
#               runs, journaled; --recipe with sms= is refused the same way; the option's usage
# The seeds are chosen so that the faulty values come early in the case stream (seed 3: T_b = 17
# at case 17, H = 3 at case 4; seed 7: P_b = 77 at case 2). If the stream changes (case_stream.cpp,
# gen_recipe.cpp) and a mode finds nothing, pick a seed again: host:faulty:wrong@FIELD=VALUE is
# fast, and its finding's first_case.index says where the value comes.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/fuzz_lib.sh"
mode=$2
# The signature of host:faulty's wrong@H=N: its bucket says one head of every row is wrong.
head_bug="wrong: vs oracle @ values heads=some rows=whole-requests cols=all"

# repro_argv FILE: the command fuzz_check.py --argv-out wrote, with our vattn for "vattn".
repro_argv() {
  mapfile -d '' argv <"$1"
  [ "${argv[0]}" = vattn ] && argv[0]=$vattn
}

case $mode in
crash)
  d=$tmp/campaign
  fuzz crash --kernel host:faulty:crash@T=17 "${small[@]}" --cases 60 --seed 3 --out "$d"
  want_rc crash 1
  has crash out "[001] crash: signal 11 (SIGSEGV)"
  has crash out "vattn fuzz: 60 cases, 1 finding"
  check finding "$d" --class crash --sig SIGSEGV --first-has T=17 --confirmed --shrunk "B=1 H=1 P=[0] T=[17]" \
    --files repro.h5,shrunk.h5 --argv-out "$tmp/reproduce.argv"
  check journal "$d" --cases 60 --runs 1 --end --findings 1
  check summary "$d" --cases 60 --findings 1 --this-run 60
  # The repro files are case files of the first and the shrunk recipe.
  first=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["first_case"]["recipe"])' "$d"/findings/001-crash/finding.json)
  run info "$vattn" info "$d/findings/001-crash/repro.h5" "$d/findings/001-crash/shrunk.h5"
  want_rc info 0
  has info out "recipe: $first"
  has info out "recipe: B=1 H=1 P=[0] T=[17] "
  # The finding's own reproduce command fails the same way; one draft fewer passes.
  if [ -s "$tmp/reproduce.argv" ]; then
    repro_argv "$tmp/reproduce.argv"
    run reproduce "${argv[@]}"
    want_rc reproduce 1
    has reproduce out "FAIL crash: signal 11 (SIGSEGV)  B=1 H=1 P=[0] T=[17] "
    lacks reproduce out "PASS"
  fi
  fuzz pass --kernel host:faulty:crash@T=17 --recipe "B=1 H=1 P=[0] T=[16]"
  want_rc pass 0
  has pass out "PASS B=1 H=1 P=[0] T=[16]"
  lacks pass out "FAIL"
  ;;
hang)
  d=$tmp/campaign
  # Seed 7 draws P_b = 77 early (case 2): the campaign shrinks it, then runs on.
  fuzz hang --kernel host:faulty:hang@P=77 "${small[@]}" --cases 30 --seed 7 --out "$d"
  want_rc hang 1
  has hang out "[001] hang: deadline passed"
  has hang out "vattn fuzz: 30 cases, 1 finding"
  check finding "$d" --class hang --sig-is "hang: deadline passed" --first-has P=77 --confirmed \
    --shrunk "B=1 H=1 P=[77] T=[1]" --files repro.h5,shrunk.h5 --argv-out "$tmp/reproduce.argv"
  check journal "$d" --cases 30 --runs 1 --end --findings 1
  check summary "$d" --cases 30 --findings 1 --this-run 30
  # No worker outlived the campaign (the hung ones were killed, the last one stopped).
  sleep 0.5
  left=$(live_workers "$d")
  if [ -n "$left" ]; then
    fail "workers left running after the campaign: $left"
    # shellcheck disable=SC2086  # echo joins the pids on one line
    ps -o pid,ppid,stat,args -p "$(echo $left | tr ' ' ,)"
  else
    echo "ok: no fuzz-worker of the campaign is left"
  fi
  # The reproduce command hangs too and is ended at its deadline (2 s here, not the default 30).
  if [ -s "$tmp/reproduce.argv" ]; then
    repro_argv "$tmp/reproduce.argv"
    run reproduce "${argv[@]}" --case-timeout 2 --heartbeat-timeout 5
    want_rc reproduce 1
    has reproduce out "FAIL hang: deadline passed  B=1 H=1 P=[77] T=[1] "
  fi
  ;;
wrong)
  d=$tmp/campaign
  fuzz wrong --kernel host:faulty:wrong@H=3 "${small[@]}" --cases 30 --seed 3 --out "$d"
  want_rc wrong 1
  has wrong out "[001] wrong: vs oracle"
  check finding "$d" --class wrong --sig-is "$head_bug" --first-has H=3 --confirmed \
    --shrunk "B=1 H=3 P=[0] T=[1]" --files repro.h5,shrunk.h5 --argv-out "$tmp/reproduce.argv"
  check journal "$d" --cases 30 --runs 1 --end --findings 1
  # The repro files hold the faulty output: replaying them fails against the stored oracle.
  for f in shrunk repro; do
    run "replay-$f" "$vattn" replay "$d/findings/001-wrong/$f.h5"
    want_rc "replay-$f" 1
    has "replay-$f" out "kernel:host:faulty:wrong@H=3 (stored) FAIL"
    has "replay-$f" out "replay: 1 passed, 1 failed"
  done
  if [ -s "$tmp/reproduce.argv" ]; then
    repro_argv "$tmp/reproduce.argv"
    run reproduce "${argv[@]}"
    want_rc reproduce 1
    has reproduce out "FAIL $head_bug  B=1 H=3 P=[0] T=[1] "
  fi
  fuzz pass --kernel host:faulty:wrong@H=3 --recipe "B=1 H=2 P=[0] T=[1]"
  want_rc pass 0
  has pass out "PASS B=1 H=2 P=[0] T=[1]"
  ;;
duplicates)
  d=$tmp/campaign
  fuzz dup --kernel host:faulty:wrong@H=8 "${small[@]}" --cases 60 --seed 3 --workers 2 --out "$d"
  want_rc dup 1
  has dup out "findings: 1 "
  check finding "$d" --class wrong --sig-is "$head_bug" --first-has H=8 --min-count 2 --min-hits 2
  check journal "$d" --cases 60 --runs 1 --end --findings 1
  for w in host0 host1; do
    grep -q "\"g\":\"$w\"" "$d/journal.jsonl" && echo "ok: $w ran cases" || fail "worker $w ran no case"
  done
  ;;
stop)
  d=$tmp/campaign
  fuzz stop --kernel host:faulty:wrong@H=3 "${small[@]}" --cases 100000 --seed 3 --stop-after-findings 1 --out "$d"
  want_rc stop 1
  has stop out "stopped: 1 finding (--stop-after-findings 1)"
  check finding "$d" --class wrong --sig-is "$head_bug" --first-has H=3 --confirmed --shrunk "B=1 H=3 P=[0] T=[1]"
  n=$(case_lines "$d")
  if [ "$n" -ge 1 ] && [ "$n" -lt 20000 ]; then echo "ok: stopped after $n of 100000 cases"
  else fail "stopped after $n of 100000 cases (expected far fewer)"; fi
  ;;
clean)
  d=$tmp/campaign
  fuzz clean --kernel host:bf16-reference "${small[@]}" --cases 40 --seed 5 --out "$d"
  want_rc clean 0
  has clean out "vattn fuzz: 40 cases, 0 findings"
  has clean out "stopped: all 40 cases ran"
  check no-findings "$d"
  check journal "$d" --cases 40 --verdict pass --runs 1 --end --findings 0
  check summary "$d" --cases 40 --findings 0 --this-run 40
  ;;
unconfirmed)
  d=$tmp/campaign
  export VATTN_FAULTY_STATE=$tmp/faulty-state  # where crash-once marks the recipes it crashed on
  mkdir -p "$VATTN_FAULTY_STATE"
  fuzz once --kernel host:faulty:crash-once@T=17 "${small[@]}" --cases 60 --seed 3 --out "$d"
  want_rc once 0
  has once out "vattn fuzz: 60 cases, 0 findings; 1 not confirmed (no finding)"
  has once out "[001] crash: signal 11 (SIGSEGV)"
  has once out "(NOT CONFIRMED)"
  check finding "$d" --class crash --sig SIGSEGV --first-has T=17 --files repro.h5
  check journal "$d" --cases 60 --runs 1 --end --findings 1
  python3 - "$d" <<'PY' || fail "the unconfirmed crash in finding.json and summary.json"
import glob, json, sys
d = sys.argv[1]
f = json.load(open(glob.glob(d + "/findings/001-crash/finding.json")[0]))
s = json.load(open(d + "/summary.json"))
inv = f.get("investigation") or {}
ok = inv.get("confirmed") is False and inv.get("stop_reason", "").startswith("not confirmed: not repeated: 3 fresh run(s)") \
    and s.get("unconfirmed") == ["001"]
print(("ok: " if ok else "FAIL: ") + f"not confirmed: {inv.get('stop_reason')}; summary unconfirmed {s.get('unconfirmed')}")
sys.exit(0 if ok else 1)
PY
  unset VATTN_FAULTY_STATE
  ;;
usage)
  u=$tmp/u
  # expect CODE NAME TEXT -- ARGS...: `vattn fuzz ARGS` exits CODE, stderr has TEXT, no summary.
  expect() {
    local code=$1 name=$2 text=$3
    shift 4
    fuzz "$name" "$@"
    want_rc "$name" "$code"
    has "$name" err "$text"
    lacks "$name" out "vattn fuzz: "
    lacks "$name" out "PASS"
  }
  expect 2 no-kernel "--kernel is required (or --resume DIR)" -- --cases 5 --out "$u/0"
  expect 2 unknown-host "unknown host target 'host:nope'" -- --kernel host:nope "${small[@]}" --cases 5 --out "$u/1"
  expect 2 bad-action "host:faulty rule 'boom@T=1' is not ACTION@FIELD=VALUE" -- \
    --kernel host:faulty:boom@T=1 "${small[@]}" --cases 5 --out "$u/2"
  expect 2 bad-field "host:faulty rule 'crash@Q=1' is not ACTION@FIELD=VALUE" -- \
    --kernel host:faulty:crash@Q=1 "${small[@]}" --cases 5 --out "$u/3"
  expect 2 bad-value "host:faulty rule 'crash@T=x': 'x' is not a whole number" -- \
    --kernel host:faulty:crash@T=x "${small[@]}" --cases 5 --out "$u/4"
  expect 2 no-rules "host:faulty: no rules after ':'" -- --kernel host:faulty: "${small[@]}" --cases 5 --out "$u/5"
  expect 2 once-no-state "host:faulty rule 'oom-once@P=1' needs VATTN_FAULTY_STATE=DIR" -- \
    --kernel host:faulty:oom-once@P=1 "${small[@]}" --cases 5 --out "$u/12"
  expect 2 share "--investigation-share must be in (0, 1] (got 0)" -- --kernel host:bf16-reference \
    --investigation-share 0 --cases 5 --out "$u/13"
  expect 2 budget "--budget must be small, medium or large (got 'huge')" -- \
    --kernel host:bf16-reference --budget huge --cases 5 --out "$u/6"
  expect 2 hours "--hours must be > 0 (got 0)" -- --kernel host:bf16-reference --hours 0 --out "$u/7"
  expect 2 hours-neg "--hours must be > 0 (got -1)" -- --kernel host:bf16-reference --hours -1 --out "$u/8"
  # A GPU revision with no GPU visible (CUDA_VISIBLE_DEVICES= hides any this machine has).
  # A build without CUDA (VATTN_BUILT_WITHOUT_CUDA=1 from ctest) refuses it for that reason instead.
  no_gpu="no CUDA device is visible"
  [ "${VATTN_BUILT_WITHOUT_CUDA:-0}" = 1 ] && no_gpu="--kernel split-v1: this vattn was built without CUDA"
  export CUDA_VISIBLE_DEVICES=
  expect 2 gpu-campaign "$no_gpu" -- --kernel split-v1 --cases 5 --out "$u/9"
  expect 2 gpu-recipe "$no_gpu" -- --kernel split-v1 --recipe "B=1 H=1 P=[0] T=[1]"
  unset CUDA_VISIBLE_DEVICES
  expect 2 recipe-no-T "field 'T': missing" -- --kernel host:bf16-reference --recipe "B=1 H=1 P=[0]"
  expect 2 recipe-bad-host "unknown host target 'host:nope'" -- --kernel host:nope --recipe "B=1 H=1 P=[0] T=[1]"
  expect 2 stop-zero "--stop-after-findings: 0 is outside [1," -- --kernel host:bf16-reference --stop-after-findings 0 \
    --cases 5 --out "$u/11"
  expect 2 repro-alone "--repro goes with --recipe" -- --kernel host:bf16-reference --repro "$u/r.h5" --out "$u/10"
  ;;
output)
  d=$tmp/campaign
  # Not a terminal: the closing summary on stdout, nothing on stderr, no progress, no FINDING lines.
  fuzz plain --kernel host:faulty:wrong@H=3 "${small[@]}" --cases 30 --seed 3 --out "$d"
  want_rc plain 1
  for f in out err; do
    if python3 -c 'import sys; d=open(sys.argv[1],"rb").read(); sys.exit(1 if b"\r" in d or b"\x1b" in d else 0)' \
      "$tmp/plain.$f"; then
      # shellcheck disable=SC2028  # a literal \\r in the message, as written
      echo "ok: std$f has no \\r and no escape sequence"
    else
      fail "std$f of a run that is not on a terminal has a \\r or an escape sequence"; show plain
    fi
  done
  [ -s "$tmp/plain.err" ] && { fail "stderr is not empty"; show plain; } || echo "ok: stderr is empty"
  lacks plain out "FINDING"
  head -1 "$tmp/plain.out" | grep -q "^vattn fuzz: host:faulty:wrong@H=3, seed 3, budget small, campaign $d\$" &&
    echo "ok: stdout starts with the summary" || { fail "stdout does not start with the summary"; show plain; }
  tail -1 "$tmp/plain.out" | grep -qx "vattn fuzz: 30 cases, 1 finding" &&
    echo "ok: stdout ends with the count line" || { fail "stdout does not end with the count line"; show plain; }
  # On a terminal: a progress line (redrawn in place) and a FINDING line per finding and its shrink.
  python3 "$here/fuzz_check.py" pty "$tmp/tty.raw" -- "$vattn" fuzz --kernel host:faulty:wrong@H=3 "${small[@]}" \
    --cases 30 --seed 3 --out "$tmp/tty"
  rc=$?
  [ $rc -eq 1 ] && echo "ok: the terminal run exits 1" || fail "the terminal run exited $rc, expected 1"
  python3 - "$tmp/tty.raw" <<'PY' || fail "terminal output"
import re, sys
raw = open(sys.argv[1], "rb").read().decode("utf-8", "replace")
# Lines as a terminal shows them: \r\033[K starts a line afresh (the progress line is redrawn).
lines = [seg for line in raw.split("\r\n") for seg in line.split("\r\x1b[K")]
bad = []
if not re.search(r"\r\x1b\[K\d\d:\d\d:\d\d  cases \d+ \(", raw):
    bad.append("no progress line with 'cases'")
finding = "FINDING 001 wrong: vs oracle @ values heads=some rows=whole-requests cols=all on case "
if not any(l.startswith(finding) for l in lines):
    bad.append(f"no line starting with '{finding}'")
if not any(l.startswith("FINDING 001 shrunk in ") and "B=1 H=3 P=[0] T=[1] " in l for l in lines):
    bad.append("no line 'FINDING 001 shrunk in ...' with the shrunk recipe")
if not any(l == "vattn fuzz: 30 cases, 1 finding" for l in lines):
    bad.append("no closing count line")
for b in bad:
    print("FAIL: " + b)
if bad:
    print("--- terminal output:\n" + repr(raw))
    sys.exit(1)
print("ok: the terminal shows a progress line with 'cases' and the FINDING lines")
PY
  ;;
mix)
  cap=$tmp/captured
  mkdir -p "$cap" "$tmp/empty"
  run gen-a "$vattn" gen -o "$cap/a.h5" --cases 3 --heads 8 --prefix 200 --drafts 16 --tree ddtree
  run gen-b "$vattn" gen -o "$cap/b.h5" --heads 8 --prefix 100,50 --drafts 4,2
  echo "not a case file" >"$cap/c.h5"
  d=$tmp/campaign
  fuzz mixed --kernel host:bf16-reference "${small[@]}" --cases 40 --seed 5 --mix-from "$cap" --out "$d"
  want_rc mixed 0
  has mixed err "--mix-from $cap: 4 case(s) of 3 file(s), 2 shape(s), 50% of the cases"
  has mixed err "skipped $cap/c.h5"
  has mixed out "mix: 50% of the cases shaped like the 4 captured case(s)"
  python3 - "$d" <<'PY' || fail "mix.json and the journal"
import json, sys
d = sys.argv[1]
mix = json.load(open(d + "/mix.json"))
assert (mix["schema"], mix["version"], mix["share_percent"]) == ("vattn-fuzz-mix", 1, 50), mix
shapes = sorted((s["H"], s["P"], s["T"], s["tree"], s["count"]) for s in mix["shapes"])
assert shapes == [(8, [100, 50], [4, 2], False, 1), (8, [200], [16], True, 3)], shapes
lines = [json.loads(l) for l in open(d + "/journal.jsonl")]
assert lines[0]["mix"]["file"] == "mix.json" and len(lines[0]["mix"]["digest"]) == 16, lines[0]
captured = sum(1 for l in lines if l.get("t") == "case" and l["c"] == "captured")
assert 10 <= captured <= 30, captured
print(f"ok: mix.json holds the two shapes; {captured} of 40 cases captured")
PY
  check journal "$d" --cases 40 --verdict pass --runs 1 --end --findings 0
  fuzz resumed --resume "$d" --cases 60 "${small[@]:2}"
  want_rc resumed 0
  has resumed out "mix: 50% of the cases shaped like"
  check journal "$d" --cases 60 --verdict pass --runs 2 --end --findings 0
  # Refusals, each before a campaign directory exists.
  sed -i 's/"count":3/"count":4/' "$d/mix.json"
  fuzz changed --resume "$d" --cases 80 "${small[@]:2}"
  want_rc changed 2
  has changed err "changed since the campaign started"
  for bad in missing empty notcases; do
    case $bad in
      missing) dir=$tmp/none want="is not a directory" ;;
      empty) dir=$tmp/empty want="holds no case files (*.h5)" ;;
      notcases) dir=$tmp/notcases want="none of its 1 case file(s) gave a readable case"
        mkdir -p "$dir"; echo x >"$dir/x.h5" ;;
    esac
    fuzz "bad-$bad" --kernel host:bf16-reference "${small[@]}" --cases 4 --mix-from "$dir" --out "$tmp/never-$bad"
    want_rc "bad-$bad" 2
    has "bad-$bad" err "$want"
    [ ! -e "$tmp/never-$bad" ] && echo "ok: $bad left no campaign" || fail "$bad: a campaign directory was made"
  done
  fuzz with-resume --resume "$d" --mix-from "$cap"
  want_rc with-resume 2
  has with-resume err "leave --mix-from out"
  fuzz with-recipe --kernel host:bf16-reference --recipe "B=1 H=1 P=[0] T=[1]" --mix-from "$cap"
  want_rc with-recipe 2
  has with-recipe err "does not go with --mix-from"
  run help "$vattn" fuzz --help
  has help out "--mix-from DIR"
    ;;
plan)
  # plan_variants ID: the campaign line's plan_variants in the journal of campaign ID.
  plan_variants() {
    python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["plan_variants"])' "$tmp/$1/journal.jsonl"
  }
  fuzz hookless --kernel host:bf16-reference "${small[@]}" --plan-variants on --cases 5 --seed 1 --out "$tmp/on"
  want_rc hookless 2
  has hookless err "vattn fuzz: nothing could run: the case stream draws other GPUs' plans (sms=, sm_blocks=), and \
host:bf16-reference (host:bf16-reference) has no test plan hook (vattn_test_plan_for_v1, kernels/vattn_abi.h)"
  has hookless err "pass --plan-variants off to fuzz it with its own plan only"
  lacks hookless out "vattn fuzz: "
  [ -e "$tmp/on" ] && fail "a campaign that ran no case left $tmp/on behind" || echo "ok: nothing left behind"
  fuzz off --kernel host:bf16-reference "${small[@]}" --plan-variants off --cases 5 --seed 1 --out "$tmp/off"
  want_rc off 0
  has off out "vattn fuzz: 5 cases, 0 findings"
  [ "$(plan_variants off)" = False ] && echo "ok: plan_variants off journaled" || fail "journal: plan_variants is not false"
  fuzz host-default --kernel host:bf16-reference "${small[@]}" --cases 3 --seed 1 --out "$tmp/default"
  want_rc host-default 0
  [ "$(plan_variants default)" = False ] && echo "ok: host targets draw no plans by default" ||
    fail "journal: a host target's default plan_variants is not false"
  # One recipe that names another GPU's plan: refused at the ready message; without it, it runs.
  fuzz recipe-sms --kernel host:bf16-reference --recipe "B=1 H=1 P=[0] T=[1] sms=188 sm_blocks=1"
  want_rc recipe-sms 2
  has recipe-sms err "--recipe asks for the plan of another GPU (sms=188), and host:bf16-reference"
  has recipe-sms err "has no test plan hook (vattn_test_plan_for_v1"
  lacks recipe-sms out "PASS"
  fuzz recipe-limits --kernel host:bf16-reference --recipe "B=1 H=1 P=[0] T=[1] limits=1/1/1/1"
  want_rc recipe-limits 0
  has recipe-limits out "PASS B=1 H=1 P=[0] T=[1] "
  fuzz pv-value --kernel host:bf16-reference --plan-variants maybe --cases 5 --out "$tmp/pv"
  want_rc pv-value 2
  has pv-value err "--plan-variants must be on or off (got 'maybe')"
  fuzz pv-resume --resume "$tmp/off" --plan-variants on
  want_rc pv-resume 2
  has pv-resume err "leave --seed, --budget, --shard, --plan-variants and --out out"
  fuzz pv-recipe --kernel host:bf16-reference --plan-variants on --recipe "B=1 H=1 P=[0] T=[1]"
  want_rc pv-recipe 2
  has pv-recipe err "--plan-variants chooses a campaign's stream"
  ;;
*)
  echo "fuzz_supervisor.sh: unknown mode '$mode'"
  exit 2
  ;;
esac
finish
# SPDX-License-Identifier: Apache-2.0
