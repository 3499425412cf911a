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
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "NOTE: no CUDA device here: the gpu-labelled tests will be reported as Skipped (they did NOT run)."
  echo "      On a GPU machine: ctest -L gpu; from this machine: scripts/device/stage.sh, then scripts/device/run.sh there."
fi
# ctest also writes JUnit XML for CI systems (kept in the build folder).
exec ctest --output-on-failure --output-junit "$VATTN_BUILD/ctest-junit.xml" -j "$(nproc)" "$@"
# SPDX-License-Identifier: Apache-2.0
