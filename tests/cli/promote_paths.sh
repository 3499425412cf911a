#!/usr/bin/env bash
# usage: promote_paths.sh VATTN
# `vattn promote` keeps the machine's paths out of the corpus and out of the binary:
#   - without --corpus it writes into fixtures/regressions of the current folder (the repository's
#     root), and where there is none it asks for --corpus (exit 2) instead of a compiled-in tree;
#   - the promoted file names its kernel library by its file name and its finding by the campaign's
#     folder name (night1/findings/001-wrong), never by an absolute path.
# A finding directory is made by hand here: finding.json and a shrunk case file from `vattn gen`.
set -uo pipefail
[ $# -eq 1 ] || { echo "usage: promote_paths.sh VATTN" >&2; exit 2; }
vattn=$(readlink -f "$1")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vattn-promote.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

recipe="B=1 H=2 P=[33] T=[3] tree=chain profile=uniform layout=contiguous poison=0 seed=4 scale=0.1446796 splits=0"
finding=$tmp/night1/findings/001-wrong
mkdir -p "$finding" "$tmp/repo/fixtures/regressions" "$tmp/elsewhere"
"$vattn" gen -o "$finding/shrunk.h5" --recipe "$recipe" > "$tmp/gen.log" 2>&1 || { cat "$tmp/gen.log"; exit 1; }
cat > "$finding/finding.json" <<EOF
{"schema": "vattn-fuzz-finding", "version": 1, "id": "001", "signature": "wrong: vs oracle", "count": 3,
 "kernel": "$tmp/build/revisions/libvattn_rev_mine.so", "first_case": {"index": 4, "recipe": "$recipe"},
 "shrunk_repro": "shrunk.h5", "repro": "shrunk.h5"}
EOF

rc=0
out=$(cd "$tmp/elsewhere" && "$vattn" promote "$finding" 2>&1) || rc=$?
[ $rc -eq 2 ] || fail "no fixtures/regressions in the current folder: exit $rc, expected 2"
grep -qF "no fixtures/regressions here: run from the repository's root, or give --corpus DIR" <<<"$out" ||
  fail "no fixtures/regressions: the message does not say what to do: $out"
[ -z "$(ls -A "$tmp/elsewhere")" ] || fail "something was written in a folder without a corpus"

rc=0
out=$(cd "$tmp/repo" && "$vattn" promote ../night1/findings/001-wrong/ 2>&1) || rc=$?
[ $rc -eq 0 ] || fail "promote from the repository's root: exit $rc: $out"
shopt -s nullglob
files=("$tmp"/repo/fixtures/regressions/*.h5)
if [ ${#files[@]} -ne 1 ]; then
  fail "expected one file in fixtures/regressions, found ${#files[@]}"
else
  info=$("$vattn" info "${files[0]}" 2>&1 | sed "1s|^${files[0]}: ||")  # what follows the file's own path
  grep -qF "source fuzz:libvattn_rev_mine.so," <<<"$info" || fail "the source is not the library's file name: $info"
  grep -qF "notes: regression case promoted from night1/findings/001-wrong: finding 001, wrong: vs oracle (x3)" <<<"$info" ||
    fail "the notes do not name the finding by its campaign folder: $info"
  if grep -qF "$tmp" <<<"$info"; then fail "the promoted file holds a path of this machine: $info"; fi
fi
# The whole help first: `grep -q` ends at its match, and a pipe would then fail on vattn's SIGPIPE.
help=$("$vattn" promote --help)
grep -qF "(default: fixtures/regressions" <<<"$help" || fail "promote --help does not give the default corpus"

[ $failures -eq 0 ] || { echo "promote_paths: $failures check(s) failed"; exit 1; }
echo "ok: promote writes into ./fixtures/regressions or asks for --corpus, and its file names no path of this machine"
# SPDX-License-Identifier: Apache-2.0
