#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes a case file from this directory's own generator and float64 oracle (no project code).

Each case carries outputs from several producers:
  oracle_fp64        numpy float64 result, stored as float32 (the schema's rule)
  serving_correct    the float64 result rounded to bf16: what a correct kernel returns
  wrong_scaled_head  one head's output x1.03 (a wrong per-head scale)
  wrong_dropped_key  the last prefix key of request 0 left out (an off-by-one loop bound)
  wrong_nan          one NaN in the output (an unmasked tail load)
  wrong_lse          lse + 1e-3 on one draft row (a sloppy LSE merge)
`vattn replay` must pass the first two and fail every wrong_* one.

usage: write_case.py OUT.h5 [--seed N]
"""

import argparse

import numpy as np

import vattn_py as vp

D_QK, D_V = 576, 512
SM_SCALE = 0.1446796


def random_parents(rng, t, padded):
    """Parent uniform among earlier nodes; the last `padded` nodes are graph padding (-2)."""
    real = t - padded
    parents = [-1] + [int(rng.integers(0, i)) for i in range(1, real)]
    return parents + [-2] * padded


def make_case(rng, name, heads, prefix, trees, layout):
    """trees: per request (T_b, padded nodes). layout: 'scattered' (with NaN strays) or 'contiguous'."""
    B = len(prefix)
    drafts = [t for t, _ in trees]
    n_tokens, n_q = sum(prefix), sum(drafts)
    parents = [random_parents(rng, t, pad) for t, pad in trees]
    masks = [vp.mask_from_parents(p) for p in parents]

    def bf16(shape, scale):
        return vp.f32_to_bf16_bits(rng.normal(0.0, scale, size=shape).astype(np.float32))

    # Rows of the pool: each token gets its own row; with 'scattered', rows are a random
    # permutation with NaN-poisoned rows nobody references mixed in.
    extra = 5 if layout == "scattered" else 0
    n_rows = n_tokens + extra
    order = rng.permutation(n_rows) if layout == "scattered" else np.arange(n_rows)
    kv_indices = order[:n_tokens].astype(np.int32)
    kv_pool = np.full((n_rows, D_QK), 0x7FC0, dtype=np.uint16)  # NaN unless referenced
    kv_pool[kv_indices] = bf16((n_tokens, D_QK), 1.0)
    kv_draft = bf16((n_q, D_QK), 1.0)
    q = bf16((n_q, heads, D_QK), 0.4)
    # Padded nodes: nobody sees their KV rows, so those may hold anything.
    offsets = np.concatenate([[0], np.cumsum(drafts)])
    for b, p in enumerate(parents):
        for i, par in enumerate(p):
            if par == -2:
                kv_draft[offsets[b] + i] = 0x7F80  # +Inf
    has_padding = any(pad for _, pad in trees)
    c = vp.Case(name, heads, D_QK, D_V, SM_SCALE, q.ravel(), kv_pool.ravel(), kv_indices,
                np.concatenate([[0], np.cumsum(prefix)]).astype(np.int32), kv_draft.ravel(),
                offsets.astype(np.int32), np.concatenate([m.ravel() for m in masks]).astype(np.uint8),
                np.concatenate([[0], np.cumsum([t * t for t in drafts])]).astype(np.int64),
                kv_slot_ids=np.sort(rng.choice(4 * n_rows + 7, size=n_rows, replace=False)).astype(np.int64)
                if layout == "scattered" else None,
                draft_parent=None if has_padding else np.concatenate(parents).astype(np.int32))
    assert len(c.qo_indptr) == B + 1
    return c


def add_producers(c):
    out, lse, _ = vp.oracle_fp64(c)
    n_q, H = out.shape[0], out.shape[1]
    c.outputs["oracle_fp64"] = (out.astype(np.float32), lse.astype(np.float32),
                                "numpy float64 oracle (tests/python), out stored as float32")
    c.outputs["serving_correct"] = (vp.f32_to_bf16_bits(out.astype(np.float32)), lse.astype(np.float32),
                                    "float64 result rounded to bf16: a correct kernel")

    scaled = out.copy()
    scaled[:, 1, :] *= 1.03
    c.outputs["wrong_scaled_head"] = (vp.f32_to_bf16_bits(scaled.astype(np.float32)), lse.astype(np.float32),
                                      "head 1 scaled by 1.03")

    # Request 0 without its last prefix key: recompute it through the same oracle.
    dropped = vp.Case(c.name, c.num_heads, c.d_qk, c.d_v, c.sm_scale, c.q, c.kv_pool, c.kv_indices.copy(),
                      c.kv_indptr.copy(), c.kv_draft, c.qo_indptr, c.draft_mask, c.draft_mask_indptr)
    last = int(c.kv_indptr[1]) - 1
    dropped.kv_indices = np.delete(dropped.kv_indices, last)
    dropped.kv_indptr = c.kv_indptr - np.array([0] + [1] * c.num_requests, dtype=np.int32)
    d_out, d_lse, _ = vp.oracle_fp64(dropped)
    c.outputs["wrong_dropped_key"] = (vp.f32_to_bf16_bits(d_out.astype(np.float32)), d_lse.astype(np.float32),
                                      "last prefix key of request 0 left out")

    nan = vp.f32_to_bf16_bits(out.astype(np.float32)).reshape(n_q, H, -1)
    nan[min(2, n_q - 1), 0, 7] = 0x7FC0
    c.outputs["wrong_nan"] = (nan, lse.astype(np.float32), "one NaN in out")

    bad_lse = lse.copy()
    bad_lse[1, :] += 1e-3
    c.outputs["wrong_lse"] = (vp.f32_to_bf16_bits(out.astype(np.float32)), bad_lse.astype(np.float32),
                              "lse + 1e-3 on draft row 1")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=2024)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    cases = [
        # A padded node in a request with an empty prefix: its key set is empty (out 0, lse -inf).
        make_case(rng, "py000_tree_scattered", 4, [50, 0, 23], [(6, 0), (3, 1), (4, 0)], "scattered"),
        make_case(rng, "py001_chain_contiguous", 2, [200, 7], [(16, 0), (1, 0)], "contiguous"),
    ]
    for c in cases:
        add_producers(c)
    vp.write_case_file(args.out, cases, source="synthetic:python-independent",
                       generator="tests/python/write_case.py (numpy float64)",
                       notes="independent implementation of the schema and the contract")
    print(f"wrote {args.out}: {len(cases)} cases, producers {sorted(cases[0].outputs)}")


if __name__ == "__main__":
    main()
