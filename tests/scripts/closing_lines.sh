#!/usr/bin/env bash
# usage: closing_lines.sh SOURCE_DIR
# scripts/test.sh's closing summary, on a scratch ctest project whose tests pass, skip (one with the
# cpu label, one with the gpu label, each printing its reason), carry the slow label, or fail on
# demand. test.sh --no-setup runs it as it runs the suite's build:
#   - the closing line counts what passed, what was skipped and why, what the slow label left out,
#     and it is printed twice, the second time as the very last line;
#   - the gpu test's reason comes last, after the other skips, one test a line;
#   - --all runs the slow test; VATTN_REQUIRE_GPU=1 turns the gpu skip into a failure (exit 8, ctest's);
#   - a test killed at its TIMEOUT is named as timed out (ctest's JUnit does not say so);
#   - ctest arguments pass through, and only the slow tests they select count as not run;
#   - no build folder: exit 2, naming it.
set -uo pipefail
[ $# -eq 1 ] || { echo "usage: closing_lines.sh SOURCE_DIR" >&2; exit 2; }
src=$(cd "$1" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vattn-closing.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

mkdir -p "$tmp/project"
cat > "$tmp/project/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.24)
project(scratch NONE)
enable_testing()
add_test(NAME passes COMMAND sh -c "exit 0")
add_test(NAME skips_cpu COMMAND sh -c "echo 'some output'; echo 'SKIPPED: chromium not found'; exit 77")
add_test(NAME skips_gpu COMMAND sh -c "[ \"$VATTN_REQUIRE_GPU\" = 1 ] && { echo 'FAILED: no GPU'; exit 1; }; echo 'SKIPPED: no CUDA device visible'; exit 77")
add_test(NAME slow_one COMMAND sh -c "exit 0")
set_tests_properties(passes PROPERTIES LABELS cpu)
set_tests_properties(skips_cpu PROPERTIES LABELS cpu SKIP_RETURN_CODE 77)
set_tests_properties(skips_gpu PROPERTIES LABELS gpu SKIP_RETURN_CODE 77)
set_tests_properties(slow_one PROPERTIES LABELS "cpu;slow")
add_test(NAME hangs_on_demand COMMAND sh -c "echo started; [ \"$PLANT_HANG\" = 1 ] && sleep 10; exit 0")
set_tests_properties(hangs_on_demand PROPERTIES LABELS cpu TIMEOUT 1)
EOF
cmake -S "$tmp/project" -B "$tmp/build" > "$tmp/configure.log" 2>&1 || { cat "$tmp/configure.log"; exit 1; }

# run NAME [ENV=VALUE...] -- ARGS...: test.sh --no-setup on the scratch build; output in $tmp/NAME.out.
run() {
  local name=$1 envs=()
  shift
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  rc=0
  env VATTN_BUILD="$tmp/build" "${envs[@]}" bash "$src/scripts/test.sh" --no-setup "$@" > "$tmp/$name.out" 2>&1 || rc=$?
  last=$(tail -n 1 "$tmp/$name.out")
}
show() { sed 's/^/    | /' "$tmp/$1.out"; }

run default --
want='^== 2 passed, 2 skipped \(1: chromium not found; 1: no CUDA device visible\), 1 not run \(label slow: scripts/test\.sh --all runs them\) in [0-9]+ s ==$'
[ $rc -eq 0 ] || fail "default run: exit $rc, expected 0"
grep -qE "$want" <<<"$last" || { fail "default run: the last line is not the closing line: $last"; show default; }
[ "$(grep -cxF -- "$last" "$tmp/default.out")" -eq 2 ] || fail "default run: the closing line is not printed twice"
# The gpu test's reason comes after every other skip, right before the note and the closing line.
order=$(grep -nE '^SKIPPED' "$tmp/default.out" | cut -d: -f2-)
expected_order=$'SKIPPED [1] chromium not found: skips_cpu\nSKIPPED skips_gpu: no CUDA device visible'
[ "$order" = "$expected_order" ] || { fail "default run: the skip lines are not in order, gpu last:"; echo "$order"; }
grep -qxF "NOT RUN [1] label slow: slow_one" "$tmp/default.out" || fail "default run: the slow test is not listed as not run"
grep -q "^NOTE: this gpu test did NOT run" "$tmp/default.out" || { fail "default run: no note on the gpu test"; show default; }

run all -- --all
want='^== 3 passed, 2 skipped \(1: chromium not found; 1: no CUDA device visible\) in [0-9]+ s ==$'
[ $rc -eq 0 ] || fail "--all: exit $rc, expected 0"
grep -qE "$want" <<<"$last" || { fail "--all: closing line: $last"; show all; }

run require VATTN_REQUIRE_GPU=1 --
want='^== 1 failed, 2 passed, 1 skipped \(1: chromium not found\), 1 not run \(label slow: scripts/test\.sh --all runs them\) in [0-9]+ s ==$'
[ $rc -ne 0 ] || fail "VATTN_REQUIRE_GPU=1: exit 0, expected ctest's failure"
grep -qE "$want" <<<"$last" || { fail "VATTN_REQUIRE_GPU=1: closing line: $last"; show require; }
grep -q "^FAILED skips_gpu" "$tmp/require.out" || fail "VATTN_REQUIRE_GPU=1: the gpu test is not named as failed"

# A slow test counts as not run only when the caller's own filters select it.
run gpu_only -- -L gpu
want='^== 0 passed, 1 skipped \(1: no CUDA device visible\) in [0-9]+ s ==$'
grep -qE "$want" <<<"$last" || { fail "-L gpu: closing line: $last"; show gpu_only; }
run cpu_only -- -L cpu
want='^== 2 passed, 1 skipped \(1: chromium not found\), 1 not run \(label slow: scripts/test\.sh --all runs them\) in [0-9]+ s ==$'
grep -qE "$want" <<<"$last" || { fail "-L cpu: closing line: $last"; show cpu_only; }

# ctest's JUnit does not say a test timed out; the summary does.
run hang PLANT_HANG=1 -- -R hangs_on_demand
[ $rc -ne 0 ] || fail "a timed-out test: exit 0"
grep -qxF "FAILED hangs_on_demand: timed out after 1 s; last line: started" "$tmp/hang.out" ||
  { fail "a timed-out test is not named as one"; show hang; }

run nothing -- -R no_such_test
[ $rc -ne 0 ] || fail "a filter that matches nothing: exit 0 (ctest --no-tests=error)"

rc=0
env VATTN_BUILD="$tmp/none" bash "$src/scripts/test.sh" --no-setup > "$tmp/nobuild.out" 2>&1 || rc=$?
if [ $rc -ne 2 ] || ! grep -qF "no configured build in $tmp/none" "$tmp/nobuild.out"; then
  fail "no build folder: exit $rc, expected 2 naming it"
  show nobuild
fi

[ $failures -eq 0 ] || { echo "closing_lines: $failures check(s) failed"; exit 1; }
echo "ok: test.sh's closing line: counts, reasons, gpu reasons last, slow left out, --all, VATTN_REQUIRE_GPU=1"
# SPDX-License-Identifier: Apache-2.0
