#!/usr/bin/env bash
# fuzz_buckets.sh VATTN MODE
# Wrong answers are told apart by where their errors sit (the bucket of the signature
# "wrong: vs oracle @ BUCKET", vattn/check/error_bucket.h), on host targets (small budget, fixed
# seeds, two workers). Each MODE is one ctest test:
#   two-bugs  host:faulty:wrong@H=3,wrong@P=77, 400 cases: two findings of "wrong: vs oracle",
#             one per bucket, one shrunk to B=1 H=3 P=[0] T=[1] and one to B=1 H=1 P=[77] T=[1]
#             (their shrunk.h5 files hold those recipes, and each re-run command fails in its own
#             bucket); the closing lines, summary.json and finding.json show the buckets
#   one-bug   host:faulty:wrong@H=3 alone, 400 cases: one finding, whose count is every H=3 case of
#             the campaign (whatever their B, P, T, tree, profile or splits)
#   ledger    an entry naming the H=3 bucket tolerates it and not the P=77 bucket, which is still
#             found; a glob over the P=77 bucket the other way round; a version 1 entry naming
#             the check without bucket tolerates both, listing each signature it tolerated
#   cap       four rules, four buckets and more: three findings, the rest counted per signature
#             (journal k: extra, summary.json extra_buckets, the closing lines), also after --resume
#   legacy    a hand-written campaign from before buckets (signatures "wrong: vs oracle", no bucket
#             fields, its finding not yet shrunk): fuzz-merge with a new campaign keeps it apart
#             from the bucketed findings; --resume shrinks it (any bucket of its check counts as
#             the same failure), files the new buckets beside it, and runs every case once;
#             vattn report shows both kinds
# Seed 3 draws H=3 at case 4 and P_b=77 at case 62 (H=3 too: both bugs, filed under the P=77
# bucket, whose shrinking drops the head bug). If the stream changes (case_stream.cpp,
# gen_recipe.cpp) and a mode misses a bug, pick a seed again.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/fuzz_lib.sh"
mode=$2
check_name="wrong: vs oracle"
head_bug="$check_name @ values heads=some rows=whole-requests cols=all"
prefix_bug="$check_name @ values heads=all rows=whole-requests cols=all"
two=host:faulty:wrong@H=3,wrong@P=77
opts=("${small[@]}" --workers 2)
json_get() {  # json_get FILE EXPRESSION(d): prints the value of a Python expression over the document d
  python3 -c 'import json,sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}
expect_eq() {  # expect_eq WHAT GOT WANT
  if [ "$2" = "$3" ]; then echo "ok: $1 = $3"; else fail "$1: got '$2', expected '$3'"; fi
}
# finding_of DIR SIG: the directory of the finding with signature SIG ("" when none).
finding_of() {
  python3 -c 'import json,os,sys
d = os.path.join(sys.argv[1], "findings")
for n in sorted(os.listdir(d)):
    if json.load(open(os.path.join(d, n, "finding.json")))["signature"] == sys.argv[2]: print(os.path.join(d, n))' "$1" "$2"
}
# ledger_lines DIR SIG: the journal's case lines tolerated by the ledger with signature SIG.
ledger_lines() {
  python3 -c 'import json,sys
print(sum(1 for l in open(sys.argv[1]) if (j := json.loads(l)).get("k") == "ledger" and j.get("sig") == sys.argv[2]))' \
    "$1/journal.jsonl" "$2"
}

case $mode in
two-bugs)
  d=$tmp/campaign
  fuzz two --kernel "$two" "${opts[@]}" --cases 400 --seed 3 --out "$d"
  want_rc two 1
  echo "--- the closing lines:"
  sed -n '/^  findings:/,/^  coverage/p' "$tmp/two.out"
  tail -1 "$tmp/two.out"
  echo "---"
  has two out "vattn fuzz: 400 cases, 2 findings"
  has two out "] $head_bug  x"
  has two out "] $prefix_bug  x"
  check findings "$d" --count 2 --shrunk "B=1 H=3 P=[0] T=[1]" --shrunk "B=1 H=1 P=[77] T=[1]"
  check journal "$d" --cases 400 --runs 1 --end --findings 2
  for sig in "$head_bug" "$prefix_bug"; do
    f=$(finding_of "$d" "$sig")
    [ -n "$f" ] || { fail "no finding with signature '$sig'"; continue; }
    shrunk=$(json_get "$f/finding.json" "d['investigation']['shrunk_recipe']")
    # The shrunk repro file is a case file of the shrunk recipe.
    run info "$vattn" info "$f/shrunk.h5"
    want_rc info 0
    has info out "recipe: $shrunk"
    # The finding's own command re-runs the shrunk case, which fails in the finding's bucket.
    run rerun "$vattn" fuzz --kernel "$two" --recipe "$shrunk"
    want_rc rerun 1
    has rerun out "FAIL $sig  $shrunk"
  done
  expect_eq "H=3 bug's shrunk recipe" \
    "$(json_get "$(finding_of "$d" "$head_bug")/finding.json" "d['investigation']['shrunk_recipe'].split(' tree=')[0]")" \
    "B=1 H=3 P=[0] T=[1]"
  expect_eq "P=77 bug's shrunk recipe" \
    "$(json_get "$(finding_of "$d" "$prefix_bug")/finding.json" "d['investigation']['shrunk_recipe'].split(' tree=')[0]")" \
    "B=1 H=1 P=[77] T=[1]"
  ;;
one-bug)
  d=$tmp/campaign
  fuzz one --kernel host:faulty:wrong@H=3 "${opts[@]}" --cases 400 --seed 5 --out "$d"
  want_rc one 1
  has one out "vattn fuzz: 400 cases, 1 finding"
  check findings "$d" --count 1 --shrunk "B=1 H=3 P=[0] T=[1]"
  h3=$(json_get "$d/summary.json" "d['coverage']['H']['3']")
  expect_eq "the finding's count (every H=3 case of the campaign)" \
    "$(json_get "$d/summary.json" "d['findings'][0]['count']")" "$h3"
  [ "$h3" -ge 20 ] && echo "ok: $h3 cases with H=3, one finding" || fail "only $h3 cases with H=3: pick another seed"
  expect_eq "its signature" "$(json_get "$d/summary.json" "d['findings'][0]['signature']")" "$head_bug"
  ;;
ledger)
  ledger() {  # ledger NAME VERSION SIGNATURE: $tmp/NAME.json with one entry
    python3 -c 'import json,sys
json.dump({"schema": "vattn-fuzz-ledger", "version": int(sys.argv[2]), "entries": [
    {"signature": sys.argv[3], "kernel": "host:faulty*", "reason": "known, for this test"}]}, open(sys.argv[1], "w"))' \
      "$tmp/$1.json" "$2" "$3"
  }
  # One bucket named in full: that bucket is tolerated, the other one is found.
  ledger head 2 "$head_bug"
  fuzz head --kernel "$two" "${opts[@]}" --cases 400 --seed 3 --ledger "$tmp/head.json" --out "$tmp/h"
  want_rc head 1
  check findings "$tmp/h" --count 1 --shrunk "B=1 H=1 P=[77] T=[1]"
  expect_eq "the finding" "$(json_get "$tmp/h/summary.json" "d['findings'][0]['signature']")" "$prefix_bug"
  n=$(ledger_lines "$tmp/h" "$head_bug")
  [ "$n" -ge 20 ] && echo "ok: $n cases of the H=3 bucket tolerated" || fail "only $n cases of the H=3 bucket tolerated"
  expect_eq "tolerated" "$(json_get "$tmp/h/summary.json" "d['tolerated']")" "$n"
  expect_eq "what the entry tolerated" "$(json_get "$tmp/h/summary.json" "d['ledger']['entries'][0]['matched']")" \
    "{'$head_bug': $n}"
  # A glob over the other bucket: the other way round.
  ledger glob 2 "$check_name @ *heads=all*"
  fuzz glob --kernel "$two" "${opts[@]}" --cases 400 --seed 3 --ledger "$tmp/glob.json" --out "$tmp/g"
  want_rc glob 1
  check findings "$tmp/g" --count 1 --shrunk "B=1 H=3 P=[0] T=[1]"
  expect_eq "the finding" "$(json_get "$tmp/g/summary.json" "d['findings'][0]['signature']")" "$head_bug"
  expect_eq "what the glob tolerated" "$(json_get "$tmp/g/summary.json" "list(d['ledger']['entries'][0]['matched'])")" \
    "['$prefix_bug']"
  has glob out "tolerated $prefix_bug  x"
  # A version 1 entry naming the check alone: every bucket of it, each listed with its count.
  ledger check 1 "$check_name"
  fuzz check --kernel "$two" "${opts[@]}" --cases 400 --seed 3 --ledger "$tmp/check.json" --out "$tmp/c"
  want_rc check 0
  check no-findings "$tmp/c"
  expect_eq "what the check tolerated" \
    "$(json_get "$tmp/c/summary.json" "sorted(d['ledger']['entries'][0]['matched'])")" "['$prefix_bug', '$head_bug']"
  expect_eq "tolerated = every wrong case" "$(json_get "$tmp/c/summary.json" "d['tolerated']")" \
    "$(json_get "$tmp/c/summary.json" "d['verdicts']['wrong']")"
  ;;
cap)
  d=$tmp/campaign
  four=host:faulty:wrong@H=3,wrong@P=77,wrong@T=17,wrong@B=2
  fuzz first --kernel "$four" "${opts[@]}" --cases 200 --seed 1 --out "$d"
  want_rc first 1
  has first out "more buckets, counted and not filed (3 findings per check)"
  extra=$(json_get "$d/summary.json" "len(d['extra_buckets'])")
  [ "$extra" -ge 1 ] && echo "ok: $extra extra bucket(s)" || fail "no extra bucket: pick another seed"
  check findings "$d" --count 3 --extra "$extra"
  fuzz again --resume "$d" --cases 400 "${small[@]:2}" --workers 2
  want_rc again 1
  extra=$(json_get "$d/summary.json" "len(d['extra_buckets'])")
  check findings "$d" --count 3 --extra "$extra"
  check journal "$d" --cases 400 --runs 2 --end --findings 3
  ;;
legacy)
  # A campaign of host:faulty:wrong@H=3,wrong@P=77 (seed 3) as a vattn before buckets left it
  # after 10 cases: cases 4 and 9 (H=3) failed as "wrong: vs oracle", finding 001 not yet shrunk.
  old=$tmp/old
  mkdir -p "$old/findings/001-wrong"
  recipe4='B=1 H=3 P=[64] T=[25] tree=wide profile=uniform layout=reversed poison=1 seed=1910826897 scale=0.1446796 splits=2'
  {
    echo '{"t":"campaign","schema":"vattn-fuzz-journal","version":1,"kernel":"'"$two"'","seed":3,"budget":"small","device_variants":false,"plan_variants":false,"cases":10,"created":"2026-01-01T00:00:00Z","generator":"vattn 0.1.0 (git old)"}'
    echo '{"t":"run","run":1,"started":"2026-01-01T00:00:00Z","resumed":false,"argv":"vattn fuzz","ledger":""}'
    for i in 0 1 2 3 5 6 7 8; do echo '{"t":"case","i":'$i',"v":"pass","c":"short","s":0.01,"g":"host0"}'; done
    echo '{"t":"case","i":4,"v":"wrong","c":"short","s":0.06,"g":"host0","sig":"wrong: vs oracle","f":"001"}'
    echo '{"t":"finding","id":"001","sig":"wrong: vs oracle","dir":"'"$old"'/findings/001-wrong","recipe":"'"$recipe4"'","first":{"index":4,"verdict":"wrong","check":"vs oracle","detail":"FAIL (an old detail)","oracle":"oracle_fp64","target_s":0.001,"oracle_s":0.01,"total_s":0.06},"run":1,"elapsed_s":0.5}'
    echo '{"t":"case","i":9,"v":"wrong","c":"short","s":0.05,"g":"host0","sig":"wrong: vs oracle","f":"001"}'
    echo '{"t":"end","run":1,"elapsed_s":1.0,"reason":"all 10 cases ran","cases":10}'
  } >"$old/journal.jsonl"
  finding='{"schema":"vattn-fuzz-finding","version":1,"id":"001","signature":"wrong: vs oracle","class":"wrong","check":"vs oracle","detail":"FAIL (an old detail)","count":2,"state":"interrupted","kernel":"'"$two"'","dir":"findings/001-wrong","first_case":{"index":4,"recipe":"'"$recipe4"'"},"reproduce":["vattn fuzz --kernel '"$two"' --recipe '"'$recipe4'"'"]}'
  echo "$finding" >"$old/findings/001-wrong/finding.json"
  echo '{"schema":"vattn-fuzz-summary","version":1,"kernel":"'"$two"'","seed":3,"budget":"small","campaign":"'"$old"'","stopped":"all 10 cases ran","this_run":{"elapsed_s":1.0,"cases":10,"long_cases":0},"campaign_cases":10,"failed":2,"suite_errors":0,"verdicts":{"pass":8,"wrong":2},"coverage":{},"workers":[],"findings":['"$finding"'],"tolerated":0}' \
    >"$old/summary.json"
  # fuzz-merge: the old finding stays apart from the new campaign's bucketed ones.
  fuzz new --kernel "$two" "${opts[@]}" --cases 400 --seed 11 --out "$tmp/new"
  want_rc new 1
  run merge "$vattn" fuzz-merge --no-report --out "$tmp/m" "$old" "$tmp/new"
  want_rc merge 1
  expect_eq "merged signatures" "$(json_get "$tmp/m/summary.json" "sorted(f['signature'] for f in d['findings'])")" \
    "['$check_name', '$prefix_bug', '$head_bug']"
  expect_eq "the old finding's count" \
    "$(json_get "$tmp/m/summary.json" "[f['count'] for f in d['findings'] if f['signature'] == '$check_name']")" "[2]"
  # --resume: the old finding is shrunk now, the new buckets are filed beside it, no case twice.
  fuzz resume --resume "$old" --cases 400 "${small[@]:2}" --workers 2
  want_rc resume 1
  check journal "$old" --cases 400 --runs 2 --end --findings 3
  check findings "$old" --count 3 --legacy "$check_name" --shrunk "B=1 H=1 P=[77] T=[1]"
  expect_eq "the H=3 bucket, shrunk" \
    "$(json_get "$(finding_of "$old" "$head_bug")/finding.json" "d['investigation']['shrunk_recipe'].split(' tree=')[0]")" \
    "B=1 H=3 P=[0] T=[1]"
  f=$(finding_of "$old" "$check_name")
  expect_eq "the old finding's count" "$(json_get "$f/finding.json" "d['count']")" 2
  expect_eq "the old finding, shrunk" \
    "$(json_get "$f/finding.json" "d['investigation']['shrunk_recipe'].split(' tree=')[0]")" "B=1 H=3 P=[0] T=[1]"
  expect_eq "its first case" "$(json_get "$f/finding.json" "d['first_case']['index']")" 4
  # The report shows the old finding (no bucket) and the new ones (their buckets).
  if python3 -c 'import matplotlib, numpy' 2>/dev/null || /usr/bin/python3 -c 'import matplotlib, numpy' 2>/dev/null; then
    run report "$vattn" report "$old"
    want_rc report 0
    for text in "where the errors sit" "values heads=some rows=whole-requests cols=all" \
                "values heads=all rows=whole-requests cols=all"; do
      grep -qF -- "$text" "$old/report.html" && echo "ok: the report has: $text" || fail "the report lacks: $text"
    done
  else
    echo "note: no python3 with matplotlib: vattn report not run"
  fi
  ;;
*)
  echo "fuzz_buckets.sh: unknown mode '$mode'"
  exit 2
  ;;
esac
finish
# SPDX-License-Identifier: Apache-2.0
