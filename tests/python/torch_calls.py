# SPDX-License-Identifier: Apache-2.0
"""Verify-attention calls as torch CPU tensors in the kernel ABI's layout, for the vattn.torch
tests (test_torch_op.py, test_graph_recorder.py, test_shadow.py).

make_call() draws one call: random trees (a padded node among them), a pool whose unreferenced
rows are NaN, requests that share prefix slots, kv_indices over-allocated with entries far
outside the pool (as a server's buffers are), and out/lse computed by the float64 torch
reference rounded to bf16. StaticCall holds capacity-sized tensors and writes successive calls
into them in place, as a CUDA-graph server does between replays.
"""

import numpy as np
import torch


def bf16(x):
    return torch.as_tensor(np.asarray(x, np.float32)).to(torch.bfloat16)


def tree_mask(rng, t, padded=False):
    """A random tree's T x T mask (ancestor-or-self); with padded, the last node is a padding row."""
    parent = [-1] + [int(rng.integers(-1, i)) for i in range(1, t)]
    m = np.zeros((t, t), bool)
    for i in range(t):
        m[i, i] = True
        if parent[i] >= 0:
            m[i] |= m[parent[i]]
    if padded and t > 1:
        m[t - 1] = False
    return m


def make_call(seed, P=(37, 0, 20), T=(5, 1, 33), H=3, n_slots=300, d_qk=576, scale=0.1352, extra_indices=9):
    """One call: a dict of CPU tensors (the op's inputs) plus 'masks' (the dense masks) and
    'sm_scale'. Slots P rows are drawn from rows that hold data; the rest of the pool is NaN."""
    from vattn.torch import pack_draft_masks

    rng = np.random.default_rng(seed)
    pool = rng.normal(0, 0.5, (n_slots, d_qk)).astype(np.float32)
    live = rng.choice(n_slots, max(sum(P), 1) + 5, replace=False)
    dead = np.setdiff1d(np.arange(n_slots), live)
    pool[dead] = np.nan  # unreferenced rows: must change nothing
    idx, first = [], None
    for p in P:
        own = rng.choice(live, p, replace=False)
        if first is not None and p >= 4 and first.size >= 4:
            own[:4] = first[:4]  # a shared prefix: the same slots in two requests
        if p and first is None:
            first = own
        idx.append(own)
    used = np.concatenate(idx) if idx else np.zeros(0, np.int64)
    garbage = rng.integers(10 * n_slots, 20 * n_slots, extra_indices)  # past kv_indptr[B]: anything
    kv_indices = np.concatenate([used, garbage]).astype(np.int32)
    if kv_indices.size == 0:
        kv_indices = np.zeros(1, np.int32)
    masks = [tree_mask(rng, t, padded=(b == 0)) for b, t in enumerate(T)]
    bits, word_indptr = pack_draft_masks(masks)
    n_q = sum(T)
    call = {
        "q": bf16(rng.normal(0, 1, (n_q, H, d_qk))),
        "kv_pool": bf16(pool),
        "kv_indices": torch.as_tensor(kv_indices),
        "kv_indptr": torch.as_tensor(np.concatenate([[0], np.cumsum(P)]).astype(np.int32)),
        "kv_draft": bf16(rng.normal(0, 0.5, (n_q, d_qk))),
        "qo_indptr": torch.as_tensor(np.concatenate([[0], np.cumsum(T)]).astype(np.int32)),
        "mask_bits": bits,
        "mask_word_indptr": word_indptr,
    }
    call["masks"], call["sm_scale"] = masks, scale
    return call


def outputs_of(call, d_v=512):
    """out (bf16) and lse (fp32) from the float64 torch reference, and the Reference itself."""
    from vattn import torch_tolerance as tt

    ix = tt.HostIndex.of(call["kv_indices"], call["kv_indptr"], call["qo_indptr"], call["mask_bits"],
                         call["mask_word_indptr"])
    ref = tt.reference(call["q"], call["kv_pool"], call["kv_draft"], ix, float(np.float32(call["sm_scale"])), d_v)
    return ref.out.to(torch.bfloat16), ref.lse.float(), ref, ix


ARGS = ("q", "kv_pool", "kv_indices", "kv_indptr", "kv_draft", "qo_indptr", "mask_bits", "mask_word_indptr")


class StaticCall:
    """Capacity-sized tensors that successive calls are written into in place (the inputs of a
    captured graph). B is fixed (the indptrs' length); everything else may change."""

    def __init__(self, B, nq_cap, H, n_slots, k_cap, words_cap, d_qk=576, d_v=512):
        z = torch.zeros
        self.t = {"q": z((nq_cap, H, d_qk), dtype=torch.bfloat16), "kv_pool": z((n_slots, d_qk), dtype=torch.bfloat16),
                  "kv_indices": z(k_cap, dtype=torch.int32), "kv_indptr": z(B + 1, dtype=torch.int32),
                  "kv_draft": z((nq_cap, d_qk), dtype=torch.bfloat16), "qo_indptr": z(B + 1, dtype=torch.int32),
                  "mask_bits": z(words_cap, dtype=torch.int32), "mask_word_indptr": z(B + 1, dtype=torch.int64),
                  "out": z((nq_cap, H, d_v), dtype=torch.bfloat16), "lse": z((nq_cap, H), dtype=torch.float32)}

    def load(self, call, out, lse):
        """Writes a call (and its outputs) into the static tensors; rows past it keep stale data."""
        for k in ARGS:
            src = call[k]
            dst = self.t[k]
            if k == "kv_pool":
                dst.copy_(src)
            else:
                dst[: src.shape[0]].copy_(src)
        n = out.shape[0]
        self.t["out"][:n].copy_(out)
        self.t["lse"][:n].copy_(lse)

    def args(self):
        return [self.t[k] for k in ARGS] + [self.t["out"], self.t["lse"]]
