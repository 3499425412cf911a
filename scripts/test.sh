#!/usr/bin/env bash
# Sets up (installs what is missing), builds, and runs every test through ctest.
# GPU tests (label gpu) run when a CUDA device is visible; otherwise ctest lists them as
# Skipped and this script says so. Extra arguments go to ctest (e.g. -L cpu, -R oracle).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bash "$here/install-deps.sh"
source "$here/env.sh"
vattn_build
cd "$VATTN_BUILD"
set +e
ctest --output-on-failure -j "$(nproc)" "$@" 2>&1 | tee ctest.log
rc=${PIPESTATUS[0]}
set -e
if grep -q "Skipped" ctest.log; then
  echo "NOTE: $(grep -c '(Skipped)' ctest.log) gpu-labelled tests did NOT run (no CUDA device here). On a GPU machine:"
  echo "      ctest -L gpu, or from this machine: bash scripts/device/stage.sh, then scripts/device/run.sh there."
fi
exit $rc
