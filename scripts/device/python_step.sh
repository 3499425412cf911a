#!/usr/bin/env bash
# python_step.sh   (on the GPU machine, from the repository root; session.sh step `python`)
# The Python package's GPU steps: SGLang's Triton target_verify kernel as a producer and the
# capture hook around it, both checked by vattn replay against the oracle and the kernel (split-v2);
# then vattn.write's data rules with real torch tensors in GPU memory.
# Needs the staged build (.device/build) and SGLang's kernel files in .device/sglang-files, made
# here before the call with:
#   python3 -m vattn.sglang_files extract sglang-0.5.23-cp312-cp312-manylinux_2_34_x86_64.whl .device/sglang-files
# (PYTHONPATH=python/src; the wheel from PyPI: pip download --no-deps sglang==0.5.23). The device's
# python3 has torch, triton, numpy and h5py; the package runs from python/src.
# Logs and replay reports go to $OUT (or /tmp). Exit 0 when every step passed, 1 otherwise.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
b=$root/.device/build files=$root/.device/sglang-files out=${OUT:-/tmp} w=/tmp/vattn-python
export PYTHONPATH=$root/python/src${PYTHONPATH:+:$PYTHONPATH}
[ -x "$b/vattn" ] || { echo "python_step: no staged build at $b (scripts/device/stage.sh)" >&2; exit 1; }
[ -f "$files/SGLANG_VERSION" ] || { echo "python_step: no SGLang kernel files in $files (see the header)" >&2; exit 1; }
rm -rf "$w"; mkdir -p "$w"
rc=0
step() { echo "---- $*"; }
step "cases: chains, trees, a batch with an empty prefix, a long prefix"
timeout 120 "$b/vattn" gen -o "$w/chain.h5" --profile k26 --tree chain --prefix 4099,130 --drafts 16,5 --cases 2 --seed 11 &&
timeout 120 "$b/vattn" gen -o "$w/tree.h5" --profile uniform --tree ddtree --prefix 1000,0,77 --drafts 17,3,9 --cases 2 --seed 21 &&
timeout 120 "$b/vattn" gen -o "$w/long.h5" --profile k26 --tree random --prefix 65536 --drafts 16 --seed 31 || rc=1
step "python -m vattn.produce --producer sglang-triton"
timeout 300 python3 -m vattn.produce --producer sglang-triton --sglang-files "$files" "$w"/chain.h5 "$w"/tree.h5 "$w"/long.h5 \
  2>&1 | tee "$out/produce-sglang.log" | tail -4
[ "${PIPESTATUS[0]}" = 0 ] || rc=1
step "vattn replay: serving (SGLang), split-v2 and the oracle"
timeout 300 "$b/vattn" replay "$w"/chain.h5 "$w"/tree.h5 "$w"/long.h5 --kernel split-v2 --json "$out/replay-sglang.json" \
  > "$out/replay-sglang.log" 2>&1
code=$?; grep -E "serving|sglang|kernel:|replay:" "$out/replay-sglang.log" | tail -20; echo "replay exit $code"
[ $code = 0 ] || rc=1
step "vattn.capture around SGLang's kernel (stand-in backend)"
timeout 300 python3 "$root/scripts/device/capture_sglang.py" --sglang-files "$files" --out "$w/capture" "$w"/chain.h5 "$w"/tree.h5 \
  2>&1 | tee "$out/capture-sglang.log" | tail -3
[ "${PIPESTATUS[0]}" = 0 ] || rc=1
timeout 300 "$b/vattn" replay "$w"/capture/*.h5 --kernel split-v2 --json "$out/replay-capture.json" > "$out/replay-capture.log" 2>&1
code=$?; grep -E "serving|kernel:|replay:" "$out/replay-capture.log" | tail -12; echo "replay of the hook's files exit $code"
[ $code = 0 ] || rc=1
step "vattn.write with real torch tensors on the GPU (tests/python/test_write_dtypes.py)"
timeout 300 python3 "$root/tests/python/test_write_dtypes.py" --vattn "$b/vattn" --root "$root" > "$out/write-dtypes.log" 2>&1
code=$?; grep -E "torch|SKIP|FAIL|checks" "$out/write-dtypes.log" | tail -12; echo "write dtypes exit $code"
[ $code = 0 ] || rc=1
echo "python_step: exit $rc"
exit $rc
# SPDX-License-Identifier: Apache-2.0
