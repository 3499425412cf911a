#!/usr/bin/env bash
# usage: scripts/test.sh [--all] [--no-setup] [CTEST_ARGS...]
# Sets up (scripts/install-deps.sh: what is missing), builds (with CUDA where the toolkit is, else the
# CPU-only build; scripts/env.sh) and runs the tests through ctest, all but those labelled slow.
# It ends with a closing summary: passed, failed, skipped with each test's reason (the gpu tests'
# last, one by one), and what was not run; its last line is the closing line. Exit status: ctest's.
#   --all        the slow tests too (what CI runs: .ci/run)
#   --no-setup   no set-up and no build: run the tests of the existing build ($VATTN_BUILD, default build/)
#   CTEST_ARGS   go to ctest (e.g. -L cpu, -R oracle)
# VATTN_REQUIRE_GPU=1: a gpu test that finds no GPU fails instead of being skipped.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
all=0 setup=1
while [ $# -gt 0 ]; do
  case $1 in
    --all) all=1 ;;
    --no-setup) setup=0 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
    *) break ;;  # the rest is ctest's
  esac
  shift
done
[ $setup = 0 ] || bash "$here/install-deps.sh"
# shellcheck source=scripts/env.sh
source "$here/env.sh"
[ $setup = 0 ] || vattn_build
[ -f "$VATTN_BUILD/CTestTestfile.cmake" ] ||
  { echo "test.sh: no configured build in $VATTN_BUILD (run scripts/test.sh without --no-setup)" >&2; exit 2; }
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "NOTE: no CUDA device here: the gpu-labelled tests will be reported as Skipped (they did NOT run)."
  echo "      On a GPU machine: ctest -L gpu; from this machine: scripts/device/stage.sh, then scripts/device/run.sh there."
fi
# ctest also writes JUnit XML (kept in the build folder): CI systems read it, and so does the summary.
junit="$VATTN_BUILD/ctest-junit.xml"
selection="$VATTN_BUILD/ctest-selection.json"
rm -f "$junit"
filter=() deselected=()
if [ $all = 0 ]; then
  filter=(-LE slow)
  # The tests the caller's own arguments select: those of them labelled slow are the ones left out.
  ctest --test-dir "$VATTN_BUILD" --show-only=json-v1 "$@" > "$selection"
  deselected=(--selection "$selection" --deselected-label slow)
fi
t0=$SECONDS
rc=0
ctest --test-dir "$VATTN_BUILD" --output-on-failure --no-tests=error --output-junit "$junit" -j "$(nproc)" \
  "${filter[@]}" "$@" || rc=$?
if [ ! -f "$junit" ]; then
  echo "test.sh: ctest exited $rc and wrote no results ($junit)" >&2
  exit $((rc == 0 ? 2 : rc))
fi
python3 "$here/ctest_summary.py" --build "$VATTN_BUILD" --junit "$junit" "${deselected[@]}" \
  --hint "scripts/test.sh --all runs them" --seconds $((SECONDS - t0)) || rc=$((rc == 0 ? 2 : rc))
exit "$rc"
# SPDX-License-Identifier: Apache-2.0
