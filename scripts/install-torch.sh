#!/usr/bin/env bash
# Makes .venv-torch/, the Python environment of the ctest label `torch` (the vattn.torch tests,
# tests/python/with_torch.sh): torch from PyPI (its Linux wheel brings CUDA libraries, about 5 GB;
# the tests run on the CPU) over the system's numpy and h5py. Kept apart from install-deps.sh so
# that the default set-up stays light. Quick when it is there.
set -euo pipefail
case "${1:-}" in
  -h|--help) sed -n 2,6p "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  "") ;;
  *) echo "install-torch.sh: takes no arguments (got '$1'; --help)" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "$0")/.." && pwd)
venv=$root/.venv-torch
want=$(grep -E '^torch' "$root/scripts/torch-requirements.txt")
if "$venv/bin/python3" -c "import torch, numpy, h5py" 2>/dev/null; then
  echo "install-torch: ok ($("$venv/bin/python3" -c 'import torch; print("torch", torch.__version__)') in .venv-torch/)"
  exit 0
fi
echo "install-torch: installing $want into .venv-torch/"
{ [ -x "$venv/bin/pip" ] || python3 -m venv --system-site-packages "$venv"; } &&
  "$venv/bin/pip" install -q -r "$root/scripts/torch-requirements.txt" ||
  { echo "install-torch: could not install $want into .venv-torch/" >&2; exit 1; }
if ! "$venv/bin/python3" -c "import torch, numpy, h5py"; then
  echo "install-torch: .venv-torch/ cannot import torch, numpy and h5py (numpy and h5py come from the system's python3: scripts/install-deps.sh)" >&2
  exit 1
fi
echo "install-torch: ok"
