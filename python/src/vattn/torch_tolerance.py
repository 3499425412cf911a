# SPDX-License-Identifier: Apache-2.0
"""The tolerance model of docs/tolerance.md in torch ops, on the device, for shadow mode.

Two comparisons, both computed without a host synchronisation (the verdict is a small device
tensor; `describe()` reads it):

- judge_reference(out, lse, ref): a kernel's bf16 result against a float64 reference (the
  reference() below, which returns what vattn's oracle returns: out, lse, abs_pv = sum_k p_k |v_k|,
  lse_scale, the visible key count). The checks and constants are vattn/check/tolerance.cpp's:
  out_bound, nonfinite (out: finite or not; lse: finite / -inf / other), lse_bound, score,
  ref_norm. The ratio check is off, as wherever the naive GPU oracle is the reference (there is
  no bf16-emulating yardstick here).
- judge_peer(out_a, lse_a, out_b, lse_b, bounds): two kernels against each other, with no float64
  reference. If both are within the model of the same truth, |a - b| is within the sum of their
  bounds; the terms only a reference knows are replaced by upper bounds from the inputs
  (peer_bounds()): abs_pv and |o64| by vmax = the largest finite |v| over the request's keys
  (column by column), lse_scale by sm_scale * sum_d |q_d| * kmax_d, |lse64| by the larger
  stored |lse| (plus 1e-6 relative for the first-order step). So a disagreement beyond it means
  at least one of the two is outside the model. It is far looser than the reference check
  (vmax instead of sum_k p_k |v_k|): it finds wrong rows, heads, masks and NaNs, not a
  dropped key among thousands. Nonfinite classes must agree exactly; score and ref_norm are not
  checked (no truth to hold them to).
"""

import dataclasses
import math

import numpy as np
import torch

from . import maskbits

U32 = 2.0 ** -24
FLOAT_DENORM_MIN = float(np.finfo(np.float32).smallest_subnormal)
CHECKS = {"out_bound": 1, "nonfinite": 2, "lse_bound": 4, "score": 8, "ref_norm": 16}
# The verdict vector's fields, in order (float64 on the device).
FIELDS = ("flags", "out_over", "out_worst", "nonfinite", "lse_over", "lse_worst", "score", "compared")


@dataclasses.dataclass(frozen=True)
class Tolerance:
    """vattn/check/tolerance.h's struct Tolerance (ratio omitted: see the module docstring)."""
    unit: float = 1.0 / 256.0
    c_pv: float = 3.0
    c_out: float = 1.0
    tiny: float = 1e-6
    lse_c: float = 1.0
    max_score: float = 2e-5


@dataclasses.dataclass
class Reference:
    """A float64 reference for one call, as vattn's oracle defines it ([n_q, H, d_v] / [n_q, H])."""
    out: torch.Tensor
    lse: torch.Tensor
    abs_pv: torch.Tensor
    lse_scale: torch.Tensor
    n_keys: torch.Tensor  # [n_q] visible keys per row


def _lse_class(x):
    """0 finite, 1 -inf, 2 other (NaN, +inf)."""
    c = torch.full_like(x, 2, dtype=torch.int8)
    c = torch.where(torch.isfinite(x), torch.zeros_like(c), c)
    return torch.where(x == -math.inf, torch.ones_like(c), c)


def _verdict(flags_terms, out_over, out_worst, nonfinite, lse_over, lse_worst, score, compared):
    flags = torch.zeros((), dtype=torch.float64, device=out_worst.device)
    for bit, cond in flags_terms:
        flags = flags + bit * cond.to(torch.float64)
    return torch.stack([flags, out_over.double(), out_worst.double(), nonfinite.double(), lse_over.double(),
                        lse_worst.double(), score.double(), compared.double()])


def _lse_bound(tol, d_qk, lse_scale, lse_ref_abs, n_keys, H):
    n = n_keys.double().unsqueeze(1).expand(-1, H)
    return tol.lse_c * U32 * (math.sqrt(d_qk) * lse_scale + lse_ref_abs + torch.maximum(n.sqrt(), n / 64.0))


def judge_reference(out, lse, ref, d_qk, tol=Tolerance()):
    """A kernel's out (bf16 [n_q, H, d_v]) and lse (fp32 [n_q, H], or None) against a Reference.
    Returns the verdict vector (FIELDS) on the device."""
    x, y = out.double(), ref.out
    fx, fy = torch.isfinite(x), torch.isfinite(y)
    nf_out = (fx != fy).sum()
    both = fx & fy
    pv = torch.where(torch.isfinite(ref.abs_pv), ref.abs_pv, torch.zeros_like(ref.abs_pv))
    floor = tol.tiny * pv.max() + FLOAT_DENORM_MIN
    bound = tol.c_pv * tol.unit * pv + tol.c_out * tol.unit * y.abs().nan_to_num(0.0, 0.0, 0.0) + floor
    err = torch.where(both, (x - y).abs(), torch.zeros_like(x))
    ratio = err / bound
    out_over = (ratio > 1).sum()
    xs, ys = torch.where(both, x, torch.zeros_like(x)), torch.where(both, y, torch.zeros_like(y))
    sum_sq = (xs * xs + ys * ys).sum()
    score = torch.where(sum_sq > 0, 1 - 2 * (xs * ys).sum() / sum_sq, torch.zeros_like(sum_sq))
    ref_norm_zero = ((ys * ys).sum() == 0) & (ref.n_keys > 0).any()
    H = x.shape[1]
    if lse is not None:
        lx, ly = lse.double(), ref.lse
        cx, cy = _lse_class(lx), _lse_class(ly)
        nf_lse = (cx != cy).sum()
        fin = (cx == 0) & (cy == 0)
        lb = _lse_bound(tol, d_qk, ref.lse_scale, ly.abs().nan_to_num(0.0, 0.0, 0.0), ref.n_keys, H)
        # Rows outside the comparison (an empty row's -inf) have a zero bound: ratio 0, not 0/0.
        lratio = torch.where(fin, (lx - ly).abs() / torch.where(fin, lb, torch.ones_like(lb)), torch.zeros_like(lx))
        lse_over, lse_worst = (lratio > 1).sum(), lratio.max()
    else:
        nf_lse = lse_over = torch.zeros((), dtype=torch.int64, device=x.device)
        lse_worst = torch.zeros((), dtype=torch.float64, device=x.device)
    nonfinite = nf_out + nf_lse
    return _verdict([(1, out_over > 0), (2, nonfinite > 0), (4, lse_over > 0), (8, score > tol.max_score),
                     (16, ref_norm_zero)], out_over, ratio.max(), nonfinite, lse_over, lse_worst, score, both.sum())


@dataclasses.dataclass
class PeerBounds:
    """Upper bounds of the reference-only terms, per row (see the module docstring)."""
    vmax: torch.Tensor       # [n_q, d_v]: largest finite |v| over the row's request's keys, per column
    lse_scale: torch.Tensor  # [n_q, H]: sm_scale * sum_d |q_d| * kmax_d
    n_keys: torch.Tensor     # [n_q]


def judge_peer(out_a, lse_a, out_b, lse_b, bounds, d_qk, tol=Tolerance()):
    """Two kernels' results against each other (the verdict vector, FIELDS, on the device)."""
    x, y = out_a.double(), out_b.double()
    fx, fy = torch.isfinite(x), torch.isfinite(y)
    nf_out = (fx != fy).sum()
    both = fx & fy
    vmax = bounds.vmax.unsqueeze(1)  # over heads
    floor = tol.tiny * bounds.vmax.max() + FLOAT_DENORM_MIN
    bound = 2 * (tol.unit * (tol.c_pv + tol.c_out) * vmax + floor)
    err = torch.where(both, (x - y).abs(), torch.zeros_like(x))
    ratio = err / bound
    out_over = (ratio > 1).sum()
    lx, ly = lse_a.double(), lse_b.double()
    cx, cy = _lse_class(lx), _lse_class(ly)
    nf_lse = (cx != cy).sum()
    fin = (cx == 0) & (cy == 0)
    big = torch.maximum(lx.abs(), ly.abs()).nan_to_num(0.0, 0.0, 0.0) * (1 + 1e-6)
    lb = 2 * _lse_bound(tol, d_qk, bounds.lse_scale, big, bounds.n_keys, x.shape[1])
    lratio = torch.where(fin, (lx - ly).abs() / torch.where(fin, lb, torch.ones_like(lb)), torch.zeros_like(lx))
    lse_over = (lratio > 1).sum()
    nonfinite = nf_out + nf_lse
    zero = torch.zeros((), dtype=torch.float64, device=x.device)
    return _verdict([(1, out_over > 0), (2, nonfinite > 0), (4, lse_over > 0)], out_over, ratio.max(), nonfinite,
                    lse_over, lratio.max(), zero, both.sum())


def describe(verdict, label=""):
    """The verdict as one line (reads it from the device): 'agree' or the failed checks' keys
    with their figures, in tolerance.cpp's words."""
    v = dict(zip(FIELDS, (float(t) for t in verdict.detach().cpu().tolist())))
    flags = int(v["flags"])
    head = f"{label}: " if label else ""
    if not flags:
        return head + (f"agree (worst err/bound {v['out_worst']:.3g}, lse err/bound {v['lse_worst']:.3g}, "
                       f"{int(v['compared'])} elements compared)")
    parts = []
    if flags & 1:
        parts.append(f"out_bound: {int(v['out_over'])} elements over bound, worst err/bound {v['out_worst']:.4g}")
    if flags & 2:
        parts.append(f"nonfinite: {int(v['nonfinite'])} NaN/Inf positions differ")
    if flags & 4:
        parts.append(f"lse_bound: {int(v['lse_over'])} rows over bound, worst err/bound {v['lse_worst']:.4g}")
    if flags & 8:
        parts.append(f"score: {v['score']:.4g}")
    if flags & 16:
        parts.append("ref_norm: the reference output is all zero though some rows have keys")
    return head + "; ".join(parts)


# ---- what the comparisons need from the inputs (eager: the index pointers on the host) ---------------
@dataclasses.dataclass
class HostIndex:
    """A call's small index arrays on the host (one synchronisation when taken from the device)."""
    qo: np.ndarray
    kv: np.ndarray
    mwi: np.ndarray
    kv_indices: np.ndarray  # the used entries, kv_indptr[B] of them
    mask_bits: np.ndarray   # the used words, mask_word_indptr[B] of them (uint32)
    dense_mask: np.ndarray  # dense draft masks, request by request
    dense_indptr: np.ndarray

    @classmethod
    def of(cls, kv_indices, kv_indptr, qo_indptr, mask_bits, mask_word_indptr):
        qo, kv, mwi = (t.detach().cpu().numpy().astype(np.int64) for t in (qo_indptr, kv_indptr, mask_word_indptr))
        idx = kv_indices[: int(kv[-1])].detach().cpu().numpy().astype(np.int64)
        bits = mask_bits[: int(mwi[-1])].detach().cpu().view(torch.int32).numpy().view(np.uint32)
        dense, dense_indptr = maskbits.unpack(bits, mwi, qo)
        return cls(qo, kv, mwi, idx, bits, dense, dense_indptr)

    def n_keys(self):
        """Visible keys of every row: P_b + the drafts its mask row shows."""
        n = []
        for b in range(len(self.qo) - 1):
            t = int(self.qo[b + 1] - self.qo[b])
            m = self.dense_mask[self.dense_indptr[b]:self.dense_indptr[b + 1]].reshape(t, t)
            n.append(int(self.kv[b + 1] - self.kv[b]) + m.sum(axis=1).astype(np.int64))
        return np.concatenate(n) if n else np.zeros(0, np.int64)


def _request_keys(kv_pool2d, kv_draft2d, ix, b):
    rows = torch.as_tensor(ix.kv_indices[ix.kv[b]:ix.kv[b + 1]], device=kv_pool2d.device)
    return kv_pool2d.index_select(0, rows), kv_draft2d[int(ix.qo[b]):int(ix.qo[b + 1])]


def peer_bounds(q, kv_pool, kv_draft, ix, sm_scale, d_v):
    """PeerBounds from the inputs (one small loop over requests, on the device)."""
    d_qk = q.shape[-1]
    pool, draft = kv_pool.reshape(-1, d_qk), kv_draft.reshape(-1, d_qk)
    n_q = int(ix.qo[-1])
    kmax = torch.zeros((n_q, d_qk), dtype=torch.float64, device=q.device)
    for b in range(len(ix.qo) - 1):
        pk, dk = _request_keys(pool, draft, ix, b)
        keys = torch.cat([pk, dk]).double().abs()
        keys = torch.where(torch.isfinite(keys), keys, torch.zeros_like(keys))
        kmax[int(ix.qo[b]):int(ix.qo[b + 1])] = keys.amax(0) if keys.shape[0] else 0
    qa = q[:n_q].double().abs()
    qa = torch.where(torch.isfinite(qa), qa, torch.zeros_like(qa))
    lse_scale = sm_scale * torch.einsum("nhd,nd->nh", qa, kmax)
    return PeerBounds(kmax[:, :d_v], lse_scale, torch.as_tensor(ix.n_keys(), device=q.device))


def reference(q, kv_pool, kv_draft, ix, sm_scale, d_v):
    """vattn's contract in float64 torch ops on q's device: out, lse, abs_pv, lse_scale and the
    visible key counts (a Reference). One loop over requests; the scores of a request are
    [T_b * H, P_b + T_b] float64, so a long prefix takes that much memory.

    Masked keys change nothing, NaN/Inf included: masked scores are replaced (torch.where), and
    the draft part of P.V runs on finite values, with the non-finite positions of the visible
    draft rows marked afterwards (a non-finite v that a row sees makes its column non-finite, as
    the oracle's 0 * Inf or p * NaN does)."""
    n_q, H, d_qk = (int(x) for x in q.shape[:3])
    n_q = int(ix.qo[-1])
    dev = q.device
    pool, draft = kv_pool.reshape(-1, d_qk), kv_draft.reshape(-1, d_qk)
    out = torch.zeros((n_q, H, d_v), dtype=torch.float64, device=dev)
    abs_pv = torch.zeros_like(out)
    lse = torch.full((n_q, H), -math.inf, dtype=torch.float64, device=dev)
    lse_scale = torch.zeros((n_q, H), dtype=torch.float64, device=dev)
    for b in range(len(ix.qo) - 1):
        r0, r1 = int(ix.qo[b]), int(ix.qo[b + 1])
        t = r1 - r0
        pk, dk = _request_keys(pool, draft, ix, b)
        pk, dk = pk.double(), dk.double()
        vis = torch.as_tensor(ix.dense_mask[ix.dense_indptr[b]:ix.dense_indptr[b + 1]].reshape(t, t).astype(bool),
                              device=dev)
        vis_rows = vis.repeat_interleave(H, dim=0)  # [t*H, t]: row (i, h) sees draft j
        Q = q[r0:r1].double().reshape(t * H, d_qk)
        s_pre = sm_scale * (Q @ pk.T)
        s_dr = torch.where(vis_rows, sm_scale * (Q @ dk.T), torch.full((t * H, t), -math.inf, dtype=torch.float64,
                                                                       device=dev))
        s = torch.cat([s_pre, s_dr], dim=1)
        nonempty = (pk.shape[0] > 0) | vis_rows.any(dim=1)
        m = torch.where(nonempty, s.amax(dim=1) if s.shape[1] else torch.zeros(t * H, dtype=torch.float64, device=dev),
                        torch.zeros(t * H, dtype=torch.float64, device=dev))
        p = torch.exp(s - m.unsqueeze(1))  # masked: exp(-inf) = 0; a NaN score makes the row NaN
        l = p.sum(dim=1)
        p = p / l.unsqueeze(1)
        p_pre, p_dr = p[:, :pk.shape[0]], p[:, pk.shape[0]:]
        v_pre, v_dr = pk[:, :d_v], dk[:, :d_v]
        bad_dr = ~torch.isfinite(v_dr)
        v_dr_safe = torch.where(bad_dr, torch.zeros_like(v_dr), v_dr)
        o = p_pre @ v_pre + p_dr @ v_dr_safe
        a = p_pre @ v_pre.abs() + p_dr @ v_dr_safe.abs()
        seen_bad = (vis_rows.double() @ bad_dr.double()) > 0
        o = torch.where(seen_bad, torch.full_like(o, math.nan), o)
        a = torch.where(seen_bad, torch.full_like(a, math.inf), a)
        row_lse = m + torch.log(l)
        o = torch.where(nonempty.unsqueeze(1), o, torch.zeros_like(o))
        a = torch.where(nonempty.unsqueeze(1), a, torch.zeros_like(a))
        row_lse = torch.where(nonempty, row_lse, torch.full_like(row_lse, -math.inf))
        # lse_scale: max over visible keys of sm_scale * sum_d |q_d k_d|
        qa = Q.abs()
        sc = torch.cat([qa @ pk.abs().T, torch.where(vis_rows, qa @ dk.abs().T, torch.zeros((t * H, t),
                                                                                              dtype=torch.float64,
                                                                                              device=dev))], dim=1)
        ls = sm_scale * (sc.amax(dim=1) if sc.shape[1] else torch.zeros(t * H, dtype=torch.float64, device=dev))
        out[r0:r1] = o.reshape(t, H, d_v)
        abs_pv[r0:r1] = a.reshape(t, H, d_v)
        lse[r0:r1] = row_lse.reshape(t, H)
        lse_scale[r0:r1] = ls.reshape(t, H)
    return Reference(out, lse, abs_pv, lse_scale, torch.as_tensor(ix.n_keys(), device=dev))
