#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# SASS fingerprints of the shipped revisions' kernels: a refactor that must not change the code
# ptxas schedules proves it here. See --help.
set -u -o pipefail

usage() {
  cat <<'USAGE'
usage: bash kernels/sass/fingerprint.sh (--check | --record) [--arch ARCH]... [--rev REV]... [--dump DIR]

Compiles the kernel sources as the build does (nvcc -std=c++17 -O3 -DNDEBUG -lineinfo
--expt-relaxed-constexpr, one -gencode per architecture), disassembles with cuobjdump -sass
and normalises each __global__ kernel's SASS (no addresses, encodings or symbol names; branch
targets as labels), so that a pure refactor gives the same text. Per kernel: the instruction
count and the sha256 of that text, recorded in kernels/sass/<arch>.txt.

  --check       compare with the record; print each kernel that differs (revision, architecture,
                counts, first differing instruction) and exit 1 if any does
  --record      rewrite the record of the chosen architectures from the current sources
  --arch ARCH   sm_90a or sm_120a (repeatable; default both)
  --rev REV     split-v1 or split-v2 (repeatable; default both)
  --dump DIR    also write the normalised SASS, DIR/<arch>/<rev>/<kernel>.sass, for diff -u
  -h, --help    this text

Exit status: 0 same (or recorded), 1 a kernel differs from the record, 2 a tool or input problem.
Needs nvcc (CUDACXX, CUDA_HOME or /usr/local/cuda), python3, c++filt, and cuobjdump with the
nvdisasm it runs, from NVIDIA's wheels:
  python3 -m venv .venv-sass && .venv-sass/bin/pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm
(found in .venv-sass of the repository, in python3's site-packages or on PATH).
USAGE
}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
mode="" archs=() revs=() dump=""
while (($#)); do
  case "$1" in
    --check | --record) mode=${1#--} ;;
    --arch) archs+=("${2:?--arch needs a value}"); shift ;;
    --rev) revs+=("${2:?--rev needs a value}"); shift ;;
    --dump) dump=${2:?--dump needs a value}; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "fingerprint.sh: unknown argument '$1' (--help)" >&2; exit 2 ;;
  esac
  shift
done
[[ -n $mode ]] || { usage >&2; exit 2; }
((${#archs[@]})) || archs=(sm_90a sm_120a)
((${#revs[@]})) || revs=(split-v1 split-v2)

# How the build compiles each shipped revision (kernels/CMakeLists.txt): source and defines.
rev_source() {
  case "$1" in
    split-v1) echo "kernels/split_revision.cu" ;;
    split-v2) echo "kernels/split_revision_v2.cu" ;;
    *) return 1 ;;
  esac
}
for r in "${revs[@]}"; do rev_source "$r" >/dev/null || { echo "fingerprint.sh: unknown revision '$r'" >&2; exit 2; }; done
for a in "${archs[@]}"; do
  [[ $a == sm_90a || $a == sm_120a ]] || { echo "fingerprint.sh: unknown architecture '$a'" >&2; exit 2; }
done

tool_problem() { echo "fingerprint.sh: $*" >&2; exit 2; }
nvcc=${CUDACXX:-}
[[ -n $nvcc ]] || { [[ -n ${CUDA_HOME:-} && -x $CUDA_HOME/bin/nvcc ]] && nvcc=$CUDA_HOME/bin/nvcc; }
[[ -n $nvcc ]] || { [[ -x /usr/local/cuda/bin/nvcc ]] && nvcc=/usr/local/cuda/bin/nvcc; }
[[ -n $nvcc ]] || nvcc=$(command -v nvcc) || tool_problem "nvcc not found (set CUDACXX or CUDA_HOME)"
command -v python3 >/dev/null || tool_problem "python3 not found"
command -v c++filt >/dev/null || tool_problem "c++filt (binutils) not found"

# cuobjdump -sass runs nvdisasm: both must be found, in one folder on PATH.
find_sass_tools() {
  local d dirs=()
  dirs+=("$repo"/.venv-sass/lib/python3*/site-packages/nvidia/cu*/bin)
  while IFS= read -r d; do dirs+=("$d"/nvidia/cu*/bin); done < <(python3 -c \
    'import site; print("\n".join(site.getsitepackages() + [site.getusersitepackages()]))' 2>/dev/null)
  for d in "${dirs[@]}"; do
    if [[ -x $d/cuobjdump && -x $d/nvdisasm ]]; then PATH="$d:$PATH"; return 0; fi
  done
  command -v cuobjdump >/dev/null && command -v nvdisasm >/dev/null
}
if ! find_sass_tools; then
  cat >&2 <<'MSG'
fingerprint.sh: cuobjdump and nvdisasm not found (CUDA's toolkit here may ship neither).
Install NVIDIA's wheels, from the repository root:
  python3 -m venv .venv-sass && .venv-sass/bin/pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm
or put a folder holding both on PATH.
MSG
  exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/vattn-sass.XXXXXX") || tool_problem "no temporary folder"
trap 'rm -rf "$work"' EXIT
normalise="$here/normalise_sass.py"

# fingerprint REV ARCH -> $work/REV.ARCH.fp: "<kernel> <count> <sha256> <line hashes>" per kernel.
fingerprint() {
  local rev=$1 arch=$2 src
  read -r -a src <<<"$(rev_source "$rev")"
  local obj="$work/$rev.$arch.o" num=${arch#sm_}
  echo "fingerprint.sh: compiling $rev for $arch" >&2
  (cd "$repo" && "$nvcc" -std=c++17 -O3 -DNDEBUG -lineinfo --expt-relaxed-constexpr -c \
    "-gencode=arch=compute_$num,code=$arch" -I kernels "${src[@]}" -o "$obj") >"$work/nvcc.log" 2>&1 ||
    { cat "$work/nvcc.log" >&2; tool_problem "nvcc failed on $rev for $arch"; }
  cuobjdump -sass "$obj" >"$work/$rev.$arch.sass" 2>"$work/cuobjdump.log" ||
    { cat "$work/cuobjdump.log" >&2; tool_problem "cuobjdump -sass failed on $rev for $arch"; }
  python3 "$normalise" "$work/$rev.$arch.sass" >"$work/$rev.$arch.fp" || tool_problem "normalising $rev for $arch failed"
  [[ -s $work/$rev.$arch.fp ]] || tool_problem "no kernel found in the SASS of $rev for $arch"
  if [[ -n $dump ]]; then
    python3 "$normalise" "$work/$rev.$arch.sass" --dump "$dump/$arch/$rev" || tool_problem "cannot write $dump"
  fi
}

# compare REV ARCH RECORD: the kernels of REV in RECORD against $work/REV.ARCH.fp; 1 if any differs.
compare() {
  python3 - "$1" "$2" "$3" "$work/$1.$2.fp" "$work/$1.$2.sass" "$normalise" <<'PY'
import importlib.util, sys
rev, arch, record, current, sass, normalise = sys.argv[1:]
spec = importlib.util.spec_from_file_location("normalise_sass", normalise)
ns = importlib.util.module_from_spec(spec); spec.loader.exec_module(ns)
def table(lines):
    return {f[0]: f[1:] for f in (l.split() for l in lines) if f}
rec = table(l[len(rev) + 1:] for l in open(record) if l.startswith(rev + " "))
cur = table(open(current))
texts = None
bad = 0
for k in sorted(set(rec) | set(cur)):
    if k not in cur:
        print(f"MISMATCH {rev} {arch} {k}: in the record, not in the SASS"); bad = 1; continue
    if k not in rec:
        print(f"MISMATCH {rev} {arch} {k}: in the SASS, not in the record"); bad = 1; continue
    (rc, rh, rl), (cc, ch, cl) = rec[k], cur[k]
    if rh == ch:
        print(f"same     {rev} {arch} {k}: {cc} instructions"); continue
    bad = 1
    if texts is None:
        funcs = ns.parse(sass)
        names = [ns.short_name(d) for d in ns.demangle([f[0] for f in funcs])]
        texts = {n: ns.normalise(i) for n, (_, i) in zip(names, funcs)}
    lines = texts.get(k, [])
    i = 0
    while i < min(len(rl), len(cl)) // 4 and rl[4 * i:4 * i + 4] == cl[4 * i:4 * i + 4]:
        i += 1
    n = sum(1 for l in lines[:i] if not l.endswith(":"))
    print(f"MISMATCH {rev} {arch} {k}: {rc} instructions recorded, {cc} now; first difference at "
          f"line {i + 1} of the normalised SASS (instruction {n}); now:")
    for j in range(max(0, i - 2), min(len(lines), i + 3)):
        print(f"  {'>' if j == i else ' '} {j + 1:6d}  {lines[j]}")
sys.exit(bad)
PY
}

status=0
for arch in "${archs[@]}"; do
  record="$here/$arch.txt"
  if [[ $mode == check && ! -f $record ]]; then tool_problem "no record $record (run --record)"; fi
  if [[ $mode == record ]]; then
    new="$work/$arch.txt"
    {
      echo "# SASS fingerprints of the shipped revisions' __global__ kernels for $arch (CUDA $("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p'))."
      echo "# Written by kernels/sass/fingerprint.sh --record; never edit by hand."
      echo "# <revision> <kernel> <instructions> <sha256 of the normalised SASS> <first 4 hex of each line's sha256>"
    } >"$new"
    # Revisions not asked for keep their recorded lines.
    if [[ -f $record ]]; then
      grep -v '^#' "$record" | while read -r r rest; do
        printf '%s\n' "${revs[@]}" | grep -qxF "$r" || echo "$r $rest"
      done >>"$new"
    fi
  fi
  for rev in "${revs[@]}"; do
    fingerprint "$rev" "$arch"
    if [[ $mode == record ]]; then
      sed "s/^/$rev /" "$work/$rev.$arch.fp" >>"$new"
    else
      compare "$rev" "$arch" "$record"
      rc=$?
      ((rc == 0)) || { ((rc == 1)) && status=1 || tool_problem "comparing $rev for $arch failed"; }
    fi
  done
  if [[ $mode == record ]]; then
    { head -3 "$new"; tail -n +4 "$new" | sort; } >"$record"
    echo "fingerprint.sh: recorded $record" >&2
    cut -d' ' -f1-4 "$record" | grep -v '^#' >&2
  fi
done
if [[ $mode == check ]]; then
  ((status == 0)) && echo "fingerprint.sh: every kernel's SASS is the recorded one" ||
    echo "fingerprint.sh: SASS differs from kernels/sass/*.txt (see MISMATCH above): if intended, --record and commit it"
fi
exit $status
