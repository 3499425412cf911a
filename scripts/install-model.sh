#!/usr/bin/env bash
# Adds transformers to .venv-torch/ (scripts/install-torch.sh makes it) for the ctest label `model`: the
# DeepSeek-V3 model tests (tests/python/with_model.sh). Kept apart from install-deps.sh and from the
# torch label so that neither set-up grows. Quick when it is there.
set -euo pipefail
case "${1:-}" in
  -h|--help) sed -n 2,4p "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  "") ;;
  *) echo "install-model.sh: takes no arguments (got '$1'; --help)" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "$0")/.." && pwd)
venv=$root/.venv-torch
bash "$root/scripts/install-torch.sh"
want=$(grep -E '^transformers' "$root/scripts/model-requirements.txt")
if "$venv/bin/python3" -c "import transformers" 2>/dev/null; then
  echo "install-model: ok ($("$venv/bin/python3" -c 'import transformers; print("transformers", transformers.__version__)') in .venv-torch/)"
  exit 0
fi
echo "install-model: installing $want into .venv-torch/"
"$venv/bin/pip" install -q -r "$root/scripts/model-requirements.txt" ||
  { echo "install-model: could not install $want into .venv-torch/" >&2; exit 1; }
"$venv/bin/python3" -c "import torch, transformers, numpy, h5py" ||
  { echo "install-model: .venv-torch/ cannot import torch, transformers, numpy and h5py" >&2; exit 1; }
echo "install-model: ok"
