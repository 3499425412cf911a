# Sourced by the scripts: puts nvcc on PATH and names the build folder.
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
VATTN_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VATTN_BUILD=${VATTN_BUILD:-$VATTN_ROOT/build}
export VATTN_ROOT VATTN_BUILD
vattn_build() {
  cmake -S "$VATTN_ROOT" -B "$VATTN_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
  cmake --build "$VATTN_BUILD" -j "$(nproc)"
}
# SPDX-License-Identifier: Apache-2.0
