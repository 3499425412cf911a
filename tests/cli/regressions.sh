#!/usr/bin/env bash
# regressions.sh VATTN cpu|gpu CORPUS_DIR
# Replays the regression corpus (fixtures/regressions/: fuzz findings promoted with `vattn
# promote`). cpu: every file validates and its stored float64 oracle output is recomputed and
# compared (no GPU needed). gpu: the same with the kernel (`--kernel split-v2`) held to it; with
# no CUDA device it exits 77 (ctest: Skipped), unless VATTN_REQUIRE_GPU=1 says there must be one.
# An empty corpus fails: a regression test that replays nothing cannot fail.
set -u
vattn=$1 mode=$2 corpus=$3
shopt -s nullglob
files=("$corpus"/*.h5)
if [ ${#files[@]} -eq 0 ]; then
  echo "FAIL: no case files in $corpus (vattn promote adds them)"
  exit 1
fi
args=()
if [ "$mode" = gpu ]; then
  probe=$("$vattn" replay --kernel split-v2 "${files[0]}" 2>&1)
  if [ $? -eq 2 ] && grep -q "no CUDA device\|built without CUDA" <<<"$probe"; then
    # The reason as it is: no device here, or a vattn that cannot run a kernel anywhere.
    why="no CUDA device"
    grep -q "built without CUDA" <<<"$probe" && why="this vattn was built without CUDA (VATTN_CUDA=OFF)"
    if [ "${VATTN_REQUIRE_GPU:-0}" = 1 ]; then
      echo "FAIL: $why, and VATTN_REQUIRE_GPU=1 says this machine should run the kernel"
      exit 1
    fi
    echo "SKIPPED: $why (the corpus is replayed with the kernel on a GPU machine)"
    exit 77
  fi
  args=(--kernel split-v2)
fi
out=$("$vattn" replay "${args[@]}" "${files[@]}" 2>&1)
code=$?
echo "$out"
# A promoted file holds one case: its stored oracle output is one result, the kernel another.
per_file=1
[ "$mode" = gpu ] && per_file=2
want="$(( ${#files[@]} * per_file )) passed, 0 failed"
if [ $code -ne 0 ] || ! grep -qF "replay: $want" <<<"$out"; then
  echo "FAIL: vattn replay ${args[*]} of the corpus: exit $code, expected 0 and '$want'"
  exit 1
fi
if [ "$mode" = gpu ]; then
  ran=$(grep -cE " kernel:split-v2 +PASS " <<<"$out")
  if [ "$ran" -ne ${#files[@]} ]; then
    echo "FAIL: the kernel passed $ran case(s), expected one per file (${#files[@]})"
    exit 1
  fi
fi
echo "ok: ${#files[@]} regression case(s) replayed ($mode)"
# SPDX-License-Identifier: Apache-2.0
