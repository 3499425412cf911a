#!/usr/bin/env bash
# expect.sh CODE [--out TEXT]... [--err TEXT]... [--no-out TEXT]... -- COMMAND...
# Runs COMMAND and checks its exit code and that stdout/stderr contain (or not) each TEXT.
# On a mismatch prints everything it saw, so the ctest log explains the failure.
set -u
want_code=$1
shift
out_has=() err_has=() out_lacks=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  case $1 in
    --out) out_has+=("$2"); shift 2 ;;
    --err) err_has+=("$2"); shift 2 ;;
    --no-out) out_lacks+=("$2"); shift 2 ;;
    *) echo "expect.sh: unknown option $1"; exit 2 ;;
  esac
done
shift
tmp=$(mktemp -d /tmp/vattn-expect.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
"$@" >"$tmp/out" 2>"$tmp/err"
code=$?
ok=1
[ "$code" -eq "$want_code" ] || { echo "exit code $code, expected $want_code"; ok=0; }
for t in "${out_has[@]+"${out_has[@]}"}"; do grep -qF -- "$t" "$tmp/out" || { echo "stdout lacks: $t"; ok=0; }; done
for t in "${err_has[@]+"${err_has[@]}"}"; do grep -qF -- "$t" "$tmp/err" || { echo "stderr lacks: $t"; ok=0; }; done
for t in "${out_lacks[@]+"${out_lacks[@]}"}"; do ! grep -qF -- "$t" "$tmp/out" || { echo "stdout has: $t"; ok=0; }; done
if [ $ok -eq 0 ]; then
  echo "command: $*"
  echo "--- stdout"; cat "$tmp/out"
  echo "--- stderr"; cat "$tmp/err"
  exit 1
fi
echo "ok: exit $code: $*"
# SPDX-License-Identifier: Apache-2.0
