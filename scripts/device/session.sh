#!/usr/bin/env bash
# One GPU-machine session, everything in one call (device time is scarce): the gpu tests,
# replay of the fixtures with the kernel, graph checks of the real and the unsafe revisions,
# and the benchmark. Logs land in $OUT (or /tmp). Steps can be picked: session.sh tests bench
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out="${OUT:-/tmp}"
b="$root/.device/build"
steps="${*:-tests planted replay graph bench}"
rc=0
for step in $steps; do
  echo "################ $step"
  case $step in
    tests) bash "$root/scripts/device/run.sh" -j 8 --timeout 480 | grep -vE "^ +Start" | tail -40 || rc=1 ;;
    planted) VATTN_BINARY_DIR="$b" "$b/tests/gpu/vattn_tests_gpu" "[planted]" 2>&1 | tee "$out/planted.log" |
               grep -E "^planted |test cases|All tests" || rc=1 ;;
    sanitize) bash "$root/scripts/device/run.sh" --sanitize | grep -E "===|SUMMARY|passed|failed" || rc=1 ;;
    replay) "$b/vattn" replay "$root"/fixtures/*.h5 --json "$out/replay.json" 2>&1 | tee "$out/replay.log" | tail -20 || rc=1 ;;
    graph)
      "$b/vattn" graph-check 2>&1 | tee "$out/graph-check.log" || rc=1
      for lib in "$b"/revisions/libvattn_rev_unsafe_*.so; do
        [ -e "$lib" ] || continue
        echo "---- graph-check --kernel $(basename "$lib") (must FAIL)"
        "$b/vattn" graph-check --kernel "$lib" 2>&1 | grep -E "FAIL|graph-check:" | head -8
      done ;;
    bench) "$b/vattn" bench --json "$out/bench.json" 2>&1 | tee "$out/bench.log" | grep -v "^bench:" || rc=1 ;;
    *) echo "session.sh: unknown step '$step'" >&2; rc=2 ;;
  esac
done
exit $rc
