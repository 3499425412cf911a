#!/usr/bin/env bash
# An overnight fuzz campaign against one kernel revision, on a GPU machine: the GPU
# properties run round after round, each with a fresh seed, at the large budget, until the
# time is up or a property fails. Progress goes to the terminal and to LOG; failures leave
# their repro .h5 files in FINDINGS and the RC_PARAMS line that re-runs them.
#   scripts/fuzz-campaign.sh [--kernel split-v1|path/lib.so] [--hours 8] [--cases 200]
#                            [--budget large] [--findings DIR] [--tests BINARY]
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
kernel=split-v1 hours=8 cases=200 budget=large findings="$root/findings" tests=""
while [ $# -gt 0 ]; do
  case $1 in
    --kernel) kernel=$2; shift 2 ;;
    --hours) hours=$2; shift 2 ;;
    --cases) cases=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --findings) findings=$2; shift 2 ;;
    --tests) tests=$2; shift 2 ;;
    -h|--help) sed -n 2,9p "$0"; exit 0 ;;
    *) echo "fuzz-campaign: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
if [ -z "$tests" ]; then
  for t in "$root/build/tests/gpu/vattn_tests_gpu" "$root/.device/build/tests/gpu/vattn_tests_gpu"; do
    [ -x "$t" ] && tests=$t && break
  done
fi
[ -x "$tests" ] || { echo "fuzz-campaign: no vattn_tests_gpu found (build first, or --tests PATH)" >&2; exit 2; }
mkdir -p "$findings"
log="$findings/campaign-$(date -u +%Y%m%dT%H%M%SZ).log"
end=$(( $(date +%s) + $(awk "BEGIN{print int($hours*3600)}") ))
export VATTN_KERNEL="$kernel" VATTN_FUZZ_BUDGET="$budget" VATTN_FUZZ_CASES="$cases" VATTN_FINDINGS_DIR="$findings"
round=0
echo "campaign: kernel=$kernel budget=$budget cases/property/round=$cases until $(date -u -d @$end) log=$log" | tee "$log"
while [ "$(date +%s)" -lt "$end" ]; do
  round=$((round + 1))
  seed=$(( (RANDOM << 16) ^ RANDOM ^ round ))
  start=$(date +%s)
  if RC_PARAMS="seed=$seed" "$tests" "[property]~[planted]" >>"$log" 2>&1; then
    echo "round $round seed=$seed: all properties held ($(( $(date +%s) - start )) s)" | tee -a "$log"
  else
    echo "round $round seed=$seed: A PROPERTY FAILED. Re-run: VATTN_KERNEL=$kernel VATTN_FUZZ_BUDGET=$budget" \
         "VATTN_FUZZ_CASES=$cases RC_PARAMS=\"seed=$seed\" $tests \"[property]\"; repros and details: $findings, $log" | tee -a "$log"
    exit 1
  fi
done
echo "campaign: $round rounds, no failure" | tee -a "$log"
