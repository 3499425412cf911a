# SPDX-License-Identifier: Apache-2.0
"""An independent implementation of the verify-attention contract and the case-file schema.

Written from docs/verify-attention.md and docs/case-format.md only, with numpy
(float64) and h5py; it shares no code with the C++ project, so a bug in one side's addressing,
masking or file handling shows up as a disagreement instead of passing unseen.
"""

import datetime

import h5py
import numpy as np

FORMAT_NAME = "vattn-cases"
FORMAT_VERSION = 1


# --- bf16 as raw bits (numpy has no bf16 type) -------------------------------------------------

def bf16_bits_to_f32(bits):
    """uint16 bf16 bit patterns -> float32 (exact)."""
    bits = np.asarray(bits, dtype=np.uint16)
    return (bits.astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16_bits(x):
    """float32 -> bf16 bits, round to nearest even; NaN stays NaN (quiet)."""
    x = np.ascontiguousarray(np.asarray(x, dtype=np.float32))
    u = x.view(np.uint32).astype(np.uint64)
    nan = np.isnan(x)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    quiet = ((u >> 16) | 0x40).astype(np.uint16)
    return np.where(nan, quiet, rounded).astype(np.uint16)


def round_to_bf16(x):
    return bf16_bits_to_f32(f32_to_bf16_bits(x))


# --- the contract, in float64 ------------------------------------------------------------------

class Case:
    """One verify call with numpy arrays named as in the schema (bf16 fields kept as bits)."""

    def __init__(self, name, num_heads, d_qk, d_v, sm_scale, q, kv_pool, kv_indices, kv_indptr, kv_draft,
                 qo_indptr, draft_mask, draft_mask_indptr, kv_slot_ids=None, draft_parent=None, recipe=None):
        self.name = name
        self.num_heads, self.d_qk, self.d_v, self.sm_scale = int(num_heads), int(d_qk), int(d_v), float(sm_scale)
        self.q, self.kv_pool, self.kv_draft = q, kv_pool, kv_draft
        self.kv_indices, self.kv_indptr, self.qo_indptr = kv_indices, kv_indptr, qo_indptr
        self.draft_mask, self.draft_mask_indptr = draft_mask, draft_mask_indptr
        self.kv_slot_ids, self.draft_parent, self.recipe = kv_slot_ids, draft_parent, recipe
        self.outputs = {}  # producer -> (out array, lse array, description)

    @property
    def num_requests(self):
        return len(self.qo_indptr) - 1

    def mask(self, b):
        t = int(self.qo_indptr[b + 1] - self.qo_indptr[b])
        start = int(self.draft_mask_indptr[b])
        return self.draft_mask[start:start + t * t].reshape(t, t)


def oracle_fp64(c):
    """out [n_q, H, d_v] float64, lse [n_q, H] float64, abs_pv [n_q, H, d_v]: sum_k p_k |v_k|."""
    n_q, H = int(c.qo_indptr[-1]), c.num_heads
    q = bf16_bits_to_f32(c.q).astype(np.float64).reshape(n_q, H, c.d_qk)
    pool = bf16_bits_to_f32(c.kv_pool).astype(np.float64).reshape(-1, c.d_qk)
    draft = bf16_bits_to_f32(c.kv_draft).astype(np.float64).reshape(n_q, c.d_qk)
    out = np.zeros((n_q, H, c.d_v))
    abs_pv = np.zeros((n_q, H, c.d_v))
    lse = np.full((n_q, H), -np.inf)
    with np.errstate(invalid="ignore", over="ignore"):  # poisoned query rows give NaN by contract
        _fill_oracle(c, q, pool, draft, out, lse, abs_pv)
    return out, lse, abs_pv


def _fill_oracle(c, q, pool, draft, out, lse, abs_pv):
    for b in range(c.num_requests):
        prefix_rows = c.kv_indices[c.kv_indptr[b]:c.kv_indptr[b + 1]]
        prefix = pool[prefix_rows]
        q0 = int(c.qo_indptr[b])
        m = c.mask(b)
        for i in range(m.shape[0]):
            # Select the visible keys first: masked rows may hold NaN, and 0 * NaN would leak.
            keys = np.concatenate([prefix, draft[q0 + np.flatnonzero(m[i])]], axis=0)
            if keys.shape[0] == 0:
                continue  # empty key set: out 0, lse -inf
            s = c.sm_scale * (q[q0 + i] @ keys.T)  # [H, n_keys]
            top = s.max(axis=1, keepdims=True)
            e = np.exp(s - top)
            total = e.sum(axis=1, keepdims=True)
            p = e / total
            values = keys[:, :c.d_v]
            out[q0 + i] = p @ values
            abs_pv[q0 + i] = p @ np.abs(values)
            lse[q0 + i] = (top + np.log(total))[:, 0]


def mask_from_parents(parents):
    """Dense T x T mask from parent links (-1 root, -2 padded node that sees nothing)."""
    t = len(parents)
    m = np.zeros((t, t), dtype=np.uint8)
    for i in range(t):
        if parents[i] == -2:
            continue
        j = i
        while j >= 0:
            m[i, j] = 1
            j = parents[j]
    return m


# --- files -------------------------------------------------------------------------------------

def _bf16_dataset(group, name, bits, shape):
    ds = group.create_dataset(name, data=np.asarray(bits, dtype=np.uint16).reshape(shape),
                              chunks=True if np.prod(shape) > 0 else None,
                              compression="gzip" if np.prod(shape) > 0 else None,
                              shuffle=bool(np.prod(shape) > 0))
    ds.attrs["dtype"] = "bfloat16"
    return ds


def write_case_file(path, cases, source, generator, notes=None):
    with h5py.File(path, "w") as f:
        f.attrs["format"] = FORMAT_NAME
        f.attrs["format_version"] = np.int32(FORMAT_VERSION)
        f.attrs["source"] = source
        f.attrs["created"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        f.attrs["generator"] = generator
        if notes:
            f.attrs["notes"] = notes
        root = f.create_group("cases")
        for c in cases:
            n_q, H = int(c.qo_indptr[-1]), c.num_heads
            g = root.create_group(c.name)
            g.attrs["num_heads"] = np.int32(H)
            g.attrs["d_qk"] = np.int32(c.d_qk)
            g.attrs["d_v"] = np.int32(c.d_v)
            g.attrs["sm_scale"] = np.float64(c.sm_scale)
            g.attrs["num_requests"] = np.int32(c.num_requests)
            if c.recipe:
                g.attrs["recipe"] = c.recipe
            _bf16_dataset(g, "q", c.q, (n_q, H, c.d_qk))
            _bf16_dataset(g, "kv_pool", c.kv_pool, (-1, c.d_qk))
            _bf16_dataset(g, "kv_draft", c.kv_draft, (n_q, c.d_qk))
            g.create_dataset("kv_indices", data=np.asarray(c.kv_indices, dtype=np.int32))
            g.create_dataset("kv_indptr", data=np.asarray(c.kv_indptr, dtype=np.int32))
            g.create_dataset("qo_indptr", data=np.asarray(c.qo_indptr, dtype=np.int32))
            g.create_dataset("draft_mask", data=np.asarray(c.draft_mask, dtype=np.uint8))
            g.create_dataset("draft_mask_indptr", data=np.asarray(c.draft_mask_indptr, dtype=np.int64))
            if c.kv_slot_ids is not None:
                g.create_dataset("kv_slot_ids", data=np.asarray(c.kv_slot_ids, dtype=np.int64))
            if c.draft_parent is not None:
                g.create_dataset("draft_parent", data=np.asarray(c.draft_parent, dtype=np.int32))
            for producer, (out, lse, description) in c.outputs.items():
                og = g.create_group("outputs/" + producer)
                og.attrs["description"] = description
                if out.dtype == np.uint16:
                    _bf16_dataset(og, "out", out, (n_q, H, c.d_v))
                else:
                    og.create_dataset("out", data=np.asarray(out, dtype=np.float32).reshape(n_q, H, c.d_v))
                og.create_dataset("lse", data=np.asarray(lse, dtype=np.float32).reshape(n_q, H))


def _text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def read_case_file(path):
    """(header dict, [Case]) with outputs as float arrays (bf16 widened)."""
    with h5py.File(path, "r") as f:
        header = {k: (_text(v) if not isinstance(v, (np.integer, int)) else int(v)) for k, v in f.attrs.items()}
        cases = []
        for name in sorted(f["cases"].keys()):
            g = f["cases"][name]
            a = g.attrs
            opt = lambda key, g=g: g[key][()] if key in g else None  # noqa: E731
            c = Case(name, a["num_heads"], a["d_qk"], a["d_v"], a["sm_scale"],
                     g["q"][()].ravel(), g["kv_pool"][()].ravel(), g["kv_indices"][()], g["kv_indptr"][()],
                     g["kv_draft"][()].ravel(), g["qo_indptr"][()], g["draft_mask"][()], g["draft_mask_indptr"][()],
                     kv_slot_ids=opt("kv_slot_ids"), draft_parent=opt("draft_parent"),
                     recipe=_text(a["recipe"]) if "recipe" in a else None)
            if "outputs" in g:
                for producer in g["outputs"]:
                    og = g["outputs"][producer]
                    out = og["out"][()]
                    if out.dtype == np.uint16:
                        out = bf16_bits_to_f32(out)
                    c.outputs[producer] = (out.astype(np.float64), og["lse"][()].astype(np.float64),
                                           _text(og.attrs.get("description", "")))
            cases.append(c)
    return header, cases
