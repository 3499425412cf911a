# SPDX-License-Identifier: Apache-2.0
"""vattn.torch: the verify-attention kernel from PyTorch (needs torch; the rest of the package
does not).

- `Plan`, `torch.ops.vattn.verify_attention`: the op over a revision library, its plan and
  workspace (torch_op.py); `pack_draft_masks`: dense draft masks -> the ABI's packed words.
- `Recorder`: records chosen calls inside captured CUDA graphs and drains them to case files
  (graph_recorder.py).
- `Shadow`: shadow mode, a second computation on sampled calls judged by the tolerance model on
  the GPU (shadow.py, torch_tolerance.py).
python/README.md ("vattn.torch") documents the op's schema, its refusals and each object.
"""

try:
    import torch as _torch  # noqa: F401  (absolute: PyTorch itself, not this module)
except ImportError as e:
    raise ImportError("vattn.torch needs PyTorch (pip install torch); the rest of the vattn package works "
                      "without it") from e

from .graph_recorder import Recorder, selection_hash
from .shadow import Shadow, bench_idle
from .torch_op import (
    DEFAULT_REVISION,
    DEVICE_ERRORS,
    IN_TREE,
    LIMIT_FIELDS,
    OP_NAME,
    ArgumentError,
    DeviceError,
    Plan,
    check_arguments,
    library_path,
    pack_draft_masks,
    revision_library,
    verify_attention,
)
from .torch_tolerance import Reference, Tolerance, describe, judge_peer, judge_reference, peer_bounds, reference

__all__ = ["Plan", "verify_attention", "check_arguments", "pack_draft_masks", "library_path", "revision_library",
           "ArgumentError", "DeviceError", "DEFAULT_REVISION", "IN_TREE", "LIMIT_FIELDS", "OP_NAME", "DEVICE_ERRORS",
           "Recorder", "selection_hash", "Shadow", "bench_idle", "Tolerance", "Reference", "reference",
           "judge_reference", "judge_peer", "peer_bounds", "describe"]
