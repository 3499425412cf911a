#!/usr/bin/env bash
# The fuzz steps of a GPU session (scripts/device/session.sh fuzz | fuzz-planted), from a
# staged build (stage with -DVATTN_BUILD_PLANTED=ON for the planted revisions):
#   fuzz_step.sh kernel [MINUTES]  vattn fuzz against the shipped revision, split-v2, for MINUTES
#                               (default 5): throughput, GPU utilisation sampled by nvidia-smi,
#                               must end clean (exit 0); VATTN_FUZZ_KERNEL=split-v1 (or a
#                               library) fuzzes that instead
#   fuzz_step.sh planted        campaigns against the planted crash, hang, bf16-partials,
#                               drop-last-key and no-nonfinite-guard revisions: each must end with
#                               exit 1 and a finding, every finding's printed command must re-fail
#                               it, and the guard's shrunk repro (the poisoned case) must fail replay;
#                               VATTN_PLANTED=v2 takes split-v2's planted revisions (v2_plant_*)
# Logs and summaries land in $OUT (or /tmp). Exit 0 when every campaign did what it should.
set -uo pipefail
case "${1:-}" in -h|--help|"") sed -n 2,12p "$0" | sed 's/^# \{0,1\}//'; [ -n "${1:-}" ]; exit $? ;; esac
root=$(cd "$(dirname "$0")/../.." && pwd)
b="$root/.device/build"
out="${OUT:-/tmp}"
work=/tmp/vattn-fuzz-step
mkdir -p "$work"
rc=0
rerun_findings() {  # every finding of campaign $1 re-fails with the command it printed
  local f cmd code
  for f in "$1"/findings/*/finding.json; do
    [ -e "$f" ] || { echo "  no finding directory in $1"; rc=1; return; }
    cmd=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['reproduce'][0])" "$f")
    echo "  re-run: $cmd"
    (cd "$b" && eval "timeout 60 ./$cmd --case-timeout 5") 2>&1 | head -3; code=${PIPESTATUS[0]}
    echo "  exit $code (1 expected)"; [ "$code" = 1 ] || rc=1
  done
}
case $1 in
  kernel)
    minutes=${2:-5}
    nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader -lms 1000 > "$out/fuzz-gpu-util.log" 2>&1 &
    smi=$!
    rm -rf "$work/kernel"
    # A hard stop a minute past the campaign's own; the report is made after it, on its own clock.
    timeout "$(awk "BEGIN{print int($minutes*60+60)}")" "$b/vattn" fuzz --kernel "${VATTN_FUZZ_KERNEL:-split-v2}" \
      --hours "$(awk "BEGIN{print $minutes/60}")" --seed 1 --out "$work/kernel" --no-report > "$out/fuzz.log" 2>&1
    code=$?
    timeout 90 "$b/vattn" report "$work/kernel" >> "$out/fuzz.log" 2>&1
    kill $smi 2>/dev/null
    cat "$out/fuzz.log"
    cp "$work/kernel/summary.json" "$out/fuzz-summary.json" 2>/dev/null
    awk -F'[ ,%]+' '{ if ($1 != "") { s += $1; n++ } } END { if (n) printf "GPU utilisation (nvidia-smi, 1 s samples): mean %.0f%% over %d samples\n", s / n, n }' \
      "$out/fuzz-gpu-util.log"
    echo "fuzz ${VATTN_FUZZ_KERNEL:-split-v2}: exit $code (0 expected)"; [ $code = 0 ] || rc=1 ;;
  planted)
    # The five campaigns run at once on the one GPU (a worker each, the cores shared out).
    case ${VATTN_PLANTED:-v1} in
      v1) pre="" ;;
      v2) pre="v2_" ;;
      *) echo "fuzz planted: VATTN_PLANTED=${VATTN_PLANTED}: v1 or v2" >&2; exit 2 ;;
    esac
    revs="${pre}plant_crash ${pre}plant_hang ${pre}plant_bf16_partials ${pre}plant_drop_last_key ${pre}plant_no_nonfinite_guard"
    threads=$(( $(nproc) / 5 - 1 )); [ $threads -ge 1 ] || threads=1
    declare -A pid=() started=()
    for rev in $revs; do
      lib="$b/revisions/libvattn_rev_$rev.so"
      [ -e "$lib" ] || { echo "fuzz planted: $lib missing (stage with -DVATTN_BUILD_PLANTED=ON)"; rc=1; continue; }
      rm -rf "${work:?}/$rev"
      started[$rev]=$(date +%s)
      # A hard stop: the hang campaign spends up to --case-timeout per hung case and shrink step
      # (on the H200, 200 cases with 30 s of shrinking: crash 75 s, bf16 53 s, drop 91 s, hang
      # cut at 100 s after its finding was shrunk), and a device call must not run away.
      timeout "${VATTN_PLANTED_SECONDS:-120}" "$b/vattn" fuzz --kernel "$lib" --cases "${VATTN_PLANTED_CASES:-200}" \
        --seed 2 --case-timeout 5 --threads $threads --max-shrink-seconds "${VATTN_PLANTED_SHRINK_SECONDS:-30}" \
        --out "$work/$rev" > "$out/fuzz-$rev.log" 2>&1 &
      pid[$rev]=$!
    done
    for rev in "${!pid[@]}"; do
      wait "${pid[$rev]}"; code=$?
      echo "#### $rev: exit $code (1 expected, or 124 from the hard stop once a finding is written), ended within $(( $(date +%s) - ${started[$rev]} )) s"
      grep -E "^  (this run|verdicts)|^    \[|shrunk:|vattn fuzz:" "$out/fuzz-$rev.log"
      # 1: findings; 124: cut by the hard stop, fine once a finding was written (the hang campaign)
      { [ $code = 1 ] || { [ $code = 124 ] && ls "$work/$rev"/findings/*/finding.json >/dev/null 2>&1; }; } || rc=1
      rerun_findings "$work/$rev"
      if [ "$rev" = "${pre}plant_no_nonfinite_guard" ]; then  # found by the partly-visible-poison property
        grep -q "partly visible poison" "$out/fuzz-$rev.log" || { echo "  not found by the poison property"; rc=1; }
        for f in "$work/$rev"/findings/*/shrunk.h5; do
          [ -e "$f" ] || continue
          timeout 60 "$b/vattn" replay "$f" > "$out/replay-$rev.log" 2>&1; code=$?
          grep -E "kernel:|replay:" "$out/replay-$rev.log" | tail -2
          echo "  vattn replay of the shrunk repro: exit $code (1 expected)"; [ $code = 1 ] || rc=1
        done
      fi
    done ;;
  *) echo "fuzz_step.sh: unknown step '$1' (kernel, planted; --help)" >&2; exit 2 ;;
esac
echo "fuzz step $1: exit $rc"
exit $rc
# SPDX-License-Identifier: Apache-2.0
