#!/usr/bin/env bash
# usage: scripts/install-deps.sh [--with-optional] [--dry-run]
# Installs what vattn needs on a Debian 12 machine (as root), quickly when all is there:
#   - Debian packages: compilers, CMake, Ninja, pkg-config, Catch2 v2, RapidCheck, Eigen, HDF5,
#     nlohmann-json, CLI11, Nettle (SHA-256); python3-venv with h5py, numpy, matplotlib (the Python checks, the
#     morning report); clang-format and shellcheck (scripts/lint.sh);
#   - the project's Python environment .venv/ (seeing Debian's python3 modules; every pip install
#     goes there, never into the system interpreter): scripts/requirements.txt, and ml_dtypes
#     (optional: vattn.write takes ml_dtypes.bfloat16 arrays; py_write_dtypes skips that part without it);
#   - ruff, pinned, in .venv-lint/ (scripts/lint.sh);
#   - with the CUDA toolkit (nvcc on PATH or at $CUDA_HOME/bin, default /usr/local/cuda): cuobjdump
#     and nvdisasm, pinned, in .venv-sass/ (kernels/sass/fingerprint.sh). Without it the set-up is
#     for the CPU-only build (replay, gen, info, fuzz host targets, reports; no kernel, no GPU
#     tests), and the last line says so. VATTN_CUDA=OFF asks for that even where the toolkit is.
# Options:
#   --with-optional  also the heavy dependencies of three tests: Chromium (report_chromium), Slurm
#                    and munge (slurm_single_node), universalmutator in .venv (mutation_pipeline).
#                    Without them those tests are skipped, each saying why. CI installs them.
#   --dry-run        print what would be installed and which build the set-up is for; change nothing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
with_optional=0 dry_run=0
for a in "$@"; do
  case $a in
    --with-optional) with_optional=1 ;;
    --dry-run) dry_run=1 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install-deps: unknown argument '$a' (see --help)" >&2; exit 2 ;;
  esac
done
# shellcheck source=scripts/env.sh
source "$here/env.sh"  # VATTN_CUDA (ON/OFF) and why, VATTN_VENV
root=$VATTN_ROOT

# --- Debian packages ---------------------------------------------------------------------------
pkgs=(cmake ninja-build g++ pkg-config catch2 librapidcheck-dev libeigen3-dev libhdf5-dev nlohmann-json3-dev libcli11-dev nettle-dev
      python3 python3-venv python3-h5py python3-numpy python3-matplotlib  # .venv sees these
      clang-format shellcheck)  # scripts/lint.sh
optional_pkgs=(chromium  # report_chromium: the morning report in a headless browser
               slurm-wlm munge)  # slurm_single_node: a one-node Slurm cluster
[ $with_optional = 1 ] && pkgs+=("${optional_pkgs[@]}")
missing=()
if command -v dpkg >/dev/null 2>&1; then
  for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
else
  echo "install-deps: no dpkg: not a Debian system; install the equivalents of: ${pkgs[*]}" >&2
  [ $dry_run = 1 ] || exit 1
fi
if [ ${#missing[@]} -gt 0 ]; then
  if [ $dry_run = 1 ]; then
    echo "install-deps: would install (apt-get): ${missing[*]}"
  else
    echo "install-deps: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi

# --- Python: the project's virtual environment ---------------------------------------------------
# Made from Debian's python3 (when there) with its site packages visible, so the apt modules above
# serve without a download; venv_pip installs into it. Scripts and ctest run .venv's python3.
base_python=/usr/bin/python3
[ -x "$base_python" ] || base_python=$(command -v python3 || true)
venv_pip() { "$VATTN_VENV/bin/python3" -m pip "$@"; }
# The lines of scripts/requirements.txt that .venv (before it exists: its base) does not meet. A bare
# name is met by a module importable under that name (pip does not know Debian's python3-h5py as
# h5py and would download it again); a line with a version or an extra is left to pip to judge.
unmet_requirements() {
  local py=$VATTN_VENV/bin/python3
  [ -x "$py" ] || py=$base_python
  "$py" -c 'import importlib.util as u, re, sys
for line in open(sys.argv[1], encoding="utf-8"):
    r = line.split("#", 1)[0].strip()
    if r and not (re.fullmatch(r"[A-Za-z0-9_.-]+", r) and u.find_spec(r.replace("-", "_"))):
        print(r)' "$here/requirements.txt"
}
mapfile -t unmet < <(unmet_requirements)
if [ $dry_run = 1 ]; then
  [ -x "$VATTN_VENV/bin/python3" ] || echo "install-deps: would create the Python environment $VATTN_VENV (from $base_python)"
  [ ${#unmet[@]} -eq 0 ] || echo "install-deps: would pip-install into $VATTN_VENV: ${unmet[*]}"
  [ $with_optional = 0 ] || [ -x "$VATTN_VENV/bin/mutate" ] || echo "install-deps: would pip-install universalmutator into $VATTN_VENV"
else
  if [ ! -x "$VATTN_VENV/bin/python3" ]; then
    [ -n "$base_python" ] || { echo "install-deps: no python3 to make $VATTN_VENV from" >&2; exit 1; }
    echo "install-deps: creating the Python environment $VATTN_VENV (from $base_python)"
    "$base_python" -m venv --system-site-packages "$VATTN_VENV"
  fi
  if [ ${#unmet[@]} -gt 0 ]; then
    echo "install-deps: installing into $VATTN_VENV: ${unmet[*]}"
    venv_pip install -q "${unmet[@]}" || { echo "install-deps: could not install ${unmet[*]} into $VATTN_VENV" >&2; exit 1; }
  fi
  # ml_dtypes: not packaged by Debian; numpy pinned to the one .venv sees, so that pip never swaps
  # the numpy that Debian's h5py was built against. Optional: a failure only costs its round trips.
  if ! "$VATTN_VENV/bin/python3" -c 'import ml_dtypes' 2>/dev/null; then
    numpy_pin="numpy==$("$VATTN_VENV/bin/python3" -c 'import numpy; print(numpy.__version__)')"
    echo "install-deps: installing ml_dtypes into $VATTN_VENV ($numpy_pin kept)"
    venv_pip install -q ml_dtypes "$numpy_pin" ||
      echo "install-deps: could not install ml_dtypes; py_write_dtypes will skip its ml_dtypes round trips" >&2
  fi
  # universalmutator (scripts/mutation/): not packaged by Debian.
  if [ $with_optional = 1 ] && [ ! -x "$VATTN_VENV/bin/mutate" ]; then
    echo "install-deps: installing universalmutator into $VATTN_VENV"
    venv_pip install -q universalmutator ||
      { echo "install-deps: could not install universalmutator into $VATTN_VENV" >&2; exit 1; }
  fi
fi

# --- ruff for scripts/lint.sh, pinned, in its own environment --------------------------------------
ruff_want=$(grep -E '^ruff==' "$here/lint-requirements.txt")
if [ "$("$root/.venv-lint/bin/ruff" --version 2>/dev/null | sed 's/ /==/')" != "$ruff_want" ]; then
  if [ $dry_run = 1 ]; then
    echo "install-deps: would install $ruff_want into .venv-lint/"
  else
    echo "install-deps: installing $ruff_want into .venv-lint/"
    { [ -x "$root/.venv-lint/bin/pip" ] || "${base_python:-python3}" -m venv "$root/.venv-lint"; } &&
      "$root/.venv-lint/bin/pip" install -q -r "$here/lint-requirements.txt" ||
      { echo "install-deps: could not install $ruff_want into .venv-lint/" >&2; exit 1; }
  fi
fi

# --- the CUDA toolkit, or the CPU-only build ------------------------------------------------------
if [ "$VATTN_CUDA" = ON ] && [ -z "$VATTN_NVCC" ]; then
  echo "install-deps: $VATTN_CUDA_WHY; install CUDA 12.8+ (README: the CUDA toolkit)" >&2
  exit 1
fi
if [ "$VATTN_CUDA" = ON ]; then
  # cuobjdump and nvdisasm for kernels/sass/fingerprint.sh (the SASS check CI runs), pinned, in .venv-sass/.
  sass_reqs="$root/kernels/sass/requirements.txt"
  if ! cmp -s "$sass_reqs" "$root/.venv-sass/requirements.txt" 2>/dev/null; then
    if [ $dry_run = 1 ]; then
      echo "install-deps: would install cuobjdump and nvdisasm into .venv-sass/"
    else
      echo "install-deps: installing cuobjdump and nvdisasm into .venv-sass/"
      { [ -x "$root/.venv-sass/bin/pip" ] || "${base_python:-python3}" -m venv "$root/.venv-sass"; } &&
        "$root/.venv-sass/bin/pip" install -q -r "$sass_reqs" && cp "$sass_reqs" "$root/.venv-sass/requirements.txt" ||
        { echo "install-deps: could not install $sass_reqs into .venv-sass/" >&2; exit 1; }
    fi
  fi
  build="CUDA build: $VATTN_CUDA_WHY"
else
  build="CPU-only build: $VATTN_CUDA_WHY; replay, gen, info, fuzz host targets and reports work, the kernel and the GPU tests are not built (README: the CUDA toolkit)"
fi
# What of the optional set is not here (a dry run has installed nothing).
absent=()
for p in "${optional_pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || absent+=("$p"); done
[ -x "$VATTN_VENV/bin/mutate" ] || command -v mutate >/dev/null 2>&1 || absent+=(universalmutator)
left_out=""
[ ${#absent[@]} -eq 0 ] || left_out="; not installed: ${absent[*]} (--with-optional; their tests are skipped, saying why)"
if [ $dry_run = 1 ]; then
  echo "install-deps: dry run, nothing changed: set-up for the $build$left_out"
else
  echo "install-deps: ok: set up for the $build$left_out"
fi
# SPDX-License-Identifier: Apache-2.0
