#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""ctest (label model): vattn.mla_absorb against transformers' own DeepseekV3Attention, in float64 on the CPU.

For tiny DeepSeek-V3 models (K2.6's attention geometry with YaRN and interleaved RoPE; the plain
rotate-half RoPE without scaling and without a q LoRA; another geometry), one layer's attention on two
requests with different prefixes and random draft trees is computed twice:
  - by the layer's own forward (decompressed MLA, sdpa) over a LatentCache, with the additive tree mask;
  - in the absorbed form: AbsorbedAttention.project (q of 576 per head, the step's cache rows), the
    package's float64 reference of the kernel's contract (torch_tolerance.reference: the pool in
    scattered slots, kv_indices, packed mask words, exactly what the kernel is given), then
    AbsorbedAttention.output (V absorbed back, o_proj).
The two must agree to float64 rounding; the rows transformers caches for the drafts must be the rows
the kernel is given; softmax_scale(config) must be the layer's scaling. Planted mistakes (the kernel's
576^-0.5 as the scale, K and V parts of kv_b_proj swapped, q's RoPE left out, heads out of order) must
each be caught by the same comparison. Refusals of the helpers close it.

usage: test_mla_absorb.py --vattn PATH/TO/vattn --root REPO
"""

import math

import numpy as np

from package_checks import arguments, check, finish


def tiny_model(torch, *, rope, interleave, q_lora, heads=8, latent=512, d_rope=64, d_nope=128, d_v=128, seed=3):
    from transformers import DeepseekV3Config, DeepseekV3ForCausalLM

    cfg = DeepseekV3Config(vocab_size=97, hidden_size=48, intermediate_size=64, num_hidden_layers=2,
                           num_attention_heads=heads, num_key_value_heads=heads, kv_lora_rank=latent,
                           q_lora_rank=q_lora, qk_rope_head_dim=d_rope, qk_nope_head_dim=d_nope, v_head_dim=d_v,
                           first_k_dense_replace=2, max_position_embeddings=131072, initializer_range=0.05,
                           rope_parameters=rope, rope_interleave=interleave, attn_implementation="sdpa")
    torch.manual_seed(seed)
    return cfg, DeepseekV3ForCausalLM(cfg).to(torch.float64).eval()


def random_parents(rng, t):
    return [-1] + [int(rng.integers(0, i)) for i in range(1, t)]


def setup_call(torch, cfg, model, rng, P=(29, 11), T=(7, 7), cap=40):
    """Two requests: random prefix rows in a LatentCache, random trees, the step's hidden states."""
    from vattn import mla_absorb as ma

    B, t = len(P), T[0]
    attn = model.model.layers[1].self_attn
    cache = ma.LatentCache(2, B, cap, t, cfg.kv_lora_rank, cfg.qk_rope_head_dim, torch.float64, "cpu")
    for b in range(B):
        cache.nope[1][b, 0, :P[b]] = torch.as_tensor(rng.normal(0, 1, (P[b], cfg.kv_lora_rank)))
        cache.rot[1][b, 0, :P[b]] = torch.as_tensor(rng.normal(0, 1, (P[b], cfg.qk_rope_head_dim)))
    parents = [random_parents(rng, t) for _ in range(B)]
    masks = [ma.tree_mask(p) for p in parents]
    depth = [[0] * t for _ in range(B)]
    for b in range(B):
        for i in range(1, t):
            depth[b][i] = depth[b][parents[b][i]] + 1
    x = torch.as_tensor(rng.normal(0, 1, (B, t, cfg.hidden_size)))
    pos = torch.as_tensor([[P[b] + d for d in depth[b]] for b in range(B)])
    cos, sin = model.model.rotary_emb(x, pos)
    mask = ma.additive_mask(torch.empty(B, 1, t, cap + t, dtype=torch.float64), P, cap, masks)
    return attn, cache, masks, x, cos, sin, mask


def absorbed(torch, ab, cache, masks, x, cos, sin, P, rng, scale=None):
    """The absorbed form through the kernel's own inputs: the prefix rows in scattered pool slots."""
    from vattn import torch_tolerance as tt
    from vattn.torch import pack_draft_masks

    B, t = x.shape[:2]
    q, rows = ab.project(x, cos, sin)
    n_slots = sum(P) + 23
    slots = rng.permutation(n_slots)[:sum(P)]
    pool = torch.full((n_slots, ab.d_qk), float("nan"), dtype=torch.float64)  # unreferenced slots: must not matter
    prefix = torch.cat([cache.rows(1, b, 0, P[b]) for b in range(B)])
    pool[torch.as_tensor(slots)] = prefix
    kv_indices = torch.as_tensor(slots.astype(np.int32))
    kv_indptr = torch.as_tensor(np.concatenate([[0], np.cumsum(P)]).astype(np.int32))
    qo = torch.as_tensor(np.arange(0, B * t + 1, t).astype(np.int32))
    bits, words = pack_draft_masks(masks)
    ix = tt.HostIndex.of(kv_indices, kv_indptr, qo, bits, words)
    ref = tt.reference(q.reshape(B * t, ab.num_heads, ab.d_qk), pool, rows.reshape(B * t, ab.d_qk), ix,
                       ab.sm_scale if scale is None else scale, ab.d_v)
    return ab.output(ref.out.reshape(B, t, ab.num_heads, ab.d_v)), q, rows


def rel(a, b):
    return float((a - b).abs().max() / b.abs().max())


def main():
    arguments()
    import torch

    from vattn import mla_absorb as ma

    torch.set_grad_enabled(False)
    k26_rope = {"rope_type": "yarn", "rope_theta": 50000.0, "factor": 32.0, "original_max_position_embeddings": 4096,
                "beta_fast": 1.0, "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0}
    plain_rope = {"rope_type": "default", "rope_theta": 10000.0}
    variants = [
        ("K2.6 geometry, YaRN, interleaved RoPE, q LoRA", dict(rope=k26_rope, interleave=True, q_lora=24)),
        ("K2.6 geometry, plain rotate-half RoPE, no q LoRA", dict(rope=plain_rope, interleave=False, q_lora=None)),
        ("3 heads, latent 40, rope 8, nope 12, v 20, YaRN", dict(rope=k26_rope, interleave=True, q_lora=16, heads=3,
                                                                  latent=40, d_rope=8, d_nope=12, d_v=20)),
    ]
    P = (29, 11)
    for name, kw in variants:
        rng = np.random.default_rng(11)
        cfg, model = tiny_model(torch, **kw)
        attn, cache, masks, x, cos, sin, mask = setup_call(torch, cfg, model, rng, P=P)
        want = ma.layer_attention(attn, x, cos, sin, mask, cache)
        ab = ma.AbsorbedAttention(attn)
        got, q, rows = absorbed(torch, ab, cache, masks, x, cos, sin, P, rng)
        check(rel(got, want) < 1e-12, f"{name}: the absorbed form reproduces the layer's own output "
                                      f"(max error {rel(got, want):.2g} of its largest value)")
        check(tuple(q.shape) == (2, 7, ab.num_heads, cfg.kv_lora_rank + cfg.qk_rope_head_dim)
              and tuple(rows.shape) == (2, 7, cfg.kv_lora_rank + cfg.qk_rope_head_dim),
              f"{name}: q is [B, T, H, latent + rope] = {tuple(q.shape)}, the rows [B, T, latent + rope]")
        cached = torch.cat([cache.nope[1][:, 0, 40:], cache.rot[1][:, 0, 40:]], dim=-1)
        check(torch.equal(cached, rows), f"{name}: the rows transformers caches for the drafts are the kernel's rows")
        check(math.isclose(ma.softmax_scale(cfg), attn.scaling, rel_tol=1e-15),
              f"{name}: softmax_scale(config) {ma.softmax_scale(cfg):.12g} is the layer's scaling {attn.scaling:.12g}")

        # Planted mistakes: each must move the output far beyond rounding.
        planted = {}
        planted["the kernel's 576^-0.5 as sm_scale"] = absorbed(
            torch, ab, cache, masks, x, cos, sin, P, np.random.default_rng(11), scale=ab.d_qk ** -0.5)[0]
        if ab.d_nope == ab.d_vhead:  # (the swap needs equal widths)
            swapped = ma.AbsorbedAttention(attn)
            swapped.w_uk, swapped.w_uv = ab.w_uv, ab.w_uk
            planted["kv_b_proj's K and V parts swapped"] = absorbed(torch, swapped, cache, masks, x, cos, sin, P,
                                                                   np.random.default_rng(11))[0]
        no_rope = ma.AbsorbedAttention(attn)
        no_rope.rope = lambda q, k, c, s: (q, k)
        planted["RoPE left out"] = absorbed(torch, no_rope, cache, masks, x, cos, sin, P, np.random.default_rng(11))[0]
        heads = ma.AbsorbedAttention(attn)
        heads.w_uv = ab.w_uv.flip(0)
        planted["heads of W_UV in reverse order"] = absorbed(torch, heads, cache, masks, x, cos, sin, P,
                                                            np.random.default_rng(11))[0]
        for what, out in planted.items():
            check(rel(out, want) > 1e-3, f"{name}: planted ({what}) is caught: error {rel(out, want):.3g} of the "
                                         "largest value")

    # K2.6's scale written out: 192^-0.5 * (0.1 * ln 32 + 1)^2.
    cfg, _ = tiny_model(torch, rope=k26_rope, interleave=True, q_lora=24)
    want = 192 ** -0.5 * (0.1 * math.log(32.0) + 1.0) ** 2
    check(math.isclose(ma.softmax_scale(cfg), want, rel_tol=1e-15), f"K2.6: sm_scale = 192^-0.5 * mscale^2 = {want:.9g}")

    # The helpers' refusals.
    def raises(fn, text):
        try:
            fn()
        except ValueError as e:
            return text in str(e)
        return False

    check(raises(lambda: ma.tree_mask([-1, 1]), "node 1: parent 1 does not come before it"),
          "tree_mask refuses a parent that does not come before its child")
    check(raises(lambda: ma.additive_mask(torch.empty(1, 1, 2, 5), [3], 2, [np.eye(2)]), "additive_mask"),
          "additive_mask refuses an out tensor of the wrong size")
    lc = ma.LatentCache(1, 1, 4, 2, 8, 2, torch.float64, "cpu")
    check(raises(lambda: lc.update(torch.zeros(1, 1, 3, 8), torch.zeros(1, 1, 3, 2), 0), "3 new rows, room for 2"),
          "LatentCache refuses more rows than its draft room")
    m = ma.tree_mask([-1, 0, 0, 1, -1])
    check(m.tolist() == [[1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [1, 0, 1, 0, 0], [1, 1, 0, 1, 0], [0, 0, 0, 0, 1]],
          "tree_mask: ancestors and self, a second root sees only itself")
    return finish()


if __name__ == "__main__":
    raise SystemExit(main())
