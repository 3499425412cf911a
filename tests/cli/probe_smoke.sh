#!/usr/bin/env bash
# probe_smoke.sh EXPECT PROBE: vattn_ceiling_probe measures every variant on a short run, one
# block per SM (no "NOT VALID" row), without writing past a buffer, and exits 0.
# No GPU visible: exit 77 (ctest: Skipped), or 1 when VATTN_REQUIRE_GPU=1 says there should be one.
set -u
expect=$1 probe=$2
if ! { command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; }; then
  echo "SKIPPED: no CUDA device visible"
  [ "${VATTN_REQUIRE_GPU:-0}" = 1 ] && exit 1
  exit 77
fi
bash "$expect" 0 --out "copy+math" --out "copy-x4" --no-out "NOT VALID" --no-out "not run" -- \
  "$probe" --keys 64 --reps 1
# SPDX-License-Identifier: Apache-2.0
