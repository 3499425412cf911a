#!/usr/bin/env bash
# json_report.sh VATTN FIXTURE
# `--json OUT` is checked before any work and written whole at the end: a report path that names
# an input (directly or through a link), a directory, a pipe (or device), a link loop or a
# missing folder is refused with exit 2 before anything is replayed, and the input file is left
# byte for byte as it was. `--json -` puts the report alone on stdout; `--junit FILE` writes
# JUnit XML (checked like --json); a write error on stdout exits 2. A good path gets a complete JSON report; a link to a report file, even
# a dangling one, is written through (the link stays a link). `vattn gen -o` refuses the same
# paths and writes through links too.
set -u
vattn=$1 fixture=$2
tmp=$(mktemp -d /tmp/vattn-json-report.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cp "$fixture" "$tmp/dump.h5" && cp "$fixture" "$tmp/pristine.h5" && ln -s dump.h5 "$tmp/link.h5" || exit 1
ok=1
refuse() {  # refuse OUT EXPECTED_STDERR_TEXT
  "$vattn" replay "$tmp/dump.h5" --json "$1" >"$tmp/out" 2>"$tmp/err"
  local code=$? bad=''
  [ $code -eq 2 ] || bad="$bad; exit code $code, expected 2"
  grep -qF -- "--json $1: $2" "$tmp/err" || bad="$bad; stderr lacks '--json $1: $2'"
  ! grep -qF "== " "$tmp/out" || bad="$bad; cases were replayed before the refusal"
  cmp -s "$tmp/dump.h5" "$tmp/pristine.h5" || bad="$bad; the input file was changed"
  if [ -n "$bad" ]; then ok=0; echo "FAIL --json $1: ${bad#; }"; cat "$tmp/err"; cp "$tmp/pristine.h5" "$tmp/dump.h5"
  else echo "ok: --json $1 refused: $(head -1 "$tmp/err")"; fi
}
refuse "$tmp/dump.h5" "it is the input file"
refuse "$tmp/link.h5" "it is the input file"
refuse "$tmp" "it is a directory"
refuse "$tmp/no/such/folder/r.json" "its folder $tmp/no/such/folder does not exist"
# Not /dev/null: a regression would replace the machine's /dev/null with a report.
mkfifo "$tmp/pipe" && refuse "$tmp/pipe" "it is not a regular file"

# --json -: the report alone on stdout (valid JSON, its schema named), the table on stderr.
"$vattn" replay "$tmp/dump.h5" --json - >"$tmp/out" 2>"$tmp/err"
code=$?
if [ $code -ne 0 ] || ! python3 -c 'import json,sys; d = json.load(open(sys.argv[1])); assert d["schema"] == "vattn-replay-report" and d["version"] == 1 and d["passed"] >= 1' "$tmp/out" ||
   ! grep -q "passed, 0 failed" "$tmp/err"; then
  ok=0; echo "FAIL --json -: exit $code, or stdout is not the report alone"; head -5 "$tmp/out"; head -5 "$tmp/err"
else
  echo "ok: --json - wrote only the report to stdout, the table to stderr"
fi
# --junit: well-formed JUnit XML, one testcase per row, a failure where the replay failed.
# A case file whose stored output fails: the repro of a planted wrong answer (host target, no GPU).
"$vattn" fuzz --kernel host:faulty:wrong@H=3 --recipe "B=1 H=3 P=[4] T=[2]" --repro "$tmp/bad.h5" >/dev/null 2>&1
[ -f "$tmp/bad.h5" ] || { ok=0; echo "FAIL: vattn fuzz --recipe --repro wrote no repro file"; }
"$vattn" replay "$tmp/dump.h5" "$tmp/bad.h5" --junit "$tmp/j.xml" >"$tmp/out" 2>"$tmp/err"
code=$?
if [ $code -ne 1 ] || ! python3 -c 'import sys, xml.etree.ElementTree as E
r = E.parse(sys.argv[1]).getroot()
assert r.tag == "testsuites" and r.get("tests") == "3" and r.get("failures") == "1", r.attrib
suites = r.findall("testsuite")
assert len(suites) == 2 and len(r.findall(".//failure")) == 1
assert "re-run: vattn replay" in r.find(".//failure").text' "$tmp/j.xml"; then
  ok=0; echo "FAIL --junit: exit $code (expected 1), or the XML is not right"; cat "$tmp/j.xml"; cat "$tmp/err"
else
  echo "ok: --junit wrote 3 testcases (the fixture, the repro's oracle and its failing output), 1 failure"
fi
"$vattn" replay "$tmp/dump.h5" --junit "$tmp/dump.h5" >"$tmp/out" 2>"$tmp/err"
code=$?
if [ $code -ne 2 ] || ! grep -qF -- "--junit $tmp/dump.h5: it is the input file" "$tmp/err" || ! cmp -s "$tmp/dump.h5" "$tmp/pristine.h5"; then
  ok=0; echo "FAIL --junit INPUT: exit $code"; cat "$tmp/err"
else
  echo "ok: --junit naming the input refused"
fi
# JSON has no infinity: a ratio against a bf16 reference without error is the string "Infinity",
# and the report is strict JSON (no NaN/Infinity literals).
"$vattn" fuzz --kernel host:faulty:wrong@H=3 --recipe "B=1 H=3 P=[0] T=[1]" --repro "$tmp/inf.h5" >/dev/null 2>&1
"$vattn" replay "$tmp/inf.h5" --json "$tmp/inf.json" >/dev/null 2>&1
if python3 -c 'import json,sys
def refuse(name): raise ValueError("a bare " + name + " in the report")
d = json.load(open(sys.argv[1]), parse_constant=refuse)
assert d["schema"] == "vattn-replay-report" and d["version"] == 1
assert any(r["ratio_vs_bf16_ref"] == "Infinity" for r in d["results"]), [r["ratio_vs_bf16_ref"] for r in d["results"]]' "$tmp/inf.json"; then
  echo "ok: a non-finite figure is written as the string \"Infinity\" (strict JSON)"
else
  ok=0; echo "FAIL: non-finite figures in the report"; head -40 "$tmp/inf.json"
fi
# Where a failure sits (per request, row, head, 64-column block), in the table and in the report;
# --producer compares one producer only.
"$vattn" replay "$tmp/bad.h5" --json "$tmp/where.json" >"$tmp/out" 2>"$tmp/err"
code=$?
if [ $code -ne 1 ] || ! grep -q "column blocks: " "$tmp/out" || ! grep -q "heads: " "$tmp/out" ||
   ! python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
bad = [r for r in d["results"] if not r["pass"]]
assert bad and bad[0]["over_bound_where"]["heads"] and bad[0]["elements_compared"] > 0, bad' "$tmp/where.json"; then
  ok=0; echo "FAIL: the failure's whereabouts are missing (exit $code)"; cat "$tmp/out"
else
  echo "ok: a failure says where it sits (requests, rows, heads, column blocks)"
fi
"$vattn" replay "$tmp/bad.h5" --producer oracle_fp64 >"$tmp/out" 2>"$tmp/err"
code=$?
if [ $code -ne 0 ] || ! grep -q "1 passed, 0 failed" "$tmp/out"; then ok=0; echo "FAIL --producer oracle_fp64: exit $code"; cat "$tmp/out"
else echo "ok: --producer oracle_fp64 replays that producer alone"; fi
"$vattn" replay "$tmp/bad.h5" --producer no-such >"$tmp/out" 2>"$tmp/err"
code=$?
if [ $code -ne 2 ] || ! grep -q "no producer 'no-such'" "$tmp/err"; then ok=0; echo "FAIL --producer no-such: exit $code"; cat "$tmp/err"
else echo "ok: --producer naming no producer exits 2"; fi
# A write error on stdout is an error (exit 2), for every command that prints.
for argv in "replay $tmp/dump.h5" "info $tmp/dump.h5" "gen --prefix 8 --drafts 2 -o $tmp/g.h5"; do
  # shellcheck disable=SC2086
  "$vattn" $argv >/dev/full 2>"$tmp/err"
  code=$?
  if [ $code -ne 2 ] || ! grep -q "cannot write to standard output" "$tmp/err"; then
    ok=0; echo "FAIL vattn $argv >/dev/full: exit $code, expected 2 and a message"; cat "$tmp/err"
  else
    echo "ok: vattn ${argv%% *} >/dev/full exits 2"
  fi
done

"$vattn" replay "$tmp/dump.h5" --json "$tmp/r.json" >"$tmp/out" 2>"$tmp/err"
code=$?
# shellcheck disable=SC2010  # the elif below: any name that holds .tmp, hidden ones included
if [ $code -ne 0 ] || ! grep -q '"results"' "$tmp/r.json" || ! tail -c 3 "$tmp/r.json" | grep -q '}'; then
  ok=0; echo "FAIL --json to a good path: exit $code"; cat "$tmp/err"
elif ls -A "$tmp" | grep -q '\.tmp'; then
  ok=0; echo "FAIL --json left a temporary file: $(ls -A "$tmp")"
else
  echo "ok: --json $tmp/r.json written ($(wc -c <"$tmp/r.json") bytes)"
fi

# A link to an earlier report: the report goes to the link's target, the link stays.
echo old >"$tmp/target.json" && ln -s target.json "$tmp/report-link.json"
"$vattn" replay "$tmp/dump.h5" --json "$tmp/report-link.json" >"$tmp/out" 2>"$tmp/err"
code=$?
if [ $code -ne 0 ] || [ ! -L "$tmp/report-link.json" ] || ! grep -q '"results"' "$tmp/target.json"; then
  ok=0; echo "FAIL --json through a link: exit $code, link kept: $([ -L "$tmp/report-link.json" ] && echo yes || echo no)"
else
  echo "ok: --json through a link wrote its target ($(wc -c <"$tmp/target.json") bytes), the link stays"
fi

# A dangling link (relative, into another folder): its target is created, the link stays.
mkdir -p "$tmp/reports" && ln -s reports/latest.json "$tmp/dangling.json"
"$vattn" replay "$tmp/dump.h5" --json "$tmp/dangling.json" >"$tmp/out" 2>"$tmp/err"
code=$?
if [ $code -ne 0 ] || [ ! -L "$tmp/dangling.json" ] || ! grep -q '"results"' "$tmp/reports/latest.json"; then
  ok=0; echo "FAIL --json through a dangling link: exit $code, link kept: $([ -L "$tmp/dangling.json" ] && echo yes || echo no)"
  cat "$tmp/err"
else
  echo "ok: --json through a dangling link created its target, the link stays"
fi
ln -s loop-b.json "$tmp/loop-a.json" && ln -s loop-a.json "$tmp/loop-b.json"
refuse "$tmp/loop-a.json" "it is a symbolic link that never reaches a file"

# gen -o: the same refusals, and a link is written through.
"$vattn" gen -o "$tmp/pipe" --prefix 8 --drafts 2 >"$tmp/out" 2>"$tmp/err"
code=$?
if [ $code -ne 2 ] || ! grep -qF -- "-o $tmp/pipe: it is not a regular file" "$tmp/err"; then
  ok=0; echo "FAIL gen -o PIPE: exit $code (expected 2)"; cat "$tmp/err"
else
  echo "ok: gen -o PIPE refused: $(head -1 "$tmp/err")"
fi
ln -s gen-target.h5 "$tmp/gen-link.h5" && echo x >"$tmp/gen-target.h5"
"$vattn" gen -o "$tmp/gen-link.h5" --prefix 8 --drafts 2 >"$tmp/out" 2>"$tmp/err"
code=$?
if [ $code -ne 0 ] || [ ! -L "$tmp/gen-link.h5" ] || ! "$vattn" info "$tmp/gen-target.h5" >/dev/null 2>&1; then
  ok=0; echo "FAIL gen -o through a link: exit $code, link kept: $([ -L "$tmp/gen-link.h5" ] && echo yes || echo no)"
  cat "$tmp/err"
else
  echo "ok: gen -o through a link wrote its target, the link stays"
fi
[ $ok -eq 1 ]
# SPDX-License-Identifier: Apache-2.0
