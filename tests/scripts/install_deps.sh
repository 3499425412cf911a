#!/usr/bin/env bash
# usage: install_deps.sh SOURCE_DIR
# scripts/install-deps.sh --dry-run under stand-ins: a dpkg that knows no package installed and an
# apt-get that fails if called (a dry run must not call it), and a PATH without nvcc. Checks:
#   - no CUDA toolkit: exit 0, the last line says the set-up is for the CPU-only build and why;
#   - the optional packages (chromium, slurm-wlm, munge, universalmutator) are planned only with
#     --with-optional, and are named as not installed without it;
#   - the project's Python environment is where pip installs would go, and a dry run makes nothing;
#   - a toolkit at $CUDA_HOME/bin/nvcc: the CUDA build; VATTN_CUDA=OFF: CPU-only anyway;
#     VATTN_CUDA=ON without a toolkit: exit 1; an unknown argument: exit 2.
set -uo pipefail
[ $# -eq 1 ] || { echo "usage: install_deps.sh SOURCE_DIR" >&2; exit 2; }
src=$(cd "$1" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vattn-install-deps.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

mkdir -p "$tmp/stubs" "$tmp/cuda/bin"
printf '#!/bin/sh\nexit 1\n' > "$tmp/stubs/dpkg"  # dpkg -s PKG: not installed
printf '#!/bin/sh\necho "apt-get called: $*" >&2\nexit 99\n' > "$tmp/stubs/apt-get"
printf '#!/bin/sh\necho "nvcc stand-in"\n' > "$tmp/cuda/bin/nvcc"
chmod +x "$tmp/stubs/dpkg" "$tmp/stubs/apt-get" "$tmp/cuda/bin/nvcc"
# Only the stand-ins and the base system: no nvcc, no pyenv, no earlier .venv on PATH.
base_path="$tmp/stubs:/usr/sbin:/usr/bin:/sbin:/bin"

run() {  # run NAME [ENV=VALUE...] -- ARGS...: sets rc and last; output in $tmp/NAME.out
  local name=$1 envs=()
  shift
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  rc=0
  env -i HOME="$tmp" PATH="$base_path" CUDA_HOME="$tmp/no-cuda" VATTN_VENV="$tmp/venv" "${envs[@]}" \
    bash "$src/scripts/install-deps.sh" "$@" > "$tmp/$name.out" 2>&1 || rc=$?
  last=$(tail -n 1 "$tmp/$name.out")
}
show() { sed 's/^/    | /' "$tmp/$1.out"; }
planned_apt() { grep '^install-deps: would install (apt-get):' "$tmp/$1.out"; }

run cpu -- --dry-run
[ $rc -eq 0 ] || { fail "no toolkit: exit $rc, expected 0"; show cpu; }
[[ $last == "install-deps: dry run, nothing changed: set-up for the CPU-only build: no CUDA toolkit found"* ]] ||
  { fail "no toolkit: the last line does not say CPU-only: $last"; show cpu; }
[[ $last == *"not installed: chromium slurm-wlm munge universalmutator (--with-optional;"* ]] ||
  fail "no toolkit: the last line does not name the optional dependencies left out: $last"
for p in cmake libhdf5-dev python3-venv; do
  planned_apt cpu | grep -qw -- "$p" || fail "the base set lacks $p"
done
for p in chromium slurm-wlm munge; do
  if planned_apt cpu | grep -qw -- "$p"; then fail "$p is planned without --with-optional"; fi
done
grep -qF "would create the Python environment $tmp/venv" "$tmp/cpu.out" || fail "no Python environment planned in \$VATTN_VENV"
if grep -q "would pip-install universalmutator" "$tmp/cpu.out"; then fail "universalmutator planned without --with-optional"; fi
if grep -q "apt-get called" "$tmp/cpu.out"; then fail "a dry run called apt-get"; fi
if [ -e "$tmp/venv" ]; then fail "a dry run made $tmp/venv"; fi

run optional -- --dry-run --with-optional
[ $rc -eq 0 ] || { fail "--with-optional: exit $rc"; show optional; }
for p in chromium slurm-wlm munge; do
  planned_apt optional | grep -qw -- "$p" || fail "--with-optional does not plan $p"
done
grep -qF "would pip-install universalmutator into $tmp/venv" "$tmp/optional.out" ||
  fail "--with-optional does not plan universalmutator in the environment"

run cuda CUDA_HOME="$tmp/cuda" -- --dry-run
[[ $last == *"set-up for the CUDA build: the CUDA toolkit is here ($tmp/cuda/bin/nvcc)"* ]] ||
  { fail "a toolkit at \$CUDA_HOME/bin/nvcc: $last"; show cuda; }
run off CUDA_HOME="$tmp/cuda" VATTN_CUDA=OFF -- --dry-run
[[ $last == *"CPU-only build: VATTN_CUDA=OFF asks for the CPU-only build"* ]] || fail "VATTN_CUDA=OFF: $last"
run on VATTN_CUDA=ON -- --dry-run
[ $rc -eq 1 ] || fail "VATTN_CUDA=ON without a toolkit: exit $rc, expected 1"
grep -q "VATTN_CUDA=ON requires the CUDA toolkit: nvcc not found" "$tmp/on.out" || { fail "VATTN_CUDA=ON: no reason"; show on; }
run bad -- --frob
[ $rc -eq 2 ] || fail "an unknown argument: exit $rc, expected 2"

[ $failures -eq 0 ] || { echo "install_deps: $failures check(s) failed"; exit 1; }
echo "ok: install-deps.sh chooses the CPU-only build without nvcc and installs the optional set only when asked"
# SPDX-License-Identifier: Apache-2.0
