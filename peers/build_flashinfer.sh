#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# build_flashinfer.sh WHEEL OUTDIR [--backends fa2,fa3] [--jobs N]
#
# Builds OUTDIR/libvattn_flashinfer_mla.so: FlashInfer's MLA kernels (fa2: mla.cuh, fa3:
# mla_hopper.cuh) and its host planner (scheduler.cuh MLAPlan), compiled from the headers in
# a published flashinfer-python wheel behind this folder's C ABI (flashinfer_mla.h), for
# sm_90a (H200), with the CUDA runtime linked in statically. Needs nvcc (CUDA 12.8+; $NVCC,
# else $CUDA_HOME/bin/nvcc, else /usr/local/cuda/bin/nvcc) and python3 (to read the wheel).
# Only the headers it needs are taken from the wheel (flashinfer/data/include, cutlass/include,
# cccl/libcudacxx/include), into a temporary folder removed at the end. OUTDIR gets the
# library, the header, FlashInfer's LICENSE and BUILD_INFO (wheel, version, flags, sizes).
#
#   --backends LIST  fa2 and/or fa3 (default: fa2,fa3)
#   --jobs N         parallel nvcc processes (default: the number of cores)
#
# Wheel: pip download --no-deps flashinfer-python==0.7.2.post1 (62 MB; not installed).
# Exit 0 built, 1 the build failed, 2 usage.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
usage() { sed -n '3,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
die_usage() { echo "build_flashinfer.sh: $*" >&2; echo "(see build_flashinfer.sh --help)" >&2; exit 2; }

backends=fa2,fa3 jobs=$(nproc 2>/dev/null || echo 2) args=()
while [ $# -gt 0 ]; do
  case $1 in
    -h|--help) usage; exit 0 ;;
    --backends) [ $# -ge 2 ] || die_usage "--backends needs a value (fa2, fa3 or fa2,fa3)"; backends=$2; shift 2 ;;
    --backends=*) backends=${1#*=}; shift ;;
    --jobs) [ $# -ge 2 ] || die_usage "--jobs needs a value"; jobs=$2; shift 2 ;;
    --jobs=*) jobs=${1#*=}; shift ;;
    -*) die_usage "unknown option '$1'" ;;
    *) args+=("$1"); shift ;;
  esac
done
[ ${#args[@]} -eq 2 ] || die_usage "takes WHEEL and OUTDIR (got ${#args[@]} arguments)"
wheel=${args[0]} out=${args[1]}
[[ $jobs =~ ^[1-9][0-9]*$ ]] || die_usage "--jobs '$jobs' is not a positive whole number"
with_fa2=0 with_fa3=0
IFS=, read -r -a list <<<"$backends"
for b in "${list[@]}"; do
  case $b in fa2) with_fa2=1 ;; fa3) with_fa3=1 ;; *) die_usage "--backends: unknown backend '$b' (fa2, fa3)" ;; esac
done
[ $with_fa2 = 1 ] || die_usage "--backends must include fa2 (the library's default backend)"
[ -f "$wheel" ] || die_usage "WHEEL $wheel: no such file"
nvcc=${NVCC:-${CUDA_HOME:-/usr/local/cuda}/bin/nvcc}
[ -x "$nvcc" ] || { echo "build_flashinfer.sh: no nvcc at $nvcc (set NVCC or CUDA_HOME)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "build_flashinfer.sh: needs python3 to read the wheel" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/vattn-flashinfer.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
t0=$(date +%s)

# 1. The headers, the version and the license, out of the wheel.
version=$(python3 - "$wheel" "$tmp/wheel" <<'EOF'
import re, sys, zipfile
wheel, dst = sys.argv[1], sys.argv[2]
try:
    z = zipfile.ZipFile(wheel)
except (OSError, zipfile.BadZipFile) as e:
    sys.exit(f"build_flashinfer.sh: {wheel}: not a readable wheel ({e})")
names = z.namelist()
meta = [n for n in names if re.fullmatch(r"flashinfer_python-[^/]+\.dist-info/METADATA", n)]
if not meta:
    sys.exit(f"build_flashinfer.sh: {wheel}: no flashinfer_python-*.dist-info/METADATA: not a flashinfer-python wheel")
version = next((l.split(":", 1)[1].strip() for l in z.read(meta[0]).decode().splitlines() if l.startswith("Version:")), "")
if not version:
    sys.exit(f"build_flashinfer.sh: {wheel}: {meta[0]} names no Version")
dist = meta[0].split("/")[0]
prefixes = ("flashinfer/data/include/", "flashinfer/data/cutlass/include/", "flashinfer/data/cccl/libcudacxx/include/")
wanted = [n for n in names if n.startswith(prefixes) and not n.endswith("/")]
wanted += [n for n in (dist + "/licenses/LICENSE", dist + "/METADATA") if n in names]
for need in ("flashinfer/data/include/flashinfer/attention/mla.cuh", "flashinfer/data/include/flashinfer/attention/scheduler.cuh"):
    if need not in names:
        sys.exit(f"build_flashinfer.sh: {wheel}: has no {need} (flashinfer {version} lays its headers out otherwise)")
for n in wanted:
    z.extract(n, dst)
print(version)
EOF
) || exit 1
data=$tmp/wheel/flashinfer/data
license=$(find "$tmp/wheel" -path '*.dist-info/licenses/LICENSE' | head -1)
echo "build_flashinfer.sh: FlashInfer $version: headers from $(basename "$wheel") ($(du -sh "$tmp/wheel" | cut -f1) extracted)"

# 2. Compile (one translation unit per backend and one for the ABI, in parallel), link.
# shellcheck disable=SC2054  # the commas belong to nvcc's -gencode
flags=(-std=c++17 -O3 -DNDEBUG -use_fast_math --expt-relaxed-constexpr -Xcompiler -fPIC
       -gencode arch=compute_90a,code=sm_90a -Xfatbin=-compress-all
       -DCUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED -DFLASHINFER_ENABLE_BF16
       "-DVFI_FLASHINFER_VERSION=\"$version\"" "-DVFI_WITH_FA3=$with_fa3"
       -I"$data/cccl/libcudacxx/include" -I"$data/include" -I"$data/cutlass/include" -I"$here")
units=(lib fa2)
[ $with_fa3 = 1 ] && units+=(fa3)
pids=() failed=0
for u in "${units[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do sleep 1; done
  ( "$nvcc" "${flags[@]}" -c "$here/flashinfer_mla_$u.cu" -o "$tmp/$u.o" > "$tmp/$u.log" 2>&1 ) &
  pids+=($!)
done
for i in "${!pids[@]}"; do
  if ! wait "${pids[$i]}"; then
    failed=1
    echo "build_flashinfer.sh: nvcc failed on flashinfer_mla_${units[$i]}.cu:" >&2
    grep -E "error|Error" "$tmp/${units[$i]}.log" | head -20 >&2
  fi
done
[ $failed = 0 ] || exit 1
printf '{ global: vfi_*; local: *; };\n' > "$tmp/exports.map"
mkdir -p "$out"
lib=$out/libvattn_flashinfer_mla.so
objs=()
for u in "${units[@]}"; do objs+=("$tmp/$u.o"); done
"$nvcc" -shared -cudart static -gencode arch=compute_90a,code=sm_90a -Xlinker "--version-script=$tmp/exports.map" \
  -Xlinker --strip-all -o "$lib" "${objs[@]}" > "$tmp/link.log" 2>&1 ||
  { echo "build_flashinfer.sh: link failed:" >&2; head -20 "$tmp/link.log" >&2; exit 1; }
cp "$here/flashinfer_mla.h" "$out/"
[ -n "$license" ] && cp "$license" "$out/LICENSE.flashinfer"
bytes=$(stat -c %s "$lib")
t1=$(date +%s)
{
  echo "libvattn_flashinfer_mla.so: FlashInfer $version MLA ($backends), sm_90a, static CUDA runtime"
  echo "wheel: $(basename "$wheel") (sha256 $(sha256sum "$wheel" | cut -c1-16)...)"
  echo "nvcc: $("$nvcc" --version | tail -1)"
  echo "flags: ${flags[*]}" | sed "s|$tmp/wheel/||g"
  echo "size: $bytes bytes; built in $((t1 - t0)) s"
} > "$out/BUILD_INFO"
echo "build_flashinfer.sh: $lib: $bytes bytes ($(du -h "$lib" | cut -f1)), backends $backends, $((t1 - t0)) s"
# 3. The ctypes binding loads it (no CUDA call): ABI version, struct sizes, description.
if [ -d "$here/../python/src/vattn" ]; then
  PYTHONPATH="$here/../python/src" python3 -m vattn.flashinfer_lib "$lib" ||
    { echo "build_flashinfer.sh: vattn.flashinfer_lib cannot use $lib" >&2; exit 1; }
fi
