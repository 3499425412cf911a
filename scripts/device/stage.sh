#!/usr/bin/env bash
# Builds the suite for a bare GPU machine (static HDF5, libstdc++ and cudart: the binaries
# need only libc there) and stages what `ctest -L gpu` needs into .device/ (git-ignored),
# small enough to travel. Then, on the GPU machine, from the repository root:
#     bash scripts/device/run.sh [--sanitize] [ctest args...]
# CMake options pass through VATTN_DEVICE_CMAKE_ARGS (default -DVATTN_BUILD_PLANTED=ON
# -DVATTN_BUILD_PROBES=ON: the session runs the tests of the tests, which need the deliberately
# broken revisions, and vattn_timeline_probe, which needs split-v2's timing-probe build).
set -euo pipefail
case "${1:-}" in
  -h|--help) sed -n 2,8p "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  "") ;;
  *) echo "stage.sh: takes no arguments (got '$1'; --help)" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "$0")/../.." && pwd)
build="$root/build-device"
stage="$root/.device"
# shellcheck disable=SC2086  # VATTN_DEVICE_CMAKE_ARGS and VATTN_DEVICE_TARGETS: lists, split on purpose
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DVATTN_PORTABLE=ON ${VATTN_DEVICE_CMAKE_ARGS:--DVATTN_BUILD_PLANTED=ON -DVATTN_BUILD_PROBES=ON} >/dev/null
# shellcheck disable=SC2086  # as above
cmake --build "$build" -j "$(nproc)" ${VATTN_DEVICE_TARGETS:+--target $VATTN_DEVICE_TARGETS}
rm -rf "$stage" && mkdir -p "$stage/build"
# ctest needs its CTestTestfile.cmake files, the test lists written by Catch's discovery,
# and the executables; object files stay here.
(cd "$build" && find . \( -name 'CTestTestfile.cmake' -o -name '*_tests*.cmake' -o -name '*_include*.cmake' \) -print0 |
  xargs -0 -I{} cp --parents {} "$stage/build/")
(cd "$build" && find . -type f -perm -u+x \( -name 'vattn*' -o -name '*.so' \) ! -path '*/CMakeFiles/*' -print0 |
  xargs -0 -I{} cp --parents {} "$stage/build/")
cp "$build"/ptxas-report*.txt "$stage/build/" 2>/dev/null || true
cp -r "$build/share" "$stage/build/"  # the morning report generator, found beside the vattn binary
echo "$build" > "$stage/build/ORIGINAL_BUILD_DIR"
echo "$root" > "$stage/build/ORIGINAL_SOURCE_DIR"
du -sh "$stage"
echo "staged: run 'bash scripts/device/run.sh' on the GPU machine (device tool: carry .device)"
# SPDX-License-Identifier: Apache-2.0
