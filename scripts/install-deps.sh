#!/usr/bin/env bash
# Installs what vattn needs on a fresh Debian machine (as root): compilers and CMake,
# Catch2 v2, RapidCheck, Eigen, HDF5 (C/C++), nlohmann-json, CLI11, Nettle (SHA-256), and h5py+numpy (Debian's python3-h5py,
# python3-numpy) for the independent Python checks, matplotlib and Chromium (the morning report and
# its browser test), Slurm and munge (the single-node Slurm test); for scripts/lint.sh: clang-format (14, Debian
# 12's), the shellcheck package, python3-venv and ruff (pinned, in .venv-lint/). The CUDA toolkit (nvcc) is expected at
# /usr/local/cuda. Quick when all is there.
set -euo pipefail
pkgs=(cmake ninja-build g++ catch2 librapidcheck-dev libeigen3-dev libhdf5-dev nlohmann-json3-dev libcli11-dev nettle-dev python3
      python3-h5py python3-numpy
      python3-matplotlib chromium slurm-wlm munge python3-pip  # the morning report, its browser test, the Slurm test
      clang-format shellcheck python3-venv)  # scripts/lint.sh
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# The tests and the morning report run `python3` from PATH. Where that is not Debian's (a pyenv or
# venv interpreter first on PATH), Debian's python3-h5py/-numpy/-matplotlib are invisible to it:
# the same modules come from PyPI for that interpreter instead.
pip_modules=()
python3 -c 'import h5py' 2>/dev/null || pip_modules+=(h5py)
python3 -c 'import numpy' 2>/dev/null || pip_modules+=(numpy)
python3 -c 'import matplotlib' 2>/dev/null || pip_modules+=(matplotlib)
if [ ${#pip_modules[@]} -gt 0 ]; then
  echo "install-deps: $(command -v python3) lacks ${pip_modules[*]}: installing from PyPI"
  python3 -m pip install -q "${pip_modules[@]}" 2>/dev/null ||
    python3 -m pip install -q --break-system-packages "${pip_modules[@]}" ||
    echo "install-deps: could not install ${pip_modules[*]} for $(command -v python3)" >&2
fi
if ! python3 -c 'import h5py, numpy' 2>/dev/null; then
  echo "install-deps: $(command -v python3) cannot import h5py and numpy (Debian's python3-h5py, python3-numpy, or PyPI)" >&2
  exit 1
fi
# universalmutator (the mutation pipeline, scripts/mutation/): not packaged by Debian, from PyPI.
if ! command -v mutate >/dev/null 2>&1; then
  echo "install-deps: installing universalmutator (PyPI)"
  python3 -m pip install -q universalmutator 2>/dev/null ||
    python3 -m pip install -q --break-system-packages universalmutator ||
    echo "install-deps: could not install universalmutator; the mutation pipeline test will be skipped" >&2
fi
# ruff for scripts/lint.sh, pinned, in its own virtual environment (never the system interpreter).
root=$(cd "$(dirname "$0")/.." && pwd)
ruff_want=$(grep -E '^ruff==' "$root/scripts/lint-requirements.txt")
if [ "$("$root/.venv-lint/bin/ruff" --version 2>/dev/null | sed 's/ /==/')" != "$ruff_want" ]; then
  echo "install-deps: installing $ruff_want into .venv-lint/"
  { [ -x "$root/.venv-lint/bin/pip" ] || python3 -m venv "$root/.venv-lint"; } &&
    "$root/.venv-lint/bin/pip" install -q -r "$root/scripts/lint-requirements.txt" ||
    { echo "install-deps: could not install $ruff_want into .venv-lint/" >&2; exit 1; }
fi
if ! command -v nvcc >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "install-deps: the CUDA toolkit (nvcc) is missing; install CUDA 12.8+ (sm_120a support) at /usr/local/cuda" >&2
  exit 1
fi
# cuobjdump and nvdisasm for kernels/sass/fingerprint.sh (the SASS check CI runs), pinned, in
# .venv-sass/, only where the CUDA toolkit is.
sass_reqs="$root/kernels/sass/requirements.txt"
if ! cmp -s "$sass_reqs" "$root/.venv-sass/requirements.txt" 2>/dev/null; then
  echo "install-deps: installing cuobjdump and nvdisasm into .venv-sass/"
  { [ -x "$root/.venv-sass/bin/pip" ] || python3 -m venv "$root/.venv-sass"; } &&
    "$root/.venv-sass/bin/pip" install -q -r "$sass_reqs" && cp "$sass_reqs" "$root/.venv-sass/requirements.txt" ||
    { echo "install-deps: could not install $sass_reqs into .venv-sass/" >&2; exit 1; }
fi
echo "install-deps: ok"
# SPDX-License-Identifier: Apache-2.0
