#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks a case file written by `vattn gen` with this directory's own code (no project code):
the header, the structure of every case, and its stored outputs/oracle_fp64 against numpy's
own float64 computation of the contract.

Stored out is float32 of a float64 result, so per element
    |stored - ours| <= 2^-22 |ours| + 1e-9 * sum_k p_k |v_k| + 1e-44
and NaN/Inf positions must agree; the report also gives the max abs difference.
Exit 0 when every case agrees, 1 otherwise.

usage: check_file.py FILE [FILE...]
"""

import sys

import numpy as np

import vattn_py as vp


def check_structure(c, problems):
    B = c.num_requests
    for b in range(B):
        t = int(c.qo_indptr[b + 1] - c.qo_indptr[b])
        if t < 1:
            problems.append(f"request {b}: T_b = {t}")
        m = c.mask(b)
        if m.shape != (t, t):
            problems.append(f"request {b}: mask shape {m.shape}")
    n_rows = len(c.kv_pool) // c.d_qk
    if len(c.kv_indices) and (c.kv_indices.min() < 0 or c.kv_indices.max() >= n_rows):
        problems.append("kv_indices outside kv_pool")
    if c.draft_parent is not None:
        for b in range(B):
            par = list(c.draft_parent[c.qo_indptr[b]:c.qo_indptr[b + 1]])
            if not np.array_equal(vp.mask_from_parents(par), c.mask(b)):
                problems.append(f"request {b}: draft_parent disagrees with draft_mask")
    if not c.recipe:
        problems.append("no recipe attribute")


def check_oracle(c, problems):
    if "oracle_fp64" not in c.outputs:
        problems.append("no outputs/oracle_fp64")
        return None
    stored_out, stored_lse, _ = c.outputs["oracle_fp64"]
    out, lse, abs_pv = vp.oracle_fp64(c)
    stored_out = stored_out.reshape(out.shape)
    stored_lse = stored_lse.reshape(lse.shape)
    for what, x, y in (("out", stored_out, out), ("lse", stored_lse, lse)):
        same = (np.isnan(x) == np.isnan(y)) & (np.isposinf(x) == np.isposinf(y)) & (np.isneginf(x) == np.isneginf(y))
        if not same.all():
            problems.append(f"{what}: {int((~same).sum())} NaN/Inf positions differ, first at "
                            f"{np.argwhere(~same)[0].tolist()}")
    fin = np.isfinite(out)
    with np.errstate(invalid="ignore"):
        err = np.abs(stored_out - out)[fin]
    bound = (2.0 ** -22 * np.abs(out) + 1e-9 * abs_pv + 1e-44)[fin]
    over = int((err > bound).sum())
    if over:
        worst = int(np.argmax(err / bound))
        problems.append(f"out: {over} elements over bound, worst err {err[worst]:.3g} bound {bound[worst]:.3g}")
    lfin = np.isfinite(lse)
    with np.errstate(invalid="ignore"):
        lse_err = np.abs(stored_lse - lse)[lfin]
    lse_bound = 2.0 ** -22 * np.abs(lse[lfin]) + 1e-9
    if (lse_err > lse_bound).any():
        problems.append(f"lse: {int((lse_err > lse_bound).sum())} rows over bound, max err {lse_err.max():.3g}")
    scale = max(1.0, float(np.abs(out[fin]).max())) if fin.any() else 1.0
    max_abs = float(err.max()) if err.size else 0.0
    if max_abs > 1e-6 * scale:
        problems.append(f"out: max abs diff {max_abs:.3g} > 1e-6 * {scale:.3g}")
    return max_abs, float(lse_err.max()) if lse_err.size else 0.0


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(sys.argv) >= 2 else 2
    failed = 0
    for path in sys.argv[1:]:
        try:
            header, cases = vp.read_case_file(path)
        except (OSError, KeyError, ValueError) as e:  # missing, not HDF5, not a case file
            print(f"check_file: {path}: cannot read it as a case file: {e}", file=sys.stderr)
            return 2
        head_problems = []
        if header.get("format") != vp.FORMAT_NAME or header.get("format_version") != vp.FORMAT_VERSION:
            head_problems.append(f"format {header.get('format')} v{header.get('format_version')}")
        if not str(header.get("source", "")).startswith("synthetic:"):
            head_problems.append(f"source '{header.get('source')}' is not synthetic:<profile>")
        if not str(header.get("generator", "")).startswith("vattn "):
            head_problems.append(f"generator '{header.get('generator')}'")
        if not cases:
            head_problems.append("no cases")
        if head_problems:
            failed += 1
            print(f"FAIL {path}: " + "; ".join(head_problems))
        for c in cases:
            problems = []
            check_structure(c, problems)
            figures = check_oracle(c, problems)
            if problems:
                failed += 1
                print(f"FAIL {path} {c.name}: " + "; ".join(problems))
            else:
                print(f"ok   {path} {c.name}: max |stored - numpy| out {figures[0]:.3g}, lse {figures[1]:.3g}")
    print(f"check_file: {'FAIL' if failed else 'all agree'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
