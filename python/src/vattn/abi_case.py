# SPDX-License-Identifier: Apache-2.0
"""One call of the kernel ABI (kernels/vattn_abi.h), as host arrays, made into a case.

The recorder (graph_recorder.py) and shadow mode (shadow.py) both hold a call the way the
kernel received it: q, the pool rows its kv_indices name (gathered in index order, so a row
shared by two requests comes twice), the packed draft mask and the outputs. A case file keeps
each referenced pool row once, with its slot in kv_slot_ids, and the mask dense: this module
does that conversion, once, for both.
"""

import numpy as np

from . import maskbits
from .casefile import Case


def case_from_abi(name, sm_scale, q, gathered_rows, kv_indices, kv_indptr, kv_draft, qo_indptr, mask_bits,
                  mask_word_indptr, outputs, int_attrs, d_v=512):
    """q [n_q, H, d_qk] and kv_draft [n_q, d_qk] as bf16 bits (uint16); gathered_rows
    [kv_indptr[B], d_qk] bf16 bits: the pool row of each kv_indices entry, in that order;
    kv_indices the pool slots themselves (int); outputs: casefile.Output list. Raises ValueError
    naming the field when the arrays cannot form a case (the writer's validate() then checks
    the rest with the reader's rules)."""
    q = np.asarray(q, dtype=np.uint16)
    if q.ndim != 3:
        raise ValueError(f"q: expected [n_q, H, d_qk], got shape {q.shape}")
    n_q, H, d_qk = q.shape
    kv_indptr = np.asarray(kv_indptr, dtype=np.int64)
    used = int(kv_indptr[-1])
    idx = np.asarray(kv_indices, dtype=np.int64).ravel()
    rows = np.asarray(gathered_rows, dtype=np.uint16).reshape(-1, d_qk)
    if idx.size < used or rows.shape[0] < used:
        raise ValueError(f"kv_indices: kv_indptr[B] = {used} entries needed, {idx.size} indices and {rows.shape[0]} "
                         "rows held")
    idx, rows = idx[:used], rows[:used]
    # Each distinct slot once, in slot order; kv_indices then address those rows.
    slots, first, inverse = np.unique(idx, return_index=True, return_inverse=True)
    try:
        dense, dense_indptr = maskbits.unpack(mask_bits, mask_word_indptr, qo_indptr)
    except ValueError as e:
        raise ValueError(f"mask_bits: {e}") from None
    return Case(name=name, num_heads=int(H), sm_scale=float(sm_scale), q=q, kv_pool=rows[first].reshape(-1, d_qk),
                kv_indices=inverse.astype(np.int32).ravel(), kv_indptr=kv_indptr.astype(np.int32),
                kv_draft=np.asarray(kv_draft, dtype=np.uint16).reshape(n_q, d_qk),
                qo_indptr=np.asarray(qo_indptr, dtype=np.int32), draft_mask=dense, draft_mask_indptr=dense_indptr,
                d_qk=int(d_qk), d_v=int(d_v), kv_slot_ids=slots.astype(np.int64), int_attrs=dict(int_attrs),
                outputs=list(outputs))
