# SPDX-License-Identifier: Apache-2.0
"""Greedy tree speculative decoding on a DeepSeek-V3-architecture model, with the verify step's
attention either transformers' own or vattn's kernel in the absorbed form (needs torch and
transformers). The pieces of scripts/device/model_loop.py, which runs the loop both ways and
compares them; tests/python/test_model_loop.py runs that script on the CPU.

- build_model: transformers' DeepseekV3ForCausalLM with K2.6's attention as one TP8 rank sees it,
  random weights from a seed.
- Drafter, Trees, walk: a tree of drafts per request and step, and greedy acceptance in it.
- ReferenceBackend (the layer's own forward over a LatentCache) and VattnBackend (mla_absorb's
  projections around a vattn.torch Plan, or on the CPU the float64 reference in its place): the
  two attentions behind one verify_forward, which is the decoder layers' own order.
- Runner: one backend's step over fixed tensors, captured in a CUDA graph and replayed.
- prefill, state_forward, logit_bound: a prompt's cache; a step on a given state, eagerly; the
  logits bound of the loop's check (docs in python/README.md, "Verify attention from a DeepSeek-V3
  model").
"""

import numpy as np
import torch

from . import torch_tolerance as tt
from .mla_absorb import AbsorbedAttention, LatentCache, additive_mask, layer_attention, tree_mask
from .torch_op import pack_draft_masks

U_BF16 = 2.0 ** -8   # vattn/check/tolerance.h: Tolerance.unit
MAX_RATIO = 2.0      # vattn/check/tolerance.h: Tolerance.max_ratio (FlashAttention's criterion)
# Kimi K2.6's RoPE (its config.json's rope_scaling), in transformers 5's rope_parameters form.
K26_ROPE = {"rope_type": "yarn", "rope_theta": 50000.0, "factor": 32.0, "original_max_position_embeddings": 4096,
            "beta_fast": 1.0, "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0}
# K2.6's attention as one rank of TP8 holds it (64 heads / 8).
K26_ATTENTION = {"num_attention_heads": 8, "num_key_value_heads": 8, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
                 "qk_nope_head_dim": 128, "v_head_dim": 128}


def build_model(*, seed, layers, hidden, q_lora_rank, intermediate, vocab, embed_std=1.0, successor=0.7,
                max_positions=131072, dtype=torch.bfloat16, device="cpu"):
    """(config, model): DeepseekV3ForCausalLM with K2.6's attention geometry and RoPE, dense MLPs in
    every layer (a MoE's routing does not touch attention), weights drawn after
    torch.manual_seed(seed) by transformers' own initialisation (normal, std 0.04), then two
    changes. A random model's logits are Gaussian: its top two are often within bf16 noise of each
    other, and nothing predicts its next token. So the token embeddings get std embed_std (the
    residual stream then carries its token), and each token x a planted successor: lm_head's row
    of succ(x), a fixed random permutation, gains successor * E[x] / |E[x]|. The model then
    decides more as a trained one does, and a drafter can be right."""
    from transformers import DeepseekV3Config, DeepseekV3ForCausalLM

    config = DeepseekV3Config(
        vocab_size=vocab, hidden_size=hidden, intermediate_size=intermediate, num_hidden_layers=layers,
        q_lora_rank=q_lora_rank, first_k_dense_replace=layers, max_position_embeddings=max_positions,
        rope_parameters=dict(K26_ROPE), rope_interleave=True, initializer_range=0.04, tie_word_embeddings=False,
        attn_implementation="sdpa", **K26_ATTENTION)
    torch.manual_seed(seed)
    model = DeepseekV3ForCausalLM(config).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.requires_grad_(False)
        emb = model.model.embed_tokens.weight
        emb.normal_(0.0, embed_std, generator=torch.Generator().manual_seed(seed + 1))
        succ = torch.randperm(vocab, generator=torch.Generator().manual_seed(seed + 2))
        model.lm_head.weight[succ] += successor * emb / emb.norm(dim=1, keepdim=True)
    return config, model.to(device=device, dtype=dtype)


def verify_forward(model, backend, tokens, positions, head=True):
    """The model on one step's tokens [B, T] at positions [B, T], attention by backend, in the
    decoder layer's own order (DeepseekV3DecoderLayer.forward); then the final norm and lm_head
    (logits [B, T, V]) when head."""
    mm = model.model
    h = mm.embed_tokens(tokens)
    cos, sin = mm.rotary_emb(h, positions)
    for l, layer in enumerate(mm.layers):
        h = h + backend.attend(l, layer.self_attn, layer.input_layernorm(h), cos, sin)
        h = h + layer.mlp(layer.post_attention_layernorm(h))
    return model.lm_head(mm.norm(h)) if head else None


# ---- drafting and acceptance ---------------------------------------------------------------------------
class Trees:
    """One step's trees, request by request: tokens [B, T] and depths [B, T] (numpy), parents and
    the dense ancestor-or-self masks (lists)."""

    def __init__(self, per_request):
        self.tokens = np.array([t for t, _, _ in per_request], dtype=np.int64)
        self.parents = [list(p) for _, p, _ in per_request]
        self.depth = np.array([d for _, _, d in per_request], dtype=np.int64)
        self.masks = [tree_mask(p) for p in self.parents]

    def same(self, other):
        return np.array_equal(self.tokens, other.tokens) and self.parents == other.parents


class Drafter:
    """A tree of T tokens per request from the request's own text: the root is its last token; then
    the continuations of its last 3, 2 and 1 tokens found earlier in the text (the most recent four
    of each); then the chain of the model's zero-layer predictions (lm_head(norm(embed(token))),
    top-k computed once) from the root; then, breadth first, each node's top-k of them; never more
    than `depth` below the root. Deterministic in
    the text, so two loops draft the same trees while their texts agree."""

    def __init__(self, model, T, depth, k=4):
        mm = model.model
        emb = mm.embed_tokens.weight
        with torch.no_grad():
            top = [torch.topk(model.lm_head(mm.norm(emb[i:i + 1024])).float(), k, dim=-1).indices
                   for i in range(0, emb.shape[0], 1024)]
        self.successors = torch.cat(top).cpu().numpy().astype(np.int64)
        self.T, self.depth = int(T), int(depth)

    def tree(self, seq):
        """(tokens, parents, depths) of the tree rooted at seq[-1]."""
        toks, parents, depth, children = [int(seq[-1])], [-1], [0], [{}]

        def add(parent, tok):
            if tok in children[parent]:
                return children[parent][tok]
            if len(toks) >= self.T or depth[parent] >= self.depth:
                return None
            toks.append(tok)
            parents.append(parent)
            depth.append(depth[parent] + 1)
            children.append({})
            children[parent][tok] = len(toks) - 1
            return len(toks) - 1

        arr = np.asarray(seq, dtype=np.int64)
        for n in (3, 2, 1):
            if len(arr) <= n:
                continue
            windows = np.lib.stride_tricks.sliding_window_view(arr[:-1], n)
            starts = np.nonzero((windows == arr[-n:]).all(axis=1))[0][::-1][:4] + n  # the continuations
            for s in starts:
                node = 0
                for tok in arr[s:s + self.depth]:
                    node = add(node, int(tok))
                    if node is None:
                        break
        node = 0  # the zero-layer prediction's greedy chain, then its alternatives breadth first
        while node is not None:
            node = add(node, int(self.successors[toks[node], 0]))
        i = 0
        while len(toks) < self.T and i < len(toks):
            for tok in self.successors[toks[i]]:
                add(i, int(tok))
            i += 1
        if len(toks) < self.T:
            raise ValueError(f"the drafter found {len(toks)} of {self.T} nodes within depth {self.depth}")
        return toks, parents, depth


def walk(tokens, parents, argmax):
    """Greedy acceptance in one request's tree: from the root, follow the child whose token is the
    target's argmax at the current node. Returns the path (node indices, the root first: the nodes
    whose rows the cache keeps) and the accepted tokens (the path's drafts, then the argmax at its
    last node)."""
    node, path = 0, [0]
    while True:
        want = int(argmax[node])
        nxt = next((j for j in range(len(tokens)) if parents[j] == node and int(tokens[j]) == want), None)
        if nxt is None:
            break
        node = nxt
        path.append(node)
    return path, [int(tokens[j]) for j in path[1:]] + [int(argmax[node])]


# ---- the two attentions --------------------------------------------------------------------------------------
class ReferenceBackend:
    """transformers' attention (each layer's own forward) over a LatentCache with prefix_cap slots
    per request: the step has one size whatever the prefix lengths (the additive mask hides the
    unused slots), so it can be captured in a CUDA graph."""

    recorder = None

    def __init__(self, model, B, T, prefix_cap, dtype, device):
        cfg = model.config
        self.B, self.T = B, T
        self.cache = LatentCache(cfg.num_hidden_layers, B, prefix_cap, T, cfg.kv_lora_rank, cfg.qk_rope_head_dim, dtype,
                                 device)
        self.mask = torch.zeros((B, 1, T, prefix_cap + T), dtype=dtype, device=device)

    def load(self, lens, masks):
        additive_mask(self.mask, lens, self.cache.prefix_cap, masks)

    def attend(self, l, attn, x, cos, sin):
        return layer_attention(attn, x, cos, sin, self.mask, self.cache)

    def commit(self, b, start, nodes):
        self.cache.commit(b, start, torch.as_tensor(nodes, device=self.mask.device))

    def set_prefix(self, l, b, rows):
        self.cache.set_rows(l, b, 0, rows)


class VattnBackend:
    """The absorbed form around the kernel. Per layer: q [B*T, H, 576], the step's rows (the
    kernel's kv_draft), out and lse in fixed tensors; a pool of latent+rope rows whose slots are a
    fixed permutation (request b's token i lives in slot slots[b, i], so the pool is scattered as a
    server's is); the index arrays, written by load() before each replay. plan: a vattn.torch Plan
    (CUDA), or None on the CPU, where the float64 reference rounded to bf16 stands in for the kernel.
    recorder: a vattn.torch Recorder that records every call (in the graph when captured)."""

    def __init__(self, model, B, T, slots, plan, device, recorder=None):
        self.B, self.T, self.plan, self.recorder = B, T, plan, recorder
        self.absorbed = [AbsorbedAttention(layer.self_attn) for layer in model.model.layers]
        a0 = self.absorbed[0]
        self.H, self.d_qk, self.d_v, self.sm_scale = a0.num_heads, a0.d_qk, a0.d_v, a0.sm_scale
        L, n, bf = len(self.absorbed), B * T, torch.bfloat16
        z = torch.zeros
        self.q = [z((n, self.H, self.d_qk), dtype=bf, device=device) for _ in range(L)]
        self.draft = [z((n, self.d_qk), dtype=bf, device=device) for _ in range(L)]
        self.out = [z((n, self.H, self.d_v), dtype=bf, device=device) for _ in range(L)]
        self.lse = [z((n, self.H), dtype=torch.float32, device=device) for _ in range(L)]
        self.slots = np.asarray(slots, dtype=np.int64)  # [B, prefix capacity]
        self.pool = [z((int(self.slots.max()) + 1, self.d_qk), dtype=bf, device=device) for _ in range(L)]
        self.kv_indices = z(self.slots.size, dtype=torch.int32, device=device)
        self.kv_indptr = z(B + 1, dtype=torch.int32, device=device)
        self.qo_indptr = torch.arange(0, n + 1, T, dtype=torch.int32, device=device)
        self.mask_bits = z(B * T * ((T + 31) // 32), dtype=torch.int32, device=device)
        self.mask_word_indptr = z(B + 1, dtype=torch.int64, device=device)

    def load(self, lens, masks):
        idx = np.concatenate([self.slots[b, :int(lens[b])] for b in range(self.B)]).astype(np.int32)
        self.kv_indices[:idx.size].copy_(torch.from_numpy(idx))
        self.kv_indptr.copy_(torch.from_numpy(np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)))
        bits, word_indptr = pack_draft_masks(masks)
        self.mask_bits[:bits.numel()].copy_(bits)
        self.mask_word_indptr.copy_(word_indptr)

    def call(self, l):
        """Layer l's kernel inputs, in the op's order."""
        return (self.q[l], self.pool[l], self.kv_indices, self.kv_indptr, self.draft[l], self.qo_indptr, self.mask_bits,
                self.mask_word_indptr)

    def attend(self, l, attn, x, cos, sin):
        ab = self.absorbed[l]
        q, rows = ab.project(x, cos, sin)
        self.q[l].copy_(q.reshape(self.q[l].shape))
        self.draft[l].copy_(rows.reshape(self.draft[l].shape))
        if self.plan is not None:
            self.plan.run(*self.call(l), self.sm_scale, out=self.out[l], lse=self.lse[l], layer=l)
        else:
            ref = reference_of(self.call(l), self.sm_scale, self.d_v)
            self.out[l].copy_(ref.out.to(torch.bfloat16))
            self.lse[l].copy_(ref.lse.float())
        if self.recorder is not None:
            self.recorder.record(l, *self.call(l), self.out[l], self.lse[l], self.sm_scale)
        return ab.output(self.out[l].view(self.B, self.T, self.H, self.d_v))

    def _slots(self, b, start, n):
        return torch.as_tensor(self.slots[b, start:start + n], device=self.kv_indices.device)

    def commit(self, b, start, nodes):
        src = torch.as_tensor([b * self.T + j for j in nodes], device=self.kv_indices.device)
        dst = self._slots(b, start, len(nodes))
        for pool, draft in zip(self.pool, self.draft):
            pool.index_copy_(0, dst, draft.index_select(0, src))

    def set_prefix(self, l, b, rows):
        self.pool[l].index_copy_(0, self._slots(b, 0, rows.shape[0]), rows)

    def prefix_rows(self, l, b, n):
        return self.pool[l].index_select(0, self._slots(b, 0, n))


def reference_of(call, sm_scale, d_v):
    """The float64 reference (vattn.torch_tolerance) of one kernel call, on the call's device, with
    sm_scale as the kernel receives it (float32)."""
    q, pool, idx, kvp, draft, qo, bits, mwi = call
    ix = tt.HostIndex.of(idx, kvp, qo, bits, mwi)
    return tt.reference(q, pool, draft, ix, float(np.float32(sm_scale)), d_v)


class Runner:
    """One backend's verify step over fixed input tensors: eager on the CPU; on CUDA captured once in
    a CUDA graph, after a warm-up, and replayed. A backend's recorder records inside the graph: it
    is held back during the warm-up, so the first replay is its step 0."""

    def __init__(self, model, backend, B, T, device, graph):
        self.model, self.backend, self.graph = model, backend, graph
        self.tokens = torch.zeros((B, T), dtype=torch.int64, device=device)
        self.positions = torch.zeros((B, T), dtype=torch.int64, device=device)
        self.logits = None
        self.g = None

    def _step(self):
        if self.backend.recorder is not None:
            self.backend.recorder.begin_step()
        out = verify_forward(self.model, self.backend, self.tokens, self.positions)
        if self.logits is None:
            self.logits = torch.empty_like(out)
        self.logits.copy_(out)

    def load(self, lens, trees):
        self.backend.load(lens, trees.masks)
        self.tokens.copy_(torch.from_numpy(trees.tokens))
        self.positions.copy_(torch.from_numpy(trees.depth + np.asarray(lens)[:, None]))

    def capture(self):
        """CUDA: the warm-up (on a side stream, as torch.cuda.graph asks), then the capture."""
        if not self.graph:
            return
        rec = self.backend.recorder
        self.backend.recorder = None
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            self._step()
        torch.cuda.current_stream().wait_stream(s)
        self.backend.recorder = rec
        self.g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.g):
            self._step()
        if rec is not None:
            rec.set_step(-1)

    def run(self):
        if self.g is not None:
            self.g.replay()
        else:
            self._step()
        return self.logits


# ---- prefill, a step on a given state, the bound -------------------------------------------------------------
def prefill(model, prompts, lens, dtype, device, chunk):
    """transformers' attention over each prompt's first lens[b] tokens, `chunk` tokens at a time:
    returns the LatentCache holding every layer's rows of them (the kernel's rows: latent || k_rot)."""
    B, n = len(prompts), int(max(lens))
    chunk = max(1, min(chunk, n))
    be = ReferenceBackend(model, B, chunk, n, dtype, device)
    causal = np.tril(np.ones((chunk, chunk), dtype=bool))
    for c0 in range(0, n, chunk):
        toks = np.zeros((B, chunk), dtype=np.int64)  # rows past a prompt's end: padding, not kept
        for b in range(B):
            part = prompts[b][c0:min(c0 + chunk, int(lens[b]))]
            toks[b, :len(part)] = part
        be.load(np.full(B, c0), [causal] * B)
        positions = torch.arange(c0, c0 + chunk, device=device).expand(B, -1).contiguous()
        verify_forward(model, be, torch.from_numpy(toks).to(device), positions, head=False)
        for b in range(B):
            keep = min(chunk, int(lens[b]) - c0)
            if keep > 0:
                be.commit(b, c0, list(range(keep)))
    return be.cache


def state_forward(model, rows_of, lens, trees, dtype, device):
    """One step, eagerly, with transformers' attention on a given state: rows_of(l, b) gives request
    b's prefix rows of layer l (kernel rows [lens[b], 576]), converted to dtype. Returns logits."""
    B, T = trees.tokens.shape
    be = ReferenceBackend(model, B, T, int(max(lens)), dtype, device)
    for l in range(model.config.num_hidden_layers):
        for b in range(B):
            be.set_prefix(l, b, rows_of(l, b).to(dtype))
    be.load(lens, trees.masks)
    tokens = torch.from_numpy(trees.tokens).to(device)
    positions = torch.from_numpy(trees.depth + np.asarray(lens)[:, None]).to(device)
    return verify_forward(model, be, tokens, positions)


def logit_bound(l_yard, l64):
    """The logits bound, element by element ([B, T, V], float64): (1 + MAX_RATIO) * e_row +
    U_BF16 * |L64|, where e_row = max over the vocabulary of |l_yard - l64|: the error of the
    bf16 yardstick (transformers' attention in bf16) against the step in float64 on the same
    state. An attention within the tolerance model errs at most MAX_RATIO times as much as a
    correct bf16 computation, so its logits lie within MAX_RATIO * e_row of L64 and the
    yardstick's within e_row; U_BF16 * |L64| is the rounding of the logits themselves to bf16."""
    e = (l_yard.double() - l64).abs().amax(dim=-1, keepdim=True)
    return (1 + MAX_RATIO) * e + U_BF16 * l64.abs()
