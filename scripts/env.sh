# shellcheck shell=bash
# Sourced by the scripts: decides between the CUDA and the CPU-only build, puts the project's Python
# environment first on PATH, and names the build folder.
#
# The CUDA toolkit is nvcc on PATH, else $CUDA_HOME/bin/nvcc (CUDA_HOME defaults to /usr/local/cuda).
# VATTN_CUDA chooses: AUTO (default: CUDA when the toolkit is found, else CPU-only), ON (the toolkit is
# required) or OFF (CPU-only even where the toolkit is). After sourcing, VATTN_CUDA is ON or OFF,
# VATTN_NVCC names the compiler (empty when OFF) and VATTN_CUDA_WHY says how the choice was made.
VATTN_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VATTN_BUILD=${VATTN_BUILD:-$VATTN_ROOT/build}
# The project's virtual environment (scripts/install-deps.sh makes it): every Python module the suite
# needs is importable from it, and pip installs go there, never into the system interpreter.
VATTN_VENV=${VATTN_VENV:-$VATTN_ROOT/.venv}
export VATTN_ROOT VATTN_BUILD VATTN_VENV

vattn_find_nvcc() {
  local cuda_home=${CUDA_HOME:-/usr/local/cuda}
  if command -v nvcc >/dev/null 2>&1; then
    command -v nvcc
  elif [ -x "$cuda_home/bin/nvcc" ]; then
    echo "$cuda_home/bin/nvcc"
  fi
}

VATTN_NVCC=$(vattn_find_nvcc)
case ${VATTN_CUDA:-AUTO} in
  OFF | off | 0)
    VATTN_CUDA=OFF VATTN_NVCC=''
    VATTN_CUDA_WHY="VATTN_CUDA=OFF asks for the CPU-only build" ;;
  ON | on | 1)
    VATTN_CUDA=ON
    VATTN_CUDA_WHY="VATTN_CUDA=ON requires the CUDA toolkit: ${VATTN_NVCC:-nvcc not found}" ;;
  *)
    if [ -n "$VATTN_NVCC" ]; then
      VATTN_CUDA=ON VATTN_CUDA_WHY="the CUDA toolkit is here ($VATTN_NVCC)"
    else
      VATTN_CUDA=OFF
      VATTN_CUDA_WHY="no CUDA toolkit found (no nvcc on PATH or at ${CUDA_HOME:-/usr/local/cuda}/bin/nvcc)"
    fi ;;
esac
export VATTN_CUDA VATTN_NVCC VATTN_CUDA_WHY
# nvcc on PATH for CMake and the tests that call it (the mutation pipeline, the SASS check).
if [ -n "$VATTN_NVCC" ] && ! command -v nvcc >/dev/null 2>&1; then PATH=$(dirname "$VATTN_NVCC"):$PATH; fi
# As `source .venv/bin/activate` would: python3 and the tools pip installed come from the environment.
# `vattn report` runs $VATTN_PYTHON.
if [ -x "$VATTN_VENV/bin/python3" ]; then
  PATH=$VATTN_VENV/bin:$PATH
  export VATTN_PYTHON=$VATTN_VENV/bin/python3
fi
export PATH

# vattn_build [CMAKE_ARGS...]: configure and build $VATTN_BUILD, with CUDA or CPU-only as decided above
# and the tests on the project's Python environment. VATTN_CMAKE_ARGS adds options from the environment
# (a space-separated list; CI passes -DVATTN_WERROR=ON through it); they come after these and win.
# shellcheck disable=SC2120  # callers may pass no arguments
vattn_build() {
  local extra=() args=(-DVATTN_CUDA="$VATTN_CUDA")
  read -r -a extra <<<"${VATTN_CMAKE_ARGS:-}"
  [ -x "$VATTN_VENV/bin/python3" ] && args+=(-DPython3_EXECUTABLE="$VATTN_VENV/bin/python3")
  if [ "$VATTN_CUDA" = OFF ]; then
    echo "vattn: CPU-only build in $VATTN_BUILD: $VATTN_CUDA_WHY (the kernel, the GPU oracle and the GPU tests are left out)"
  else
    echo "vattn: CUDA build in $VATTN_BUILD: $VATTN_CUDA_WHY"
  fi
  cmake -S "$VATTN_ROOT" -B "$VATTN_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release "${args[@]}" "${extra[@]}" "$@" >/dev/null
  cmake --build "$VATTN_BUILD" -j "$(nproc)"
}
# SPDX-License-Identifier: Apache-2.0
