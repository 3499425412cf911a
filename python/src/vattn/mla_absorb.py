# SPDX-License-Identifier: Apache-2.0
"""Verify attention's inputs from a DeepSeek-V3-architecture attention layer, in the absorbed form
(needs torch; the layer is transformers' DeepseekV3Attention, or anything with its parameters).

transformers computes multi-head latent attention decompressed: every cached latent row c (512)
is expanded by kv_b_proj into per-head keys k_nope (128) and values (128) before attention. The
kernel takes the absorbed form instead, where the cache stays compressed:

    q_h   = [ W_UK[h]^T q_nope_h (512) | rope(q_rot_h) (64) ]          576 per head
    row_t = [ c_t (512)                | rope(k_rot_t) (64)   ]        576 per token, shared by all heads
    o_h   = softmax(sm_scale * q_h . row_t) @ c_t                       512 per head (V = the row's first 512)
    out   = o_proj( concat_h W_UV[h] o_h )

with W_UK[h] = kv_b_proj.weight.view(H, 128 + 128, 512)[h, :128] and W_UV[h] the other 128 rows:
q_nope . (W_UK c) = (W_UK^T q_nope) . c and W_UV (sum_t p_t c_t) = sum_t p_t (W_UV c_t), so the
two forms are the same arithmetic up to rounding. sm_scale is the layer's own (`attn.scaling`:
(qk_nope + qk_rope)^-0.5 = 192^-0.5, times mscale^2 under YaRN; `softmax_scale` derives it from
the config), not 576^-0.5. The projections, norms and RoPE are the layer's own modules and
functions, called as its forward calls them. python/README.md ("Verify attention from a
DeepSeek-V3 model") writes this out; tests/python/test_mla_absorb.py checks it against the
layer's own forward in float64.

LatentCache stands in for transformers' cache so that the layer's own forward (the reference)
attends to a fixed-size buffer, as a CUDA graph needs; tree_mask and additive_mask build the
masks both forms use.
"""

import inspect
import math

import numpy as np
import torch


def softmax_scale(config):
    """The softmax scale of a DeepseekV3Config's attention: (qk_nope_head_dim + qk_rope_head_dim)^-0.5,
    times mscale^2 with mscale = 0.1 * mscale_all_dim * ln(factor) + 1 when the RoPE is scaled
    (YaRN; DeepSeek-V3 and Kimi K2 have factor 32-40, mscale_all_dim 1) and mscale_all_dim is
    set. transformers applies the same factor (yarn_apply_mscale); the kernel takes the product."""
    scale = (config.qk_nope_head_dim + config.qk_rope_head_dim) ** -0.5
    rope = getattr(config, "rope_parameters", None) or getattr(config, "rope_scaling", None) or {}
    kind = rope.get("rope_type", rope.get("type", "default"))
    factor = float(rope.get("factor", 1.0) or 1.0)
    mscale_all_dim = float(rope.get("mscale_all_dim", 0) or 0)
    if kind != "default" and mscale_all_dim and factor > 1:
        m = 0.1 * mscale_all_dim * math.log(factor) + 1.0
        scale *= m * m
    return scale


def _rope_function(attn):
    """The rotary function the layer's forward applies: DeepSeek's interleaved pairs
    (config.rope_interleave, the default) or the rotate-half layout. Taken from the layer's own
    module, so that both forms rotate the same way in every transformers version."""
    mod = inspect.getmodule(type(attn))
    name = "apply_rotary_pos_emb_interleave" if getattr(attn.config, "rope_interleave", False) else "apply_rotary_pos_emb"
    fn = getattr(mod, name, None)
    if fn is None:
        raise ValueError(f"{type(attn).__name__}: its module {getattr(mod, '__name__', mod)} has no {name}")
    return fn


class AbsorbedAttention:
    """One attention layer in the absorbed form. attn: transformers' DeepseekV3Attention (its
    q_proj or q_a_proj/q_a_layernorm/q_b_proj, kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj,
    o_proj and scaling). The weights are views of the layer's, in its dtype and device."""

    def __init__(self, attn):
        cfg = attn.config
        self.attn = attn
        self.num_heads = int(attn.num_heads)
        self.d_nope, self.d_rope = int(cfg.qk_nope_head_dim), int(cfg.qk_rope_head_dim)
        self.d_latent, self.d_vhead = int(cfg.kv_lora_rank), int(cfg.v_head_dim)
        if getattr(cfg, "num_key_value_heads", self.num_heads) not in (None, self.num_heads):
            raise ValueError(f"num_key_value_heads {cfg.num_key_value_heads} != num_attention_heads {self.num_heads}: "
                             "DeepSeek-V3's MLA expands the latent for every query head")
        w = attn.kv_b_proj.weight
        want = (self.num_heads * (self.d_nope + self.d_vhead), self.d_latent)
        if tuple(w.shape) != want:
            raise ValueError(f"kv_b_proj.weight has shape {tuple(w.shape)}, expected {want}")
        w = w.view(self.num_heads, self.d_nope + self.d_vhead, self.d_latent)
        self.w_uk = w[:, :self.d_nope]   # [H, 128, 512]: k_nope = W_UK c
        self.w_uv = w[:, self.d_nope:]   # [H, 128, 512]: v = W_UV c
        self.sm_scale = float(attn.scaling)
        self.rope = _rope_function(attn)

    @property
    def d_qk(self):
        return self.d_latent + self.d_rope

    @property
    def d_v(self):
        return self.d_latent

    def project(self, x, cos, sin):
        """x [B, T, hidden] (the layer's input, after input_layernorm), cos/sin [B, T, d_rope]
        (the model's rotary_emb at the tokens' positions) -> q [B, T, H, 576] and the tokens'
        cache rows [B, T, 576], as the kernel takes them."""
        a = self.attn
        B, T = x.shape[:2]
        H = self.num_heads
        if a.q_lora_rank is None:
            q = a.q_proj(x)
        else:
            q = a.q_b_proj(a.q_a_layernorm(a.q_a_proj(x)))
        q = q.view(B, T, H, self.d_nope + self.d_rope).transpose(1, 2)
        q_nope, q_rot = torch.split(q, [self.d_nope, self.d_rope], dim=-1)
        c, k_rot = torch.split(a.kv_a_proj_with_mqa(x), [self.d_latent, self.d_rope], dim=-1)
        c = a.kv_a_layernorm(c)
        q_rot, k_rot = self.rope(q_rot, k_rot.view(B, 1, T, self.d_rope), cos, sin)
        q_lat = torch.einsum("bhtd,hdr->bthr", q_nope, self.w_uk)
        q_abs = torch.cat([q_lat, q_rot.transpose(1, 2).to(q_lat.dtype)], dim=-1)
        rows = torch.cat([c, k_rot[:, 0].to(c.dtype)], dim=-1)
        return q_abs, rows

    def output(self, latent):
        """latent [B, T, H, 512] (the kernel's out) -> the layer's output [B, T, hidden]."""
        B, T = latent.shape[:2]
        v = torch.einsum("bthr,hvr->bthv", latent, self.w_uv)
        return self.attn.o_proj(v.reshape(B, T, self.num_heads * self.d_vhead))


def layer_attention(attn, x, cos, sin, mask, cache):
    """The layer's own forward (transformers' decompressed MLA) on x [B, T, hidden] with an
    additive mask [B, 1, T, K] and a cache whose update() gives the K keys: returns [B, T, hidden].
    The cache argument is `cache` in newer transformers, `past_key_values` before 5.18."""
    params = inspect.signature(attn.forward).parameters
    kw = "cache" if "cache" in params else "past_key_values"
    out = attn(hidden_states=x, position_embeddings=(cos, sin), attention_mask=mask, **{kw: cache})
    return out[0]


class LatentCache:
    """What DeepseekV3Attention's forward asks of a cache, over fixed buffers: update(kv_nope
    [B,1,T,512], k_rot [B,1,T,64], layer_idx, ...) stores the step's rows at [prefix_cap,
    prefix_cap + T) and returns the buffers up to there, so the layer attends to every prefix
    slot (an additive mask hides the unused ones) and to the step's rows. Nothing is allocated
    after construction: the reference forward can be captured in a CUDA graph. The buffers hold
    what transformers caches for MLA (the latent after kv_a_layernorm, the rotated k_rot), so a
    prefix is the same data as the kernel's pool rows: row = nope || rot."""

    def __init__(self, num_layers, batch, prefix_cap, draft_cap, d_latent, d_rope, dtype, device):
        n = prefix_cap + draft_cap
        self.prefix_cap, self.draft_cap, self.d_latent = int(prefix_cap), int(draft_cap), int(d_latent)
        self.nope = [torch.zeros((batch, 1, n, d_latent), dtype=dtype, device=device) for _ in range(num_layers)]
        self.rot = [torch.zeros((batch, 1, n, d_rope), dtype=dtype, device=device) for _ in range(num_layers)]

    def update(self, kv_nope, k_rot, layer_idx, *args, **kwargs):
        T, c = kv_nope.shape[2], self.prefix_cap
        if T > self.draft_cap:
            raise ValueError(f"LatentCache: {T} new rows, room for {self.draft_cap}")
        self.nope[layer_idx][:, :, c:c + T].copy_(kv_nope)
        self.rot[layer_idx][:, :, c:c + T].copy_(k_rot)
        return self.nope[layer_idx][:, :, :c + T], self.rot[layer_idx][:, :, :c + T]

    def rows(self, layer, b, start, stop):
        """Prefix rows [start, stop) of request b as kernel rows [n, 576]."""
        return torch.cat([self.nope[layer][b, 0, start:stop], self.rot[layer][b, 0, start:stop]], dim=-1)

    def set_rows(self, layer, b, start, rows):
        """Writes kernel rows [n, 576] as prefix rows start.. of request b."""
        n = rows.shape[0]
        self.nope[layer][b, 0, start:start + n].copy_(rows[:, :self.d_latent])
        self.rot[layer][b, 0, start:start + n].copy_(rows[:, self.d_latent:])

    def commit(self, b, start, nodes):
        """Keeps the step's rows `nodes` (indices into the step's T rows, a LongTensor on the
        buffers' device) of request b as its prefix rows start, start+1, ... (every layer)."""
        src = nodes + self.prefix_cap
        dst = torch.arange(start, start + nodes.numel(), device=nodes.device)
        for t in (*self.nope, *self.rot):
            t[b, 0].index_copy_(0, dst, t[b, 0].index_select(0, src))


def tree_mask(parents):
    """Ancestor-or-self mask [T, T] (bool numpy) of a tree given each node's parent (-1: a root;
    a parent comes before its child)."""
    T = len(parents)
    m = np.zeros((T, T), dtype=bool)
    for i, p in enumerate(parents):
        if p >= i:
            raise ValueError(f"node {i}: parent {p} does not come before it")
        if p >= 0:
            m[i] = m[p]
        m[i, i] = True
    return m


def additive_mask(out, prefix_lens, prefix_cap, masks):
    """Fills out [B, 1, T, prefix_cap + T] (the reference's additive mask, in the model's dtype, on
    its device): 0 where row i of request b sees the key (prefix slots below prefix_lens[b], the
    drafts its tree mask [T, T] shows), the dtype's lowest value elsewhere, as transformers' own
    masks do. Returns out."""
    B, T = out.shape[0], out.shape[2]
    if tuple(out.shape) != (B, 1, T, prefix_cap + T) or len(prefix_lens) != B or len(masks) != B:
        raise ValueError(f"additive_mask: out {tuple(out.shape)}, {len(prefix_lens)} prefix lengths and {len(masks)} "
                         f"masks for prefix_cap {prefix_cap}")
    out.fill_(torch.finfo(out.dtype).min)
    for b in range(B):
        out[b, 0, :, :int(prefix_lens[b])] = 0
        seen = torch.as_tensor(np.asarray(masks[b], dtype=bool), device=out.device)
        out[b, 0, :, prefix_cap:].masked_fill_(seen, 0)
    return out
