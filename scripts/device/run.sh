#!/usr/bin/env bash
# Runs the gpu-labelled tests from a staged build (scripts/device/stage.sh) on a GPU machine
# whose checkout sits at a different absolute path: the recorded paths are rewritten first.
#   bash scripts/device/run.sh                 # ctest -L gpu: each revision-dependent test once per
#                                              # in-tree revision ("split-v1:...", "split-v2:...")
#   bash scripts/device/run.sh --sanitize      # the [sanitize] tests under compute-sanitizer memcheck
#                                              # (--padding), racecheck, initcheck, synccheck, per revision
# Anything else goes to ctest (e.g. -R edges); --sanitize may come anywhere. Logs go to $OUT when set.
set -uo pipefail
sanitize=0 args=()
for a in "$@"; do
  case $a in
    -h|--help) sed -n 2,8p "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --sanitize) sanitize=1 ;;
    *) args+=("$a") ;;
  esac
done
root=$(cd "$(dirname "$0")/../.." && pwd)
stage="$root/.device/build"
[ -d "$stage" ] || { echo "run.sh: no staged build at $stage (run scripts/device/stage.sh first)" >&2; exit 2; }
old_build=$(cat "$stage/ORIGINAL_BUILD_DIR")
old_src=$(cat "$stage/ORIGINAL_SOURCE_DIR")
find "$stage" \( -name 'CTestTestfile.cmake' -o -name '*_tests*.cmake' -o -name '*_include*.cmake' \) -print0 |
  xargs -0 sed -i -e "s#${old_build}#${stage}#g" -e "s#${old_src}#${root}#g"
echo "$stage" > "$stage/ORIGINAL_BUILD_DIR"
echo "$root" > "$stage/ORIGINAL_SOURCE_DIR"
export VATTN_REQUIRE_GPU=1  # this script is for GPU machines: a test that cannot see the GPU fails, not skips
export VATTN_SOURCE_DIR="$root"
export VATTN_BINARY_DIR="$stage"
export VATTN_FINDINGS_DIR="${OUT:-$root}/findings"
log="${OUT:-/tmp}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || true
if [ $sanitize = 0 ]; then
  ctest --test-dir "$stage" -L gpu --output-on-failure "${args[@]}" 2>&1 | tee "$log/ctest-gpu.log"
  exit "${PIPESTATUS[0]}"
fi
# The in-tree revisions (kernels/vattn_revisions.h's lone-string #defines), as ctest runs them.
mapfile -t revisions < <(sed -n 's/^#define VATTN_REVISION_[A-Z0-9_]* "\([^"]*\)"$/\1/p' "$root/kernels/vattn_revisions.h")
[ ${#revisions[@]} -gt 0 ] || { echo "run.sh: no revision names in kernels/vattn_revisions.h" >&2; exit 2; }
rc=0
for rev in "${revisions[@]}"; do
  for tool in memcheck racecheck initcheck synccheck; do
    extra=""
    [ $tool = memcheck ] && extra="--padding 4096 --leak-check full"
    echo "=== $rev: compute-sanitizer --tool $tool $extra"
    # shellcheck disable=SC2086  # $extra: none or several options, split on purpose
    VATTN_KERNEL=$rev compute-sanitizer --tool "$tool" $extra --error-exitcode 99 --print-limit 20 \
      "$stage/tests/gpu/vattn_tests_gpu" "${VATTN_SANITIZE_FILTER:-[sanitize]}" 2>&1 |
      tee "$log/sanitizer-$rev-$tool.log" | tail -n 25
    s=${PIPESTATUS[0]}
    echo "=== $rev: $tool exit $s"
    [ "$s" = 0 ] || rc=1
  done
done
exit $rc
# SPDX-License-Identifier: Apache-2.0
