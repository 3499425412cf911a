# SPDX-License-Identifier: Apache-2.0
"""What the writer accepts for each kind of field, and what the file then stores.

`vattn.write` and `vattn.capture` both go through these functions, so a capture and a hand-made
file follow one rule set. Nothing is cast silently: numpy's `astype(uint16)` turns float32
values into small integers (0.7 -> 0, -1.5 -> 65535) that are then read as bf16 bits, which is
how a file ends up all zeros or NaN. So a value is either taken exactly or refused with the field
named:
- bf16 fields (q, kv_pool, kv_draft, every `out` but oracle_fp64's): uint16 bits as they are;
  an `ml_dtypes.bfloat16` array or a torch bfloat16 tensor by its bits; float16/32/64 (numpy or
  torch) only with convert=True, rounded to nearest even from the value itself.
- integer fields: any integer array whose every value fits the stored type (int32 or int64;
  uint8 for draft_mask, which also takes bool).
- float32 fields (oracle_fp64's out, every lse): float16/32/64, rounded to float32 as vattn stores
  its float64 oracle; never integers or bf16 bits.
torch and ml_dtypes are optional: a torch tensor is recognised by its type's module and torch is
imported only then; an ml_dtypes array by its dtype's name."""

from __future__ import annotations

from typing import Any

import numpy as np

from .bf16 import float32_to_bf16, float64_to_bf16
from .errors import CaseFileError

_BF16_HOW = ("bf16 data is uint16 bits, an ml_dtypes.bfloat16 array or a torch.bfloat16 tensor")


def _refuse(field: str, reason: str):
    raise CaseFileError("", "", field, "cannot write: " + reason)


def is_torch(x: Any) -> bool:
    return type(x).__module__.split(".")[0] == "torch"


def _from_torch(x: Any, field: str) -> tuple[np.ndarray, bool]:
    """(host numpy array, whether it holds bf16 bits); a bf16 tensor goes over as its bits."""
    import torch

    t = x.detach()
    if t.dtype == torch.bfloat16:
        return t.contiguous().view(torch.int16).to("cpu").numpy().view(np.uint16), True
    try:
        return t.to("cpu").numpy(), False
    except (TypeError, RuntimeError) as e:  # a dtype numpy has no counterpart for (float8, ...)
        _refuse(field, f"a torch tensor of {t.dtype} has no numpy form ({e})")


def _numpy(x: Any, field: str) -> tuple[np.ndarray, bool]:
    if is_torch(x):
        return _from_torch(x, field)
    a = np.asarray(x)
    # ml_dtypes.bfloat16 (and any other numpy extension type of that name): its bits, exactly.
    if a.dtype.name == "bfloat16" and a.dtype.itemsize == 2:
        return a.view(np.uint16), True
    return a, False


def bf16_bits(x: Any, field: str, convert: bool = False) -> np.ndarray:
    """A bf16 field's values as uint16 bits (a new C-contiguous array, native byte order).

    x: uint16 bits, an ml_dtypes.bfloat16 array, a torch bfloat16 tensor (any device), or with
    convert=True float16/float32/float64 values (numpy or torch), rounded to nearest even. Anything
    else raises CaseFileError naming `field`."""
    a, is_bits = _numpy(x, field)
    if is_bits or (a.dtype.kind == "u" and a.dtype.itemsize == 2):  # either byte order
        return np.ascontiguousarray(a, dtype=np.uint16)
    if a.dtype.kind == "f" and a.dtype.itemsize in (2, 4, 8):
        if not convert:
            _refuse(field, f"{a.dtype.name} values given, but {_BF16_HOW}; float values are rounded to bf16 "
                           "(nearest even) only when asked: vattn.write(..., convert=True)")
        if a.dtype.itemsize == 8:
            return np.ascontiguousarray(float64_to_bf16(a))
        return np.ascontiguousarray(float32_to_bf16(a.astype(np.float32)))  # float16 -> float32 is exact
    _refuse(field, f"{a.dtype.name} given, but {_BF16_HOW} (or float32/float64 with convert=True)")


def int_array(x: Any, field: str, dtype: type) -> np.ndarray:
    """An integer field (int32, int64, or uint8 for draft_mask) as that type, every value kept."""
    a, is_bits = _numpy(x, field)
    want = np.dtype(dtype)
    if a.size == 0 and not is_bits:  # np.asarray([]) is float64: an empty list loses nothing
        return np.zeros(a.shape, dtype=want)
    if is_bits or not (a.dtype.kind in "iu" or (a.dtype.kind == "b" and want == np.uint8)):
        _refuse(field, f"expected integers ({want.name}), found {'bfloat16' if is_bits else a.dtype.name}")
    if a.dtype.kind in "iu":
        info = np.iinfo(want)
        lo, hi = int(a.min()), int(a.max())
        if lo < info.min or hi > info.max:
            bad = lo if lo < info.min else hi
            _refuse(field, f"value {bad} does not fit {want.name}")
    return np.ascontiguousarray(a, dtype=want)


def float32_array(x: Any, field: str) -> np.ndarray:
    """A float32 field (oracle_fp64's out, lse): float16/32/64 values, rounded to float32."""
    a, is_bits = _numpy(x, field)
    if a.size == 0 and not is_bits:
        return np.zeros(a.shape, dtype=np.float32)
    if is_bits or a.dtype.kind != "f" or a.dtype.itemsize not in (2, 4, 8):
        found = "bfloat16" if is_bits else a.dtype.name
        _refuse(field, f"expected float32 values, found {found}" +
                (" (bf16 bits are stored only for producers other than oracle_fp64)" if found in ("bfloat16", "uint16")
                 else ""))
    with np.errstate(over="ignore"):  # a float64 beyond float32's range is inf in float32, as vattn stores it
        return np.ascontiguousarray(a, dtype=np.float32)
