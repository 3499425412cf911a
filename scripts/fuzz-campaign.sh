#!/usr/bin/env bash
# An overnight fuzz campaign against one kernel revision, on a GPU machine: the GPU
# properties run round after round, each with a fresh seed, at the large budget, until the
# time is up or a property fails (with --keep-going: until the time is up, collecting every
# failure, or until three rounds in a row fail within 10 s each). Progress goes to the
# terminal and to LOG; a failed round names the falsified properties and their recipe lines,
# leaves repro .h5 files in FINDINGS and prints the line that re-runs it.
#   scripts/fuzz-campaign.sh [--kernel split-v1|path/lib.so] [--hours 8] [--cases 200]
#                            [--budget large] [--findings DIR] [--tests BINARY] [--keep-going]
# At least one round runs, however short --hours is (--hours 0.01: one quick smoke round).
# Exit: 0 time is up and every round held, 1 a round failed (a property, or the tests binary
# died), 2 usage or nothing could run (no tests binary, no CUDA device, a --kernel that does
# not load).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
kernel=split-v1 hours=8 cases=200 budget=large findings="$root/findings" tests="" keep_going=0
while [ $# -gt 0 ]; do
  case $1 in
    -h|--help) sed -n 2,13p "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --keep-going) keep_going=1; shift; continue ;;
    --kernel|--hours|--cases|--budget|--findings|--tests) ;;
    *) echo "fuzz-campaign: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  [ $# -ge 2 ] || { echo "fuzz-campaign: $1 needs a value (see --help)" >&2; exit 2; }
  case $1 in
    --kernel) kernel=$2; shift 2 ;;
    --hours) hours=$2; shift 2 ;;
    --cases) cases=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --findings) findings=$2; shift 2 ;;
    --tests) tests=$2; shift 2 ;;
  esac
done
usage() { echo "fuzz-campaign: $1 (see --help)" >&2; exit 2; }
[[ $hours =~ ^([0-9]+(\.[0-9]*)?|\.[0-9]+)$ ]] || usage "--hours $hours is not a number of hours"
awk "BEGIN{exit !($hours > 0)}" || usage "--hours $hours: give more than 0"
[[ $cases =~ ^[1-9][0-9]*$ ]] || usage "--cases $cases is not a positive whole number"
case $budget in small|medium|large) ;; *) usage "--budget $budget: expected small, medium or large" ;; esac
case $kernel in
  */*|*.so) [ -f "$kernel" ] || usage "--kernel $kernel: no such file" ;;
esac
if [ -n "$tests" ]; then
  [ -f "$tests" ] && [ -x "$tests" ] || usage "--tests $tests: not an executable file"
else
  for t in "$root/build/tests/gpu/vattn_tests_gpu" "$root/.device/build/tests/gpu/vattn_tests_gpu"; do
    [ -x "$t" ] && tests=$t && break
  done
  [ -n "$tests" ] || usage "no vattn_tests_gpu found under build/ or .device/build/ (build first, or --tests PATH)"
fi
# The tests exit 77 when no CUDA device is visible: that is "nothing ran", not a failure.
"$tests" --list-test-names-only >/dev/null 2>&1
if [ $? = 77 ] || ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "fuzz-campaign: no CUDA device visible (nvidia-smi -L); nothing was run" >&2
  exit 2
fi
spec="[property]~[planted]"
mkdir -p "$findings"
log="$findings/campaign-$(date -u +%Y%m%dT%H%M%SZ).log"
end=$(( $(date +%s) + $(awk "BEGIN{print int($hours*3600)}") ))
export VATTN_KERNEL="$kernel" VATTN_FUZZ_BUDGET="$budget" VATTN_FUZZ_CASES="$cases" VATTN_FINDINGS_DIR="$findings"
round=0 failed="" quick_failures=0
round_out=$(mktemp /tmp/vattn-fuzz-round.XXXXXX)
trap 'rm -f "$round_out"' EXIT
summary() {  # the closing line; exit 1 when any round failed
  if [ -n "$failed" ]; then
    echo "campaign: $round round$([ $round = 1 ] || echo s), $(wc -w <<<"$failed") failed (round$failed); details: $log" |
      tee -a "$log"
    exit 1
  fi
  echo "campaign: $round round$([ $round = 1 ] || echo s), no failure" | tee -a "$log"
  exit 0
}
echo "campaign: kernel=$kernel budget=$budget cases/property/round=$cases until $(date -u -d @$end)" \
     "$([ $keep_going = 1 ] && echo "(keep going after a failure) ")log=$log" | tee "$log"
while [ $round = 0 ] || [ "$(date +%s)" -lt "$end" ]; do
  round=$((round + 1))
  seed=$(( (RANDOM << 16) ^ RANDOM ^ round ))
  start=$(date +%s)
  # -w NoTests: a spec that matches no test fails the round instead of passing it
  # Into the log as it is printed (a campaign killed mid-round keeps what the round reported).
  RC_PARAMS="seed=$seed" "$tests" "$spec" -w NoTests 2>&1 | tee -a "$log" >"$round_out"
  rc=${PIPESTATUS[0]}
  if [ $rc = 0 ]; then
    echo "round $round seed=$seed: all properties held ($(( $(date +%s) - start )) s)" | tee -a "$log"
    quick_failures=0
    continue
  elif [ $rc = 77 ]; then
    echo "round $round seed=$seed: the tests were skipped (no CUDA device?); nothing was run. Log: $log" | tee -a "$log"
    [ -z "$failed" ] || summary  # earlier rounds failed: that is the result (exit 1)
    exit 2
  fi
  # A revision that does not load fails every test the same way: that is a usage error, not a finding.
  if bad_rev=$(grep -m1 -o "field '--kernel': .*" "$round_out"); then
    echo "fuzz-campaign: --kernel $kernel: ${bad_rev#field \'--kernel\': } (nothing was fuzzed; log: $log)" | tee -a "$log" >&2
    exit 2
  fi
  if [ $rc -gt 128 ]; then
    what="THE TESTS BINARY DIED (signal $((rc - 128)); the end of its output is in the log)"
  else
    what="A PROPERTY FAILED (exit $rc)"
  fi
  {
    echo "round $round seed=$seed: $what. Re-run: VATTN_KERNEL=$kernel VATTN_FUZZ_BUDGET=$budget" \
         "VATTN_FUZZ_CASES=$cases RC_PARAMS=\"seed=$seed\" $tests \"$spec\" -w NoTests; repros and details: $findings, $log"
    # The falsified properties and their shrunk cases, as the round printed them.
    grep -E "^property '.*' falsified|^  recipe: " "$round_out" | awk '!seen[$0]++' | head -12 | sed 's/^ */    /'
  } | tee -a "$log"
  failed="$failed $round"
  [ $keep_going = 1 ] || exit 1
  # A revision that fails at once every round would only fill the log: three such rounds in a row end it.
  if [ $(( $(date +%s) - start )) -lt 10 ]; then quick_failures=$((quick_failures + 1)); else quick_failures=0; fi
  if [ $quick_failures -ge 3 ]; then
    echo "campaign: the last 3 rounds each failed within 10 s; stopping early" | tee -a "$log"
    summary
  fi
done
summary
