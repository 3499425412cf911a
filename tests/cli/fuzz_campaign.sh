#!/usr/bin/env bash
# fuzz_campaign.sh SCRIPT
# scripts/fuzz-campaign.sh without a GPU: a stand-in tests binary and a stand-in nvidia-smi
# check the option checks (exit 2 before anything runs), that a short campaign runs exactly one
# round and passes its settings to the tests, that a failing or skipped round gives exit 1 or 2
# with the line that re-runs it and the falsified property, and that --keep-going runs on after
# a failure and reports it at the end.
set -u
script=$1
tmp=$(mktemp -d /tmp/vattn-fuzz-campaign.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin"
printf '#!/bin/sh\n[ "$1" = -L ] && echo "GPU 0: stand-in"\nexit 0\n' >"$tmp/bin/nvidia-smi"
cat >"$tmp/tests" <<'FAKE'
#!/bin/sh
# stand-in for vattn_tests_gpu: FAKE_LIST_RC for the device probe, FAKE_RC for a round
# (FAKE_FIRST_ONLY=1: only the first round fails; FAKE_SLEEP: seconds per round;
# FAKE_BAD_REVISION=1: the revision does not load, as load_revision words it)
if [ "$1" = --list-test-names-only ]; then exit "${FAKE_LIST_RC:-0}"; fi
echo "kernel=$VATTN_KERNEL cases=$VATTN_FUZZ_CASES budget=$VATTN_FUZZ_BUDGET rc=$RC_PARAMS spec=$1 $2 $3" >>"$FAKE_CALLS"
sleep "${FAKE_SLEEP:-0}"
rc=${FAKE_RC:-0}
[ "${FAKE_FIRST_ONLY:-0}" = 1 ] && [ "$(wc -l <"$FAKE_CALLS")" -gt 1 ] && rc=0
if [ "${FAKE_BAD_REVISION:-0}" = 1 ]; then
  echo "error: field '--kernel': unknown revision '$VATTN_KERNEL' (built in: split-v1; or give a path to a revision library .so)"
elif [ "$rc" = 1 ]; then
  echo "property 'stand-in property' falsified after 3 successful case(s)"
  echo "  recipe: B=1 H=1 P=[0] T=[1] tree=chain seed=1"
fi
exit "$rc"
FAKE
chmod +x "$tmp/bin/nvidia-smi" "$tmp/tests"
export PATH="$tmp/bin:$PATH" FAKE_CALLS="$tmp/calls"
ok=1
expect() {  # expect CODE TEXT ROUNDS -- args...: exit code, a line of output, rounds the tests ran
  local code=$1 text=$2 rounds=$3
  shift 4
  : >"$tmp/calls"
  bash "$script" --findings "$tmp/findings" "$@" >"$tmp/out" 2>&1
  local got=$? ran
  ran=$(wc -l <"$tmp/calls")
  if [ $got -ne "$code" ] || ! grep -qF -- "$text" "$tmp/out" || [ "$ran" -ne "$rounds" ]; then
    ok=0; echo "FAIL fuzz-campaign $*: exit $got (expected $code), $ran round(s) (expected $rounds), output:"
    cat "$tmp/out"
  else
    echo "ok: fuzz-campaign $*: exit $got, $ran round(s): $(grep -F -- "$text" "$tmp/out" | head -1)"
  fi
}
t=(--tests "$tmp/tests")
expect 2 "--hours 1.2.3 is not a number" 0 -- "${t[@]}" --hours 1.2.3
expect 2 "--hours 0: give more than 0" 0 -- "${t[@]}" --hours 0
expect 2 "--hours . is not a number" 0 -- "${t[@]}" --hours .
expect 2 "--cases abc is not a positive" 0 -- "${t[@]}" --cases abc
expect 2 "--budget huge: expected small" 0 -- "${t[@]}" --budget huge
expect 2 "--tests $tmp/none: not an executable" 0 -- --tests "$tmp/none"
expect 2 "unknown option --bogus" 0 -- "${t[@]}" --bogus
expect 2 "--kernel $tmp/no.so: no such file" 0 -- "${t[@]}" --kernel "$tmp/no.so"

expect 0 "campaign: 1 round, no failure" 1 -- "${t[@]}" --hours 0.0001 --cases 7 --budget medium --kernel split-v1
if ! grep -q "kernel=split-v1 cases=7 budget=medium rc=seed=[0-9]* spec=\[property\]~\[planted\] -w NoTests" "$tmp/calls"; then
  ok=0; echo "FAIL: the round did not get the campaign's settings:"; cat "$tmp/calls"
fi
FAKE_RC=1 expect 1 "A PROPERTY FAILED (exit 1). Re-run: VATTN_KERNEL=split-v1" 1 -- "${t[@]}" --hours 0.0001
FAKE_RC=1 expect 1 "    property 'stand-in property' falsified after 3" 1 -- "${t[@]}" --hours 0.0001
FAKE_RC=1 expect 1 "    recipe: B=1 H=1 P=[0] T=[1] tree=chain seed=1" 1 -- "${t[@]}" --hours 0.0001
FAKE_RC=139 expect 1 "THE TESTS BINARY DIED (signal 11" 1 -- "${t[@]}" --hours 0.0001
FAKE_RC=1 FAKE_BAD_REVISION=1 expect 2 "fuzz-campaign: --kernel split-v2: unknown revision 'split-v2'" 1 -- "${t[@]}" \
  --hours 0.0001 --kernel split-v2
# --keep-going: round 1 fails, the campaign goes on until the time is up (2 s, a second per
# round: at least two rounds), then says which round failed and exits 1.
: >"$tmp/calls"
FAKE_RC=1 FAKE_FIRST_ONLY=1 FAKE_SLEEP=1 bash "$script" --findings "$tmp/findings" "${t[@]}" --hours 0.0006 --keep-going \
  >"$tmp/out" 2>&1
got=$?
ran=$(wc -l <"$tmp/calls")
if [ $got -ne 1 ] || [ "$ran" -lt 2 ] || ! grep -qE "^campaign: $ran rounds, 1 failed \(round 1\)" "$tmp/out" ||
   ! grep -q "^round 2 seed=[0-9]*: all properties held" "$tmp/out"; then
  ok=0; echo "FAIL fuzz-campaign --keep-going: exit $got (expected 1), $ran round(s) (expected >= 2), output:"; cat "$tmp/out"
else
  echo "ok: fuzz-campaign --keep-going: exit $got, $ran rounds: $(grep '^campaign: .*failed' "$tmp/out")"
fi
FAKE_RC=77 expect 2 "the tests were skipped" 1 -- "${t[@]}" --hours 0.0001
FAKE_LIST_RC=77 expect 2 "no CUDA device visible" 0 -- "${t[@]}" --hours 0.0001
# --keep-going with a revision that fails at once: three quick failures in a row end the campaign.
: >"$tmp/calls"
FAKE_RC=1 bash "$script" --findings "$tmp/findings" "${t[@]}" --hours 1 --keep-going >"$tmp/out" 2>&1
got=$?
ran=$(wc -l <"$tmp/calls")
if [ $got -ne 1 ] || [ "$ran" -ne 3 ] || ! grep -q "^campaign: 3 rounds, 3 failed (round 1 2 3)" "$tmp/out"; then
  ok=0; echo "FAIL fuzz-campaign --keep-going, failing at once: exit $got (expected 1), $ran round(s) (expected 3):"; cat "$tmp/out"
else
  echo "ok: fuzz-campaign --keep-going stops after 3 quick failures: $(grep '^campaign: 3' "$tmp/out")"
fi
# --keep-going, round 1 failed, then the device vanished (77): the failure is the result (exit 1).
: >"$tmp/calls"
cat >"$tmp/tests2" <<'FAKE'
#!/bin/sh
if [ "$1" = --list-test-names-only ]; then exit 0; fi
echo call >>"$FAKE_CALLS"
[ "$(wc -l <"$FAKE_CALLS")" -gt 1 ] && exit 77
echo "property 'stand-in property' falsified after 3 successful case(s)"
exit 1
FAKE
chmod +x "$tmp/tests2"
bash "$script" --findings "$tmp/findings" --tests "$tmp/tests2" --hours 1 --keep-going >"$tmp/out" 2>&1
got=$?
if [ $got -ne 1 ] || ! grep -q "^campaign: 2 rounds, 1 failed (round 1)" "$tmp/out"; then
  ok=0; echo "FAIL fuzz-campaign --keep-going, then no device: exit $got (expected 1):"; cat "$tmp/out"
else
  echo "ok: fuzz-campaign --keep-going then no device: exit 1, $(grep '^campaign: 2' "$tmp/out")"
fi
# The log gets a round's output while the round runs: a campaign killed mid-round keeps it.
cat >"$tmp/tests3" <<'FAKE'
#!/bin/sh
if [ "$1" = --list-test-names-only ]; then exit 0; fi
echo "property 'early report' falsified after 1 successful case(s)"
sleep 30
FAKE
chmod +x "$tmp/tests3"
bash "$script" --findings "$tmp/killed" --tests "$tmp/tests3" --hours 1 >"$tmp/out" 2>&1 &
pid=$!
sleep 2
kill -TERM $pid 2>/dev/null; pkill -TERM -f "$tmp/tests3" 2>/dev/null; wait $pid 2>/dev/null
if ! grep -q "property 'early report' falsified" "$tmp"/killed/campaign-*.log; then
  ok=0; echo "FAIL fuzz-campaign killed mid-round: the round's report is not in the log"; cat "$tmp"/killed/campaign-*.log
else
  echo "ok: fuzz-campaign killed mid-round: the round's report is in the log"
fi
[ $ok -eq 1 ]
