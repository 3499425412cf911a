"""bf16 as raw uint16 bits (numpy has no bfloat16), and views for ml_dtypes."""

import numpy as np


def bf16_to_float32(bits):
    """uint16 bf16 bit patterns -> float32, exactly."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def float32_to_bf16(x):
    """float32 -> bf16 bits, rounding to nearest even; NaN stays a (quiet) NaN."""
    x = np.ascontiguousarray(np.asarray(x, dtype=np.float32))
    u = x.view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(x), np.uint16(0x7FC0), rounded)


def bf16_view(bits):
    """The bits as an ml_dtypes.bfloat16 array (no copy); needs `pip install ml_dtypes`."""
    try:
        import ml_dtypes
    except ImportError as e:
        raise ImportError("bf16_view needs ml_dtypes (pip install ml_dtypes); the data stays uint16 bits without it") from e
    return np.asarray(bits, dtype=np.uint16).view(ml_dtypes.bfloat16)
# SPDX-License-Identifier: Apache-2.0
