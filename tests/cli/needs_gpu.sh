#!/usr/bin/env bash
# needs_gpu.sh VATTN FIXTURE GPU_TESTS PROBE
# What needs a GPU either runs or says so, never passes having done nothing:
#  - with a GPU visible, `vattn replay FIXTURE --kernel split-v2` runs the kernel (a kernel row
#    that passes, no "not run");
#  - without one, `replay --kernel`, `replay --oracle gpu`, `bench`, `graph-check` and
#    vattn_ceiling_probe exit 2 saying why, and the GPU test binary exits 77 (ctest: Skipped), or 1 when
#    VATTN_REQUIRE_GPU=1 says the machine should have a GPU.
set -u
here=$(cd "$(dirname "$0")" && pwd)
vattn=$1 fixture=$2 gpu_tests=$3 probe=$4
expect() { bash "$here/expect.sh" "$@" || ok=0; }
ok=1
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  expect 0 --out "kernel:split-v2 " --out "PASS" --no-out "not run" --no-out "FAIL" -- \
    "$vattn" replay "$fixture" --kernel split-v2
  [ $ok -eq 1 ] && echo "ok: a GPU is visible and replay --kernel ran the kernel"
  [ $ok -eq 1 ]; exit
fi
expect 2 --err "--kernel split-v2 cannot run here" --no-out "PASS" -- "$vattn" replay "$fixture" --kernel split-v2
expect 2 --err "--oracle gpu needs a CUDA device" --no-out "PASS" -- "$vattn" replay "$fixture" --oracle gpu
expect 2 --err "no CUDA device visible; nothing was timed" -- "$vattn" bench
expect 2 --err "no CUDA device visible; the checks need one" -- "$vattn" graph-check
expect 2 --err "no CUDA device visible: nothing to measure" -- "$probe" --keys=64 --only=full
expect 77 --out "SKIPPED: no CUDA device visible" -- "$gpu_tests"
expect 1 --out "FAILED: no CUDA device visible" -- env VATTN_REQUIRE_GPU=1 "$gpu_tests"
[ $ok -eq 1 ] && echo "ok: without a GPU every GPU command exits 2 with its reason; the GPU tests skip (77), or fail with VATTN_REQUIRE_GPU=1"
[ $ok -eq 1 ]
# SPDX-License-Identifier: Apache-2.0
