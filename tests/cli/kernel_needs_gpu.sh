#!/usr/bin/env bash
# kernel_needs_gpu.sh VATTN FIXTURE: `vattn replay FIXTURE --kernel split-v1` runs the kernel
# where a GPU is visible (exit 0, a kernel row) and is refused where none is (exit 2, saying
# why): a kernel asked for by name is never silently "not run".
set -u
here=$(cd "$(dirname "$0")" && pwd)
vattn=$1 fixture=$2
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  exec bash "$here/expect.sh" 0 --out "kernel:split-v1" -- "$vattn" replay "$fixture" --kernel split-v1
fi
exec bash "$here/expect.sh" 2 --err "--kernel split-v1 cannot run here" --no-out "PASS" -- \
  "$vattn" replay "$fixture" --kernel split-v1
