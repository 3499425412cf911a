# shellcheck shell=bash
# Sourced by the scripts: puts nvcc on PATH and names the build folder.
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
VATTN_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VATTN_BUILD=${VATTN_BUILD:-$VATTN_ROOT/build}
export VATTN_ROOT VATTN_BUILD
# vattn_build [CMAKE_ARGS...]: configure and build $VATTN_BUILD. VATTN_CMAKE_ARGS adds options from the
# environment (a space-separated list; CI passes -DVATTN_WERROR=ON through it).
# shellcheck disable=SC2120  # callers may pass no arguments
vattn_build() {
  local extra=()
  read -r -a extra <<<"${VATTN_CMAKE_ARGS:-}"
  cmake -S "$VATTN_ROOT" -B "$VATTN_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release "${extra[@]}" "$@" >/dev/null
  cmake --build "$VATTN_BUILD" -j "$(nproc)"
}
# SPDX-License-Identifier: Apache-2.0
