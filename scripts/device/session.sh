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
    tests) bash "$root/scripts/device/run.sh" -j 8 --timeout 480 | grep -vE "^ +Start" | tail -40
           [ "${PIPESTATUS[0]}" = 0 ] || rc=1 ;;
    planted) VATTN_BINARY_DIR="$b" "$b/tests/gpu/vattn_tests_gpu" "[planted]" 2>&1 | tee "$out/planted.log" |
               grep -E "^planted |test cases|All tests"
             [ "${PIPESTATUS[0]}" = 0 ] || rc=1 ;;
    repro)  # a planted bug found by a property, then re-run from its line and from its repro file
      lib="$b/revisions/libvattn_rev_plant_drop_last_key.so"
      export VATTN_FINDINGS_DIR=/tmp/vattn-repro-demo; rm -rf "$VATTN_FINDINGS_DIR"
      VATTN_KERNEL="$lib" RC_PARAMS="seed=7" "$b/tests/gpu/vattn_tests_gpu" "kernel property: agrees with the CPU float64 oracle" \
        > "$out/repro-property.log" 2>&1
      echo "property run exit $? (1 expected)"; grep -E "falsified|^  recipe:|reproduce=" "$out/repro-property.log" | head -3
      line=$(grep -m1 "^  recipe:" "$out/repro-property.log" | sed 's/^  recipe: //')
      repro=$(ls -t "$VATTN_FINDINGS_DIR"/*.h5 | head -1)
      for args in "--recipe|$line|--kernel|$lib" "$repro|--kernel|$lib" "$repro"; do
        IFS='|' read -r -a argv <<<"$args"
        echo "--- vattn replay ${args//|/ }"
        "$b/vattn" replay "${argv[@]}" > /tmp/replay-demo.log 2>&1; code=$?
        grep -E "kernel:|serving|replay:" /tmp/replay-demo.log | grep -v "not run" | tail -4; echo "exit $code"
      done
      rp=$(grep -m1 -o 'reproduce=[A-Za-z0-9_-]*' "$out/repro-property.log")
      VATTN_KERNEL="$lib" RC_PARAMS="$rp" "$b/tests/gpu/vattn_tests_gpu" "kernel property: agrees with the CPU float64 oracle" 2>&1 |
        grep -E "falsified|test cases" | head -2 ;;
    sanitize) bash "$root/scripts/device/run.sh" --sanitize | grep -E "===|SUMMARY|passed|failed"
              [ "${PIPESTATUS[0]}" = 0 ] || rc=1 ;;
    replay) "$b/vattn" replay "$root"/fixtures/*.h5 --json "$out/replay.json" 2>&1 | tee "$out/replay.log" | tail -20
            [ "${PIPESTATUS[0]}" = 0 ] || rc=1 ;;
    graph)
      "$b/vattn" graph-check 2>&1 | tee "$out/graph-check.log"
      [ "${PIPESTATUS[0]}" = 0 ] || rc=1
      for lib in "$b"/revisions/libvattn_rev_unsafe_*.so; do
        [ -e "$lib" ] || continue
        echo "---- graph-check --kernel $(basename "$lib") (must FAIL)"
        "$b/vattn" graph-check --kernel "$lib" > /tmp/unsafe.log 2>&1; code=$?
        grep -E "FAIL|graph-check:" /tmp/unsafe.log | head -8
        [ $code = 1 ] || { echo "session: $(basename "$lib") was not caught (exit $code, 1 expected)"; rc=1; }
      done ;;
    bench) "$b/vattn" bench --json "$out/bench.json" 2>&1 | tee "$out/bench.log" | grep -v "^bench:"
           [ "${PIPESTATUS[0]}" = 0 ] || rc=1 ;;
    *) echo "session.sh: unknown step '$step'" >&2; rc=2 ;;
  esac
done
echo "session: exit $rc"
exit $rc
