#!/usr/bin/env bash
# The main job: sets up (installs what is missing), builds, and replays every case file in
# fixtures/ (the regression corpus fixtures/regressions/ included) and captured_tensors/: each is validated, recomputed with the oracle and every
# stored output compared under the tolerance model; the kernel runs too when a GPU is
# present. Extra arguments go to `vattn replay` (e.g. --json report.json).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bash "$here/install-deps.sh"
source "$here/env.sh"
vattn_build
shopt -s nullglob
files=("$VATTN_ROOT"/fixtures/*.h5 "$VATTN_ROOT"/fixtures/regressions/*.h5 "$VATTN_ROOT"/captured_tensors/*.h5)
[ ${#files[@]} -gt 0 ] || { echo "replay-all: no case files in fixtures/ or captured_tensors/" >&2; exit 2; }
exec "$VATTN_BUILD/vattn" replay "${files[@]}" "$@"
# SPDX-License-Identifier: Apache-2.0
