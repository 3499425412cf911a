#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# check_patches.sh PATCH KERNELS_DIR NAME...: each tests/planted/NAME.patch applies to KERNELS_DIR
# without fuzz (a dry run: nothing is written). Exit 1 naming every patch that does not.
set -u
patch_tool=$1 kernels=$2
shift 2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
failed=()
for name in "$@"; do
  if out=$("$patch_tool" --dry-run -s -p1 -F0 -d "$kernels" -i "$here/$name.patch" 2>&1); then
    echo "applies  $name.patch"
  else
    echo "FAILS    $name.patch:"; while IFS= read -r l; do echo "    $l"; done <<< "$out"
    failed+=("$name")
  fi
done
for f in "$here"/*.patch; do  # a patch no build names is never built
  name=$(basename "$f" .patch)
  printf '%s\n' "$@" | grep -qxF "$name" || { echo "FAILS    $name.patch: not in tests/planted/CMakeLists.txt"; failed+=("$name"); }
done
if ((${#failed[@]})); then
  echo "${#failed[@]} planted patch(es) fail: ${failed[*]}"
  echo "(refresh each: apply it to the old kernels/, carry the change over, diff -u again; README.md)"
  exit 1
fi
echo "all $# planted patches apply to kernels/"
