# SPDX-License-Identifier: Apache-2.0
"""The draft mask in the kernel ABI's packed form (docs/verify-attention.md), with numpy only.

Row i of request b is ceil(T_b/32) 32-bit words starting at word mask_word_indptr[b] + i *
ceil(T_b/32); draft j is bit j % 32 of word j / 32. Case files keep the mask dense (one byte per
entry, request by request); these two functions convert between the forms, as the C++ side's
pack_mask_bits (vattn/gpu/device_case.cpp) does, so that what vattn.torch runs and what a
recorder stores describe the same visibility.
"""

import numpy as np


def words_per_row(t):
    return (int(t) + 31) // 32


def pack(dense, draft_mask_indptr, qo_indptr):
    """Dense per-request T_b x T_b masks (flat uint8/bool, request by request) -> (bits uint32,
    word_indptr int64 [B+1])."""
    dense = np.asarray(dense).ravel().astype(bool)
    mi = np.asarray(draft_mask_indptr, dtype=np.int64)
    T = np.diff(np.asarray(qo_indptr, dtype=np.int64))
    words = [words_per_row(t) for t in T]
    word_indptr = np.concatenate([[0], np.cumsum(T * np.asarray(words, dtype=np.int64))]).astype(np.int64)
    bits = np.zeros(int(word_indptr[-1]), dtype=np.uint32)
    for b, t in enumerate(T):
        t, w = int(t), words[b]
        m = dense[mi[b]:mi[b] + t * t].reshape(t, t)
        for i in range(t):
            for j in np.nonzero(m[i])[0]:
                bits[word_indptr[b] + i * w + j // 32] |= np.uint32(1) << np.uint32(j % 32)
    return bits, word_indptr


def unpack(bits, word_indptr, qo_indptr):
    """(bits, word_indptr) -> (dense uint8 0/1, draft_mask_indptr int64). Raises ValueError
    naming the request when a request's words are not T_b * ceil(T_b/32), or run past `bits`:
    a mask the kernel would refuse (VATTN_DEVERR_MASK) cannot be stored either."""
    a = np.ascontiguousarray(bits).ravel()
    bits = a.view(np.uint32) if a.dtype == np.int32 else a.astype(np.uint32)  # int32: the same bits
    wi = np.asarray(word_indptr, dtype=np.int64)
    T = np.diff(np.asarray(qo_indptr, dtype=np.int64))
    dense, indptr = [], [0]
    for b, t in enumerate(T):
        t = int(t)
        w = words_per_row(t)
        if wi[b + 1] - wi[b] != t * w:
            raise ValueError(f"request {b}: mask_word_indptr spans {int(wi[b + 1] - wi[b])} words, expected "
                             f"T_b * ceil(T_b/32) = {t * w}")
        if wi[b] < 0 or wi[b + 1] > bits.size:
            raise ValueError(f"request {b}: mask words [{int(wi[b])}, {int(wi[b + 1])}) run past the {bits.size} "
                             "words of mask_bits")
        rows = bits[wi[b]:wi[b + 1]].reshape(t, w)
        # Bit j of a row: word j // 32, bit j % 32 (little-endian bit order within a word).
        expanded = ((rows[:, :, None] >> np.arange(32, dtype=np.uint32)) & 1).reshape(t, w * 32)[:, :t]
        dense.append(expanded.astype(np.uint8).ravel())
        indptr.append(indptr[-1] + t * t)
    return (np.concatenate(dense) if dense else np.zeros(0, np.uint8)), np.asarray(indptr, dtype=np.int64)
