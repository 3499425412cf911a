#!/usr/bin/env bash
# Runs a test of the ctest label `model` (a DeepSeek-V3 model from transformers: vattn.mla_absorb,
# vattn.spec_decode, vattn.model_capture, scripts/device/model_loop.py on the CPU) with a python3 that
# imports torch, transformers, h5py and numpy: $VATTN_MODEL_PYTHON when set, else the repository's
# .venv-torch/ (scripts/install-model.sh adds transformers to it), else python3 from PATH. Without one it
# exits 77, which ctest reports as skipped, with the reason.
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${VATTN_MODEL_PYTHON:-}
if [ -z "$py" ]; then
  if [ -x "$root/.venv-torch/bin/python3" ]; then py=$root/.venv-torch/bin/python3; else py=python3; fi
fi
if ! "$py" -c "import torch, transformers, h5py, numpy" >/dev/null 2>&1; then
  echo "SKIP: $py cannot import torch, transformers, h5py and numpy (bash scripts/install-model.sh adds transformers to .venv-torch/)"
  exit 77
fi
exec "$py" "$@"
