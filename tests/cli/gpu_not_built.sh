#!/usr/bin/env bash
# gpu_not_built.sh: the one gpu-labelled test of a CPU-only build (-DVATTN_CUDA=OFF). The kernel, the
# GPU oracle and the GPU tests (tests/gpu, tests/audit) are not built there, so `ctest -L gpu` has
# nothing of theirs to run: this says so and exits 77 (ctest: Skipped), or 1 when
# VATTN_REQUIRE_GPU=1 says this machine is meant to run them.
why="this is a CPU-only build (VATTN_CUDA=OFF): the kernel and the GPU tests are not built; build with the CUDA toolkit (README) and run them on a GPU machine"
if [ "${VATTN_REQUIRE_GPU:-0}" = 1 ]; then
  echo "FAIL: VATTN_REQUIRE_GPU=1 expects the GPU tests to run, but $why"
  exit 1
fi
echo "SKIPPED: $why"
exit 77
# SPDX-License-Identifier: Apache-2.0
