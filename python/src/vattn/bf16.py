"""bf16 as raw uint16 bits (numpy has no bfloat16), and views for ml_dtypes."""

import numpy as np


def bf16_to_float32(bits):
    """uint16 bf16 bit patterns -> float32, exactly."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def float32_to_bf16(x):
    """float32 -> bf16 bits, rounding to nearest even; NaN stays a (quiet) NaN."""
    x = np.asarray(x, dtype=np.float32)
    u = np.ascontiguousarray(x).view(np.uint32).astype(np.uint64).reshape(x.shape)
    # uint64 operands throughout: numpy 1.x turns a 0-d uint64 combined with a Python int into a float.
    one, half, shift = np.uint64(1), np.uint64(0x7FFF), np.uint64(16)
    rounded = ((u + half + ((u >> shift) & one)) >> shift).astype(np.uint16)
    return np.where(np.isnan(x), np.uint16(0x7FC0), rounded)


def float64_to_bf16(x):
    """float64 -> bf16 bits, rounding to nearest even from the float64 value itself.

    float64 -> float32 -> bf16 would round twice and can land on the wrong side of a bf16
    halfway point (a value just above it rounds down to the float32 halfway value, then to even).
    Rounding to float32 toward zero with the last bit set when inexact ("round to odd") keeps that
    information: 24 bits are more than bf16's 8 + 2, so the second rounding is then exact RNE."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(over="ignore"):
        f = np.ascontiguousarray(x.astype(np.float32)).reshape(x.shape)
    back = f.astype(np.float64)
    inexact = np.isfinite(x) & (back != x)
    # float32 magnitudes order as their low 31 bits: one step down is one ulp toward zero (inf
    # from an overflow becomes the largest finite float32).
    toward_zero = (inexact & (np.abs(back) > np.abs(x))).astype(np.uint32)
    u = (f.view(np.uint32) - toward_zero) | inexact.astype(np.uint32)
    return float32_to_bf16(u.view(np.float32))


def bf16_view(bits):
    """The bits as an ml_dtypes.bfloat16 array (no copy); needs `pip install ml_dtypes`."""
    try:
        import ml_dtypes
    except ImportError as e:
        raise ImportError("bf16_view needs ml_dtypes (pip install ml_dtypes); the data stays uint16 bits without it") from e
    return np.asarray(bits, dtype=np.uint16).view(ml_dtypes.bfloat16)
# SPDX-License-Identifier: Apache-2.0
