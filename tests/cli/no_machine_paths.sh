#!/usr/bin/env bash
# usage: no_machine_paths.sh VATTN SOURCE_DIR
# No committed case file (fixtures/, fixtures/regressions/, captured_tensors/) names a path of the
# machine it was made on: `vattn info` shows each file's source, notes and recipes, and none may hold
# an absolute path (/tmp/w/..., /home/me/vattn/.device/...). Where SOURCE_DIR is a git checkout, no
# committed file names the checkout's own path either (a generator that wrote it would be caught).
set -uo pipefail
[ $# -eq 2 ] || { echo "usage: no_machine_paths.sh VATTN SOURCE_DIR" >&2; exit 2; }
vattn=$1
src=$(cd "$2" && pwd)
shopt -s nullglob
files=("$src"/fixtures/*.h5 "$src"/fixtures/regressions/*.h5 "$src"/captured_tensors/*.h5)
[ ${#files[@]} -gt 0 ] || { echo "FAIL: no case files under $src/fixtures"; exit 1; }
failures=0
for f in "${files[@]}"; do
  info=$("$vattn" info "$f" 2>&1) || { echo "FAIL: vattn info ${f#"$src/"} failed: $info"; failures=$((failures + 1)); continue; }
  # The file's own path leads the first line; what follows it is the file's metadata.
  hits=$(sed "1s|^$f: ||" <<<"$info" | grep -oE '(^|[[:space:]:=(])/[[:alnum:]._-]+/[^[:space:],;)]*' || true)
  if [ -n "$hits" ]; then
    echo "FAIL: ${f#"$src/"} names a path of the machine it was made on: $(tr '\n' ' ' <<<"$hits")"
    failures=$((failures + 1))
  fi
done
if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  committed=$(cd "$src" && git grep -laF "$src/" -- . 2>/dev/null || true)
  [ -z "$committed" ] || { echo "FAIL: committed files name this checkout ($src): $committed"; failures=$((failures + 1)); }
fi
[ $failures -eq 0 ] || exit 1
echo "ok: ${#files[@]} committed case files name no machine's path"
# SPDX-License-Identifier: Apache-2.0
