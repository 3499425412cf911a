#!/usr/bin/env bash
# Runs a vattn.torch test (ctest label `torch`) with a python3 that imports torch, h5py and numpy:
# $VATTN_TORCH_PYTHON when set, else the repository's .venv-torch/ (scripts/install-torch.sh makes
# it), else python3 from PATH. Without one it exits 77, which ctest reports as skipped, with the reason.
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${VATTN_TORCH_PYTHON:-}
if [ -z "$py" ]; then
  if [ -x "$root/.venv-torch/bin/python3" ]; then py=$root/.venv-torch/bin/python3; else py=python3; fi
fi
if ! "$py" -c "import torch, h5py, numpy" >/dev/null 2>&1; then
  echo "SKIP: $py cannot import torch, h5py and numpy (bash scripts/install-torch.sh makes .venv-torch/ with them)"
  exit 77
fi
exec "$py" "$@"
