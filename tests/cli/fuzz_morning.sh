#!/usr/bin/env bash
# fuzz_morning.sh VATTN MODE
# What a night of `vattn fuzz` leaves for the morning, on host targets (no GPU). Each MODE is one
# ctest test:
#   shard    --shard 0/2 and 1/2 of one seed run disjoint case indices whose union is 0..N-1
#            (from the journals), each stops after its own share; bad --shard values exit 2
#   merge    fuzz-merge of the two shards: totals, verdicts and coverage are the sums of the
#            parts, the finding seen by both is one finding with the summed count and both
#            evidence dirs; overlapping parts, parts of another kernel, a folder with neither
#            summary.json nor a journal and an --out that holds a campaign are refused (exit 2, named)
#   ledger   a version 1 ledger entry for the planted check without bucket ("wrong: vs oracle",
#            which means every bucket of it): its cases are counted against the entry ("k":"ledger"
#            in the journal), no finding directory, exit 0, the summary lists the entry with its
#            reason, count and the bucketed signature it tolerated; --resume carries the count;
#            broken ledgers exit 2 naming the field (fuzz_buckets.sh: an entry for one bucket)
#   promote  a finding's shrunk case goes into a corpus with only the oracle's output, replays
#            PASS, is not added twice; a bad finding dir or --name exits 2
here=$(cd "$(dirname "$0")" && pwd)
source "$here/fuzz_lib.sh"
mode=$2
# journal_indices DIR: the case indices of a journal, one per line, sorted numerically.
journal_indices() {
  python3 -c 'import json,sys
for l in open(sys.argv[1]):
    j = json.loads(l)
    if j.get("t") == "case": print(j["i"])' "$1/journal.jsonl" | sort -n
}
json_get() {  # json_get FILE EXPRESSION(d): prints the value of a Python expression over the document d
  python3 -c 'import json,sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}
expect_eq() {  # expect_eq WHAT GOT WANT
  if [ "$2" = "$3" ]; then echo "ok: $1 = $3"; else fail "$1: got '$2', expected '$3'"; fi
}
two_shards() {  # two_shards KERNEL: campaigns $tmp/s0 and $tmp/s1, seed 3, 40 cases
  for i in 0 1; do
    fuzz "shard$i" --kernel "$1" "${small[@]}" --cases 40 --seed 3 --shard "$i/2" --out "$tmp/s$i"
  done
}

case $mode in
shard)
  two_shards host:bf16-reference
  want_rc shard0 0
  want_rc shard1 0
  has shard0 out "all 20 cases of shard 0/2 ran"
  has shard0 out "shard 0/2"
  journal_indices "$tmp/s0" >"$tmp/i0"
  journal_indices "$tmp/s1" >"$tmp/i1"
  expect_eq "shard 0 cases" "$(wc -l <"$tmp/i0")" 20
  expect_eq "shard 1 cases" "$(wc -l <"$tmp/i1")" 20
  expect_eq "indices in both shards" "$(comm -12 "$tmp/i0" "$tmp/i1" | wc -l)" 0
  expect_eq "union of the shards" "$(sort -n "$tmp/i0" "$tmp/i1" | tr '\n' ' ')" "$(seq 0 39 | tr '\n' ' ')"
  expect_eq "shard 1 indices are odd" "$(awk '$1 % 2 != 1' "$tmp/i1" | wc -l)" 0
  expect_eq "journal shard" "$(head -1 "$tmp/s1/journal.jsonl" | python3 -c 'import json,sys; print(json.load(sys.stdin)["shard"])')" "[1, 2]"
  k=0
  for bad in 2/2 1 a/2 -1/2 0/0 1/; do
    k=$((k + 1))
    fuzz "bad$k" --kernel host:bf16-reference "${small[@]}" --cases 4 --shard "$bad" --out "$tmp/bad"
    want_rc "bad$k ($bad)" 2
    has "bad$k" err "--shard"
  done
  fuzz resume-shard --resume "$tmp/s0" --shard 1/2
  want_rc resume-shard 2
  has resume-shard err "leave --seed, --budget, --shard"
  ;;
merge)
  two_shards host:faulty:wrong@H=3
  run merge "$vattn" fuzz-merge --no-report --out "$tmp/m" "$tmp/s0" "$tmp/s1"
  want_rc merge 1
  has merge out "2 part(s) of host:faulty:wrong@H=3"
  for key in campaign_cases failed suite_errors; do
    expect_eq "merged $key" "$(json_get "$tmp/m/summary.json" "d['$key']")" \
      "$(($(json_get "$tmp/s0/summary.json" "d['$key']") + $(json_get "$tmp/s1/summary.json" "d['$key']")))"
  done
  expect_eq "merged cases" "$(json_get "$tmp/m/summary.json" "d['campaign_cases']")" 40
  expect_eq "merged verdicts" "$(json_get "$tmp/m/summary.json" "sum(d['verdicts'].values())")" 40
  for dim in B H tree family SMs; do
    want=$(python3 -c 'import json,sys
a, b = (json.load(open(f))["coverage"][sys.argv[3]] for f in sys.argv[1:3])
print(sorted((k, a.get(k, 0) + b.get(k, 0)) for k in set(a) | set(b)))' "$tmp/s0/summary.json" "$tmp/s1/summary.json" $dim)
    expect_eq "merged coverage $dim" "$(json_get "$tmp/m/summary.json" "sorted(d['coverage']['$dim'].items())")" "$want"
  done
  expect_eq "merged findings" "$(json_get "$tmp/m/summary.json" "[f['signature'] for f in d['findings']]")" \
    "['wrong: vs oracle @ values heads=some rows=whole-requests cols=all']"
  expect_eq "merged finding count" "$(json_get "$tmp/m/summary.json" "d['findings'][0]['count']")" \
    "$(($(json_get "$tmp/s0/summary.json" "d['findings'][0]['count']") + $(json_get "$tmp/s1/summary.json" "d['findings'][0]['count']")))"
  expect_eq "evidence of both parts" "$(json_get "$tmp/m/summary.json" "len(d['findings'][0]['parts'])")" 2
  expect_eq "schema" "$(json_get "$tmp/m/summary.json" "(d['schema'], d['version'])")" "('vattn-fuzz-summary', 1)"
  # Refusals.
  fuzz other --kernel host:bf16-reference "${small[@]}" --cases 4 --seed 9 --out "$tmp/other"
  run overlap "$vattn" fuzz-merge --no-report --out "$tmp/m2" "$tmp/s0" "$tmp/s1" "$tmp/s0/../s0"
  want_rc overlap 2
  has overlap err "given twice"
  fuzz full --kernel host:faulty:wrong@H=3 "${small[@]}" --cases 4 --seed 3 --out "$tmp/full"
  run overlap2 "$vattn" fuzz-merge --no-report --out "$tmp/m3" "$tmp/s0" "$tmp/full"
  want_rc overlap2 2
  has overlap2 err "case 0 of seed 3 was run by"
  run kernel "$vattn" fuzz-merge --no-report --out "$tmp/m4" "$tmp/s0" "$tmp/other"
  want_rc kernel 2
  has kernel err "merge campaigns of one kernel"
  mkdir -p "$tmp/empty"
  run nosummary "$vattn" fuzz-merge --no-report --out "$tmp/m5" "$tmp/empty"
  want_rc nosummary 2
  has nosummary err "$tmp/empty/summary.json"
  run intocampaign "$vattn" fuzz-merge --no-report --out "$tmp/s1" "$tmp/s0"
  want_rc intocampaign 2
  has intocampaign err "holds a campaign"
  ;;
ledger)
  cat >"$tmp/ledger.json" <<'JSON'
{"schema": "vattn-fuzz-ledger", "version": 1, "entries": [
  {"signature": "wrong: vs oracle", "kernel": "host:faulty*", "reason": "planted for this test", "added": "ci"},
  {"signature": "hang: deadline passed", "reason": "never seen here"}]}
JSON
  fuzz tolerated --kernel host:faulty:wrong@H=3 "${small[@]}" --cases 30 --seed 3 --ledger "$tmp/ledger.json" --out "$tmp/l"
  want_rc tolerated 0
  has tolerated out "tolerated (ledger)"
  has tolerated out "wrong: vs oracle on host:faulty*"
  has tolerated out "planted for this test"
  n=$(grep -c '"k":"ledger"' "$tmp/l/journal.jsonl")
  [ "$n" -ge 1 ] && echo "ok: $n tolerated case lines" || fail "no tolerated case line in the journal"
  expect_eq "finding dirs" "$(find "$tmp/l/findings" -mindepth 1 -maxdepth 1 | wc -l)" 0
  expect_eq "summary tolerated" "$(json_get "$tmp/l/summary.json" "d['tolerated']")" "$n"
  expect_eq "summary failed" "$(json_get "$tmp/l/summary.json" "d['failed']")" 0
  expect_eq "ledger counts" "$(json_get "$tmp/l/summary.json" "[e['count'] for e in d['ledger']['entries']]")" "[$n, 0]"
  expect_eq "ledger reasons" "$(json_get "$tmp/l/summary.json" "[e['reason'] for e in d['ledger']['entries']]")" \
    "['planted for this test', 'never seen here']"
  expect_eq "what the entry tolerated" "$(json_get "$tmp/l/summary.json" "d['ledger']['entries'][0]['matched']")" \
    "{'wrong: vs oracle @ values heads=some rows=whole-requests cols=all': $n}"
  has tolerated out "tolerated wrong: vs oracle @ values heads=some rows=whole-requests cols=all  x$n"
  # --resume with more cases: the count carries over and grows.
  fuzz resumed --resume "$tmp/l" --cases 60 --ledger "$tmp/ledger.json" "${small[@]:2}"
  want_rc resumed 0
  n2=$(grep -c '"k":"ledger"' "$tmp/l/journal.jsonl")
  expect_eq "ledger count after resume" "$(json_get "$tmp/l/summary.json" "d['ledger']['entries'][0]['count']")" "$n2"
  [ "$n2" -gt "$n" ] && echo "ok: $n -> $n2 tolerated" || fail "resume added no tolerated case ($n -> $n2)"
  # Without the ledger the same campaign raises it.
  fuzz raised --kernel host:faulty:wrong@H=3 "${small[@]}" --cases 30 --seed 3 --out "$tmp/r"
  want_rc raised 1
  # Broken ledgers: exit 2, naming the file and the field, before any campaign directory exists.
  bad() {  # bad NAME JSON TEXT
    printf '%s' "$2" >"$tmp/$1.json"
    fuzz "$1" --kernel host:bf16-reference "${small[@]}" --cases 2 --ledger "$tmp/$1.json" --out "$tmp/never-$1"
    want_rc "$1" 2
    has "$1" err "$tmp/$1.json"
    has "$1" err "$3"
    [ ! -e "$tmp/never-$1" ] && echo "ok: $1 left no campaign" || fail "$1: a campaign directory was made"
  }
  bad notjson '{"schema": ' "is not a JSON object"
  bad schema '{"schema": "x", "version": 1, "entries": []}' "field 'schema'"
  bad version '{"schema": "vattn-fuzz-ledger", "version": 3, "entries": []}' "field 'version'"
  bad noreason '{"schema": "vattn-fuzz-ledger", "version": 1, "entries": [{"signature": "s"}]}' "field 'entries[0].reason'"
  bad twice '{"schema": "vattn-fuzz-ledger", "version": 1, "entries": [{"signature": "s", "reason": "r"}, {"signature": "s", "reason": "q"}]}' "repeats the entry"
  fuzz missing --kernel host:bf16-reference "${small[@]}" --cases 2 --ledger "$tmp/none.json" --out "$tmp/never"
  want_rc missing 2
  has missing err "$tmp/none.json"
  ;;
promote)
  fuzz found --kernel host:faulty:wrong@H=3 "${small[@]}" --cases 20 --seed 3 --out "$tmp/c"
  want_rc found 1
  f=$tmp/c/findings/001-wrong
  run promote "$vattn" promote "$f" --corpus "$tmp/corpus"
  want_rc promote 0
  # shellcheck disable=SC2012  # the suite names these files itself
  file=$(ls "$tmp"/corpus/*.h5 2>/dev/null | head -1)
  if [ -z "$file" ]; then fail "nothing in the corpus"; finish; fi  # finish exits
  has promote out "$file"
  run info "$vattn" info "$file"
  want_rc info 0
  has info out "outputs=oracle_fp64"
  lacks info out "kernel:"
  has info out "recipe: $(json_get "$f/finding.json" "d['investigation']['shrunk_recipe']")"
  has info out "source fuzz:host:faulty:wrong@H=3"
  run replay "$vattn" replay "$file"
  want_rc replay 0
  has replay out "1 passed, 0 failed"
  run again "$vattn" promote "$f" --corpus "$tmp/corpus"
  want_rc again 0
  has again out "already in the corpus"
  # shellcheck disable=SC2012  # counting files the suite names itself
  expect_eq "corpus files" "$(ls "$tmp"/corpus/*.h5 | wc -l)" 1
  run named "$vattn" promote "$f" --corpus "$tmp/corpus2" --name my-case_1 --first
  want_rc named 0
  [ -f "$tmp/corpus2/my-case_1.h5" ] && echo "ok: --name" || fail "--name: no my-case_1.h5"
  run notfinding "$vattn" promote "$tmp/c" --corpus "$tmp/corpus"
  want_rc notfinding 2
  has notfinding err "$tmp/c/finding.json"
  run badname "$vattn" promote "$f" --corpus "$tmp/corpus" --name ../up
  want_rc badname 2
  has badname err "--name"
  ;;
*) fail "unknown mode $mode" ;;
esac
finish
# SPDX-License-Identifier: Apache-2.0
