#!/usr/bin/env bash
# One GPU-machine session, everything in one call (device time is scarce), from a staged build
# (scripts/device/stage.sh; carry .device). Steps, in the order given:
#   tests     ctest -L gpu (scripts/device/run.sh): every revision-dependent GPU test once per in-tree
#             revision ("split-v1:...", "split-v2:..."), the others once
#   planted   the tests of the tests: each planted kernel bug must be caught by a property
#   sanitize  the sanitizer set under compute-sanitizer memcheck, racecheck, initcheck, synccheck
#   replay    vattn replay of fixtures/*.h5 with each in-tree revision (replay-<revision>.log, .json)
#   graph     vattn graph-check of each in-tree revision; each graph-unsafe variant must fail it
#   repro     demo: a property finds a planted bug; its recipe line and its repro file replay it
#   bench     vattn bench of split-v1,split-v2 (eager, graph, queued; roofline; split-v2 against the baseline)
#   probe     vattn_ceiling_probe: the kernel's tile loop with parts off (4 and 16 row tiles per request)
#   timeline  vattn timeline of split-v2's timing-probe build (stage with -DVATTN_BUILD_PROBES=ON,
#             stage.sh's default) at B=1 T=64 P=4096 and 65536, B=8 T=16 P=4096: where a call's time goes
#   fuzz-planted  vattn fuzz against the planted crash/hang/bf16-partials/drop-last-key revisions
#   fuzz      vattn fuzz against split-v2 (VATTN_FUZZ_KERNEL) for $VATTN_FUZZ_MINUTES (default 5) minutes: throughput
#   multigpu  scripts/device/multigpu_step.sh $VATTN_MULTI_SECONDS (default 120): split-v1 on one GPU,
#             on every GPU, and the planted crash revision on every GPU, with their checks (two or
#             more GPUs: device kind nvidia-h200-x2)
#   fuzz-ab   split-v2 for $VATTN_AB_SECONDS (default 60) s each: as is, --threads = all cores,
#             VATTN_FUZZ_PLAIN_UPLOAD=1 (cases/s and where the time goes)
#   python    scripts/device/python_step.sh: SGLang's Triton kernel as a producer and the capture
#             hook around it, replayed against the oracle and split-v2 (.device/sglang-files)
#   mutation  scripts/device/mutation_step.sh on $VATTN_MUTANTS (default .device-mutants, made
#             here with scripts/mutation/mutants.py generate/build): 60 s per mutant,
#             $VATTN_MUTANT_PER_GPU (1) campaigns at a time on each GPU, none started past
#             $VATTN_MUTANT_SECONDS (300)
# Default: tests planted replay graph bench (sanitize and repro take minutes: ask for them).
# Logs land in $OUT (or /tmp). Exit 0 when every step did what it should, 1 otherwise, 2 usage.
#   bash scripts/device/session.sh [STEP...]
set -uo pipefail
for arg in "$@"; do case $arg in -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;; esac; done
root=$(cd "$(dirname "$0")/../.." && pwd)
out="${OUT:-/tmp}"
b="$root/.device/build"
if [ $# -eq 0 ]; then steps="tests planted replay graph bench"; else steps="$*"; fi
# Every step name is checked before any step runs: a typo must not cost a device session.
for step in "$@"; do
  case $step in
    tests|planted|repro|sanitize|replay|graph|bench|probe|timeline|fuzz-planted|fuzz|fuzz-ab|multigpu|mutation|python) ;;
    *) echo "session.sh: unknown step '$step' (steps: tests planted sanitize replay graph repro bench probe timeline fuzz-planted fuzz fuzz-ab multigpu mutation python; --help)" >&2; exit 2 ;;
  esac
done
export VATTN_REQUIRE_GPU=1  # a GPU machine: GPU tests that cannot see the device fail, not skip
[ -x "$b/vattn" ] || { echo "session: no staged build at $b (run scripts/device/stage.sh first)" >&2; exit 2; }
# The in-tree revisions, split-v1 (the baseline) first: kernels/vattn_revisions.h's lone-string #defines.
mapfile -t revisions < <(sed -n 's/^#define VATTN_REVISION_[A-Z0-9_]* "\([^"]*\)"$/\1/p' "$root/kernels/vattn_revisions.h")
[ ${#revisions[@]} -gt 0 ] || { echo "session: no revision names in kernels/vattn_revisions.h" >&2; exit 2; }
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
      [ -e "$lib" ] || { echo "session: repro needs the planted variants (stage with -DVATTN_BUILD_PLANTED=ON)"; rc=1; continue; }
      # The property writes a repro file per shrink step: they stay out of $OUT, the logs go there.
      export VATTN_FINDINGS_DIR=/tmp/vattn-repro-demo; rm -rf "$VATTN_FINDINGS_DIR"
      VATTN_KERNEL="$lib" RC_PARAMS="seed=7" "$b/tests/gpu/vattn_tests_gpu" "kernel property: agrees with the CPU float64 oracle" \
        > "$out/repro-property.log" 2>&1
      code=$?; echo "property run exit $code (1 expected)"; [ $code = 1 ] || rc=1
      grep -E "falsified|^  recipe:|reproduce=" "$out/repro-property.log" | head -3
      line=$(grep -m1 "^  recipe:" "$out/repro-property.log" | sed 's/^  recipe: //')
      # shellcheck disable=SC2012  # the newest repro; the suite names these files itself
      repro=$(ls -t "$VATTN_FINDINGS_DIR"/*.h5 2>/dev/null | head -1)
      [ -n "$line" ] && [ -n "$repro" ] || { echo "session: the property left no recipe line or repro file"; rc=1; continue; }
      # With the planted revision both replays must fail (1); the file alone is replayed with the
      # in-tree kernel and the outputs the property stored in it (shown, not checked).
      for args in "1|--recipe|$line|--kernel|$lib" "1|$repro|--kernel|$lib" "any|$repro"; do
        IFS='|' read -r -a argv <<<"$args"
        want=${argv[0]}; argv=("${argv[@]:1}")
        echo "--- vattn replay ${argv[*]}"
        "$b/vattn" replay "${argv[@]}" > "$out/replay-demo.log" 2>&1; code=$?
        grep -E "kernel:|serving|replay:" "$out/replay-demo.log" | grep -v "not run" | tail -4
        if [ "$want" = any ]; then echo "exit $code"; else echo "exit $code ($want expected)"; [ $code = "$want" ] || rc=1; fi
      done
      rp=$(grep -m1 -o 'reproduce=[A-Za-z0-9_-]*' "$out/repro-property.log")
      VATTN_KERNEL="$lib" RC_PARAMS="$rp" "$b/tests/gpu/vattn_tests_gpu" "kernel property: agrees with the CPU float64 oracle" 2>&1 |
        grep -E "falsified|test cases" | head -2 ;;
    sanitize) bash "$root/scripts/device/run.sh" --sanitize | grep -E "===|SUMMARY|passed|failed"
              [ "${PIPESTATUS[0]}" = 0 ] || rc=1 ;;
    replay) for rev in "${revisions[@]}"; do
              echo "---- replay --kernel $rev"
              "$b/vattn" replay "$root"/fixtures/*.h5 --kernel "$rev" --json "$out/replay-$rev.json" 2>&1 |
                tee "$out/replay-$rev.log" | tail -20
              [ "${PIPESTATUS[0]}" = 0 ] || rc=1
            done ;;
    graph)
      for rev in "${revisions[@]}"; do
        echo "---- graph-check --kernel $rev"
        "$b/vattn" graph-check --kernel "$rev" 2>&1 | tee "$out/graph-check-$rev.log"
        [ "${PIPESTATUS[0]}" = 0 ] || rc=1
      done
      ls "$b"/revisions/libvattn_rev_unsafe_*.so >/dev/null 2>&1 ||
        echo "session: no graph-unsafe variants staged (stage with -DVATTN_BUILD_PLANTED=ON); only the in-tree revisions checked"
      for lib in "$b"/revisions/libvattn_rev_unsafe_*.so; do
        [ -e "$lib" ] || continue
        echo "---- graph-check --kernel $(basename "$lib") (must FAIL)"
        "$b/vattn" graph-check --kernel "$lib" > /tmp/unsafe.log 2>&1; code=$?
        grep -E "FAIL|graph-check:" /tmp/unsafe.log | head -8
        [ $code = 1 ] || { echo "session: $(basename "$lib") was not caught (exit $code, 1 expected)"; rc=1; }
      done ;;
    bench) "$b/vattn" bench --kernel "$(IFS=,; echo "${revisions[*]}")" --json "$out/bench.json" 2>&1 | tee "$out/bench.log" | grep -v "^bench:"
           [ "${PIPESTATUS[0]}" = 0 ] || rc=1 ;;
    fuzz-planted) bash "$root/scripts/device/fuzz_step.sh" planted || rc=1 ;;
    fuzz) bash "$root/scripts/device/fuzz_step.sh" kernel "${VATTN_FUZZ_MINUTES:-5}" || rc=1 ;;
    multigpu) bash "$root/scripts/device/multigpu_step.sh" "${VATTN_MULTI_SECONDS:-120}" || rc=1 ;;
    fuzz-ab)
      s=${VATTN_AB_SECONDS:-60}
      for variant in "as-is" "--threads $(nproc)" "VATTN_FUZZ_PLAIN_UPLOAD=1"; do
        envs=() args=()
        case $variant in --*) read -r -a args <<<"$variant" ;; as-is) ;; *) envs=("$variant") ;; esac
        rm -rf /tmp/vattn-ab
        env "${envs[@]}" timeout $((s + 60)) "$b/vattn" fuzz --kernel split-v2 --hours "$(awk "BEGIN{print $s/3600}")" \
          --seed 3 --out /tmp/vattn-ab --no-report "${args[@]}" > "$out/ab.log" 2>&1
        code=$?
        echo "---- $variant: exit $code"
        grep -E "this run:|gpu0:" "$out/ab.log"
        [ $code = 0 ] || rc=1
      done ;;
    mutation)
      bash "$root/scripts/device/mutation_step.sh" "${VATTN_MUTANTS:-$root/.device-mutants}" 60 \
        "${VATTN_MUTANT_PER_GPU:-1}" 0 "${VATTN_MUTANT_SECONDS:-300}" 2>&1 | grep -E "^(build|run):|Score|killed by|Survivors|^###"
      [ "${PIPESTATUS[0]}" = 0 ] || rc=1 ;;
    python) bash "$root/scripts/device/python_step.sh" || rc=1 ;;
    probe) for groups in 4 16; do
             "$b/vattn_ceiling_probe" --row-groups $groups 2>&1 | tee "$out/probe-$groups.log"
             [ "${PIPESTATUS[0]}" = 0 ] || rc=1
           done ;;
    timeline)
      lib="$b/revisions/libvattn_rev_v2_timeline.so"
      [ -e "$lib" ] || { echo "session: timeline needs the timing-probe build (stage with -DVATTN_BUILD_PROBES=ON)"; rc=1; continue; }
      for shape in "1 64 4096" "1 64 65536" "8 16 4096"; do
        read -r bb tt pp <<<"$shape"
        "$b/vattn" timeline --kernel "$lib" --batch "$bb" --drafts "$tt" --prefix "$pp" 2>&1 | tee -a "$out/timeline.log"
        [ "${PIPESTATUS[0]}" = 0 ] || rc=1
      done ;;
  esac
done
echo "session: exit $rc"
exit $rc
# SPDX-License-Identifier: Apache-2.0
