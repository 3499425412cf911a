#!/usr/bin/env bash
# usage: replay_all.sh BUILD_DIR SOURCE_DIR
# scripts/replay-all.sh --no-setup with this build's vattn, over the committed case files:
#   - its last line is the closing line: what passed, what those passes compared (without a GPU:
#     stored outputs held to the recomputed oracle, no kernel ran, and the kernel named as not run with
#     its reason; with one: live runs), how many files; exit 0;
#   - with the caller's --json FILE the report is kept there; --json - is refused (exit 2);
#   - a run that writes no report (a usage error) ends with a closing line that says so, never with
#     one read from an older report left in the caller's --json FILE; exit 2.
set -uo pipefail
[ $# -eq 2 ] || { echo "usage: replay_all.sh BUILD_DIR SOURCE_DIR" >&2; exit 2; }
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vattn-replay-all-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
run() {  # run NAME ARGS...: replay-all.sh --no-setup ARGS; sets rc and last, output in $tmp/NAME.out
  local name=$1
  shift
  rc=0
  env VATTN_BUILD="$build" bash "$src/scripts/replay-all.sh" --no-setup "$@" > "$tmp/$name.out" 2>&1 || rc=$?
  last=$(tail -n 1 "$tmp/$name.out")
}
shopt -s nullglob
files=("$src"/fixtures/*.h5 "$src"/fixtures/regressions/*.h5 "$src"/captured_tensors/*.h5)
n=${#files[@]}

run plain
closing=$last
[ $rc -eq 0 ] || fail "exit $rc, expected 0"
# A file may store more than one output to hold to the oracle (a capture keeps serving's and the
# float64 oracle's): at least one pass a file, every pass a stored output's.
re_stored="^== replay-all: ([0-9]+) passed, 0 failed \\(([0-9]+) stored outputs held to the recomputed oracle; no kernel ran\\), 1 not run \\(kernel:split-v2: .*\\), $n files given ==\$"
re_live="^== replay-all: [0-9]+ passed, 0 failed \\(.* live run.*\\), $n files given ==\$"  # a GPU machine: the kernel ran
if [[ $last =~ $re_stored ]]; then
  [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ] && [ "${BASH_REMATCH[1]}" -ge "$n" ] ||
    fail "the closing line's counts: $last"
elif ! [[ $last =~ $re_live ]]; then
  fail "the last line is not the closing line: $last"
  tail -n 5 "$tmp/plain.out"
fi

run json --json "$tmp/report.json"
[ $rc -eq 0 ] || fail "--json FILE: exit $rc, expected 0"
[ -s "$tmp/report.json" ] || fail "--json FILE: the report was not kept there"
re_any="^== replay-all: [0-9]+ passed, 0 failed .*, $n files given ==\$"
[[ $last =~ $re_any ]] || fail "--json FILE: closing line: $last"

run stdout --json -
[ $rc -eq 2 ] || fail "--json -: exit $rc, expected 2"
grep -qF -- "--json - is not supported here" "$tmp/stdout.out" || fail "--json -: no reason given"

# An older report in the caller's file must not be summed up as this run's.
cp "$tmp/report.json" "$tmp/old.json"
touch -d '2020-01-01' "$tmp/old.json"
run usage --json "$tmp/old.json" --frobnicate
[ $rc -eq 2 ] || fail "a usage error: exit $rc, expected 2"
[ "$last" = "== replay-all: vattn replay exited 2 and wrote no report: nothing to sum up (its messages are above) ==" ] ||
  fail "a usage error: the closing line: $last"

[ $failures -eq 0 ] || { echo "replay_all: $failures check(s) failed"; exit 1; }
echo "ok: replay-all.sh ends with its closing line: $closing"
# SPDX-License-Identifier: Apache-2.0
