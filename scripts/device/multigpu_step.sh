#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The multi-GPU fuzz run of issue 20 in one call, from a staged build (scripts/device/stage.sh with
# -DVATTN_BUILD_PLANTED=ON, its default: the crash revision is a planted one), on a machine with
# two or more GPUs (device kind nvidia-h200-x2):
#   bash scripts/device/multigpu_step.sh [SECONDS]
# Three campaigns of SECONDS each (default 120), one after the other:
#   one     vattn fuzz --kernel split-v2 --gpus 0: one worker, the baseline cases/s
#   all     vattn fuzz --kernel split-v2 --gpus all: a worker per GPU; nvidia-smi samples every
#           GPU's utilisation every 2 s
#   crash   vattn fuzz --gpus all of revisions/libvattn_rev_plant_crash.so (illegal address on
#           a request with 17 drafts): findings, and the other GPU's worker must keep running
# then scripts/device/multigpu_check.py: per-worker and total cases/s, the scaling all/one, no
# case index run twice, a crash finding, the other workers going on after the first crash, every
# GPU busy. Each campaign's report.html is the one report of all its workers.
# VATTN_MULTI_TARGET=host runs the same with host targets and worker processes instead of GPUs
# (host:bf16-reference with --workers 1 and 2, host:faulty:crash@T=17 with --workers 2; small
# budget): how CI tests this script. VATTN_EXE overrides the vattn binary (default
# .device/build/vattn). Logs, campaign directories and multigpu.json go to $OUT (or /tmp).
# Exit 0 when every campaign ended as it should and every check holds, 1 otherwise, 2 usage.
set -uo pipefail
case "${1:-}" in
  -h|--help) sed -n '3,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
  ""|*[!0-9]*) [ -z "${1:-}" ] || { echo "multigpu_step.sh: SECONDS must be a whole number (got '$1'; --help)" >&2; exit 2; } ;;
esac
secs=${1:-120}
[ "$secs" -ge 1 ] || { echo "multigpu_step.sh: SECONDS must be at least 1" >&2; exit 2; }
root=$(cd "$(dirname "$0")/../.." && pwd)
b="$root/.device/build"
vattn=${VATTN_EXE:-$b/vattn}
out=${OUT:-/tmp}
[ -x "$vattn" ] || { echo "multigpu_step.sh: no vattn at $vattn (scripts/device/stage.sh, or set VATTN_EXE)" >&2; exit 2; }
work="$out/multigpu"
rm -rf "$work" && mkdir -p "$work" || exit 2
hours=$(python3 -c "import sys; print(int(sys.argv[1]) / 3600)" "$secs")

target=${VATTN_MULTI_TARGET:-gpu}
case $target in
  gpu)
    command -v nvidia-smi >/dev/null || { echo "multigpu_step.sh: no nvidia-smi: not a GPU machine (VATTN_MULTI_TARGET=host for the host path)" >&2; exit 2; }
    n=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
    echo "multigpu_step: $n GPU(s): $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | tr -s ' ' | tr '\n' ';')"
    [ "$n" -ge 2 ] || echo "multigpu_step: WARNING: one GPU: 'all' runs one worker and the checks that need two fail"
    crash_lib="$b/revisions/libvattn_rev_plant_crash.so"
    [ -f "$crash_lib" ] || { echo "multigpu_step.sh: no $crash_lib (stage with -DVATTN_BUILD_PLANTED=ON)" >&2; exit 2; }
    one=(--kernel split-v2 --gpus 0)
    all=(--kernel split-v2 --gpus all)
    crash=(--kernel "$crash_lib" --gpus all)
    ;;
  host)
    one=(--kernel host:bf16-reference --workers 1 --budget small)
    all=(--kernel host:bf16-reference --workers 2 --budget small)
    crash=(--kernel host:faulty:crash@T=17 --workers 2 --budget small --seed 3 --case-timeout 2)
    ;;
  *) echo "multigpu_step.sh: VATTN_MULTI_TARGET is gpu or host (got '$target')" >&2; exit 2 ;;
esac

rc=0
# run NAME EXPECTED_EXIT ARGS...: one campaign of $secs seconds into $work/NAME.
run() {
  local name=$1 want=$2 code
  shift 2
  echo "== $name: vattn fuzz $* --hours $hours"
  # A hard bound beside --hours: a stuck campaign must not take the device call with it.
  timeout --kill-after=10 $((secs + 120)) "$vattn" fuzz "$@" --hours "$hours" --out "$work/$name" >"$work/$name.log" 2>&1
  code=$?
  [ "$code" = 124 ] && echo "FAIL $name: still running $((secs + 120)) s after its start: killed"
  grep -E "^vattn fuzz|this run:|verdicts:" "$work/$name.log" | head -4
  if [ "$code" != "$want" ]; then
    echo "FAIL $name: exit $code, $want expected (log: $work/$name.log)"
    tail -n 5 "$work/$name.log"
    rc=1
  fi
}
run one 0 "${one[@]}"
util=()
if [ "$target" = gpu ]; then
  (while :; do nvidia-smi --query-gpu=index,utilization.gpu --format=csv,noheader,nounits; sleep 2; done) >"$work/util.csv" 2>/dev/null &
  sampler=$!
  util=(--util "$work/util.csv")
fi
run all 0 "${all[@]}"
[ "$target" = gpu ] && kill "$sampler" 2>/dev/null
run crash 1 "${crash[@]}"
for name in one all crash; do
  [ -f "$work/$name/summary.json" ] || { echo "FAIL $name: no summary.json (the campaign did not stop cleanly)"; exit 1; }
done
python3 "$root/scripts/device/multigpu_check.py" --one "$work/one" --all "$work/all" --crash "$work/crash" "${util[@]}" \
  --json "$out/multigpu.json" || rc=1
echo "reports: $work/all/report.html, $work/crash/report.html"
echo "multigpu_step: exit $rc"
exit $rc
