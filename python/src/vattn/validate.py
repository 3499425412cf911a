"""The value rules of docs/case-format.md ("A case: values"), in its order, then the recipe
check: the first broken rule is raised as a CaseFileError naming the case and the field, as
vattn's reader does."""

import numpy as np

from .errors import CaseFileError
from .recipe import mismatch


def validate(c, path=""):
    def err(field, reason):
        raise CaseFileError(path, c.name, field, reason)

    if c.num_heads < 1:
        err("num_heads", f"must be >= 1 (is {c.num_heads})")
    if c.d_qk < 1:
        err("d_qk", f"must be >= 1 (is {c.d_qk})")
    if not 1 <= c.d_v <= c.d_qk:
        err("d_v", f"must be in [1, d_qk = {c.d_qk}] (is {c.d_v})")
    if not (np.isfinite(c.sm_scale) and c.sm_scale > 0):
        err("sm_scale", f"must be finite and > 0 (is {c.sm_scale})")
    qo, kv, mi = (np.asarray(x, dtype=np.int64) for x in (c.qo_indptr, c.kv_indptr, c.draft_mask_indptr))
    if qo.ndim != 1 or len(qo) < 2:
        err("qo_indptr", "needs at least 2 entries (B >= 1)")
    B = len(qo) - 1
    for name, a in (("qo_indptr", qo), ("kv_indptr", kv), ("draft_mask_indptr", mi)):
        if a.ndim != 1 or len(a) != B + 1:
            err(name, f"has {a.size} entries, expected B+1 = {B + 1}")
        if a[0] != 0:
            err(name, f"must start at 0 (starts at {a[0]})")
        down = np.nonzero(np.diff(a) < 0)[0]
        if down.size:
            i = int(down[0])
            err(name, f"decreases at position {i + 1}: {a[i]} then {a[i + 1]}")
    T = np.diff(qo)
    if (T < 1).any():
        err("qo_indptr", f"request {int(np.nonzero(T < 1)[0][0])} has no drafts (every T_b >= 1)")
    n_q, H, dqk = int(qo[-1]), c.num_heads, c.d_qk
    if np.asarray(c.q).size != n_q * H * dqk:
        err("q", f"has {np.asarray(c.q).size} elements, expected n_q x num_heads x d_qk = {n_q * H * dqk}")
    if np.asarray(c.kv_draft).size != n_q * dqk:
        err("kv_draft", f"has {np.asarray(c.kv_draft).size} elements, expected n_q x d_qk = {n_q * dqk}")
    if np.asarray(c.kv_pool).size % dqk:
        err("kv_pool", f"has {np.asarray(c.kv_pool).size} elements, not a whole number of d_qk = {dqk} rows")
    n_rows = np.asarray(c.kv_pool).size // dqk
    idx = np.asarray(c.kv_indices, dtype=np.int64).ravel()
    if idx.size != kv[-1]:
        err("kv_indices", f"has {idx.size} entries, expected kv_indptr[B] = {kv[-1]}")
    bad = np.nonzero((idx < 0) | (idx >= n_rows))[0]
    if bad.size:
        err("kv_indices", f"entry {int(bad[0])} = {idx[bad[0]]} is outside kv_pool ({n_rows} rows)")
    if c.kv_slot_ids is not None:
        s = np.asarray(c.kv_slot_ids, dtype=np.int64).ravel()
        if s.size != n_rows:
            err("kv_slot_ids", f"has {s.size} entries, expected n_rows = {n_rows}")
        if (s < 0).any():
            err("kv_slot_ids", "has a negative slot")
        if np.unique(s).size != s.size:
            err("kv_slot_ids", "holds a slot twice (each stored row comes from its own slot)")
    if not np.array_equal(np.diff(mi), T * T):
        b = int(np.nonzero(np.diff(mi) != T * T)[0][0])
        err("draft_mask_indptr", f"request {b} spans {int(mi[b + 1] - mi[b])} entries, expected T_b^2 = {int(T[b] ** 2)}")
    mask = np.asarray(c.draft_mask).ravel()
    if mask.size != int((T * T).sum()):
        err("draft_mask", f"has {mask.size} entries, expected sum of T_b^2 = {int((T * T).sum())}")
    if ((mask != 0) & (mask != 1)).any():
        err("draft_mask", "entries must be 0 or 1")
    for b in range(B):
        m = mask[mi[b]:mi[b + 1]].reshape(T[b], T[b])
        for i in np.nonzero(np.diag(m) == 0)[0]:
            if m[i].any():
                err("draft_mask", f"request {b} draft {int(i)}: a row with 0 on its diagonal must be all zero (a padded node)")
    if c.draft_parent is not None:
        par = np.asarray(c.draft_parent, dtype=np.int64).ravel()
        if par.size != n_q:
            err("draft_parent", f"has {par.size} entries, expected n_q = {n_q}")
        for b in range(B):
            p = par[qo[b]:qo[b + 1]]
            want = np.zeros((T[b], T[b]), dtype=np.uint8)
            for i in range(T[b]):
                if not (p[i] == -1 or 0 <= p[i] < i):
                    err("draft_parent", f"request {b} node {i}: parent {p[i]} is neither -1 nor in [0, {i})")
                want[i, i] = 1
                if p[i] >= 0:
                    want[i] |= want[p[i]]
            if not np.array_equal(want, mask[mi[b]:mi[b + 1]].reshape(T[b], T[b])):
                err("draft_parent", f"request {b}: the mask the parents give differs from draft_mask")
    for o in c.outputs:
        base = "outputs/" + o.producer
        if np.asarray(o.out).size != n_q * H * c.d_v:
            err(base + "/out", f"has {np.asarray(o.out).size} elements, expected n_q x num_heads x d_v = {n_q * H * c.d_v}")
        if o.lse is None:
            if o.producer == "oracle_fp64":
                err(base + "/lse", "missing: oracle_fp64 always stores lse")
            continue
        if np.asarray(o.lse).size != n_q * H:
            err(base + "/lse", f"has {np.asarray(o.lse).size} elements, expected n_q x num_heads = {n_q * H}")
    # Then, when the case has a recipe: it parses and describes this case's shape (recipe.py).
    why = mismatch(c)
    if why:
        err("recipe", why)
# SPDX-License-Identifier: Apache-2.0
