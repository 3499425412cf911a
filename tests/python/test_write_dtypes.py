#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""ctest: what vattn.write (and vattn.capture) accept as data, and that nothing is cast silently.

1. Every accepted way to give bf16 data round-trips through vattn.write and vattn.read bit for
   bit: uint16 bits (native and big-endian), ml_dtypes.bfloat16 arrays, the package's own
   bf16_view output, torch bfloat16 tensors (real torch when installed, else a stand-in with
   torch's Tensor API), and float16/float32/float64 with convert=True, rounded to nearest even:
   checked against an exhaustive nearest-bf16 search over every finite bf16 value, on random
   values, exact ties and the values float64 -> float32 -> bf16 double rounding gets wrong. Index
   fields from any integer type (and lists, empty lists), lse from float64. A file written from
   float32 values with convert=True replays with vattn (no silent zeros, no blamed oracle).
2. Everything else is refused with the case and field named, before anything is written (no file,
   no temporary): float32/float64 without convert=True, integers, bool, strings, other ml_dtypes
   types, bf16 bits for oracle_fp64, floats or out-of-range values in index fields, wrong ranks,
   schema violations (an unknown integer attribute, a producer twice, a non-integer num_heads).
3. The write goes to a fresh temporary renamed into place: one that fails midway leaves neither
   the file nor the temporary; a path that is a symbolic link is refused and its target untouched.
4. vattn.capture.Capture.submit follows the same rules: an ml_dtypes.bfloat16 call is captured bit
   for bit, a float32 one is refused naming the field.

usage: test_write_dtypes.py --vattn PATH/TO/vattn --root REPO
"""

import dataclasses
import os
import re
import subprocess
import sys
import tempfile
import types

import numpy as np

from package_checks import arguments, check, finish

# ---- the exact reference: nearest bf16 by search, ties to even --------------------------------

def bf16_table():
    """Every finite non-negative bf16 value in bit order, then 2^128 standing for +inf (0x7F80):
    the value halfway between the largest finite bf16 and 2^128 rounds to inf, as RNE does."""
    bits = np.arange(0x7F80, dtype=np.uint32)
    vals = (bits << 16).view(np.float32).astype(np.float64)
    return np.append(vals, 2.0 ** 128)


def nearest_bf16(x, table):
    """bf16 bits nearest to each float64 x (ties to the even bit pattern); NaN -> 0x7FC0."""
    x = np.asarray(x, dtype=np.float64).ravel()
    a = np.abs(x)
    i = np.clip(np.searchsorted(table, a, side="right") - 1, 0, len(table) - 2)
    lo, hi = table[i], table[i + 1]
    pick_hi = (a - lo > hi - a) | ((a - lo == hi - a) & (i % 2 == 1))
    out = np.where(a >= 2.0 ** 128, 0x7F80, np.where(pick_hi, i + 1, i)).astype(np.uint16)
    out |= (np.signbit(x).astype(np.uint16) << 15)
    return np.where(np.isnan(x), np.uint16(0x7FC0), out)


def hard_values(rng):
    """Random values over bf16's whole range, exact ties, ties +- one float64 ulp, subnormals,
    overflow edges, signed zeros, infinities, NaN."""
    table = bf16_table()
    mids = (table[:-2] + table[1:-1]) / 2  # exact in float64
    pick = mids[rng.integers(0, len(mids), 4000)]
    v = [rng.standard_normal(20000) * 2.0 ** rng.integers(-140, 128, 20000), pick, np.nextafter(pick, np.inf),
         np.nextafter(pick, -np.inf), -pick, (table[1:300] * 0.75), [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-50,
                                                                      3.3961e38, 3.3962e38, 3.39e38, 1e39, -1e300]]
    return np.concatenate([np.asarray(a, np.float64).ravel() for a in v])


# ---- a stand-in for torch's Tensor API, when torch is not installed ----------------------------

def stand_in_torch():
    """The calls the package makes on a tensor: detach, contiguous, view(dtype), to(device), numpy."""
    torch = types.ModuleType("torch")

    class Dtype:
        def __init__(self, name, np_dtype):
            self.name, self.np = name, np_dtype

        def __repr__(self):
            return "torch." + self.name

    torch.bfloat16, torch.int16 = Dtype("bfloat16", np.uint16), Dtype("int16", np.int16)
    torch.float32, torch.float64 = Dtype("float32", np.float32), Dtype("float64", np.float64)
    torch.int64, torch.float8_e4m3fn = Dtype("int64", np.int64), Dtype("float8_e4m3fn", None)

    class Tensor:
        def __init__(self, data, dtype, device="cuda:0"):
            self.data, self.dtype, self.device = data, dtype, device

        def detach(self):
            return Tensor(self.data, self.dtype, self.device)

        def contiguous(self):
            return Tensor(np.ascontiguousarray(self.data), self.dtype, self.device)

        def view(self, dtype):
            return Tensor(self.data.view(dtype.np), dtype, self.device)

        def to(self, device):
            return Tensor(self.data.copy(), self.dtype, device)

        def numpy(self):
            if self.device != "cpu":
                raise TypeError("can't convert cuda:0 device type tensor to numpy")
            if self.dtype in (torch.bfloat16, torch.float8_e4m3fn):
                raise TypeError(f"Got unsupported ScalarType {self.dtype.name}")
            return self.data

    Tensor.__module__ = "torch"
    torch.Tensor = Tensor
    torch.bits_tensor = lambda bits: Tensor(np.asarray(bits, np.uint16), torch.bfloat16)
    torch.float_tensor = lambda x: Tensor(np.asarray(x), {np.dtype(np.float32): torch.float32,
                                                          np.dtype(np.float64): torch.float64}[np.asarray(x).dtype])
    torch.int_tensor = lambda x: Tensor(np.asarray(x, np.int64), torch.int64)
    torch.float8_tensor = lambda n: Tensor(np.zeros(n, np.uint8), torch.float8_e4m3fn)
    return torch


def real_torch():
    try:
        import torch
    except ImportError:
        return None
    # On the GPU when there is one (the device machine's python_step.sh runs this test): the bits
    # must come over from device memory too.
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    t = types.SimpleNamespace(torch=torch, bfloat16=torch.bfloat16, device=dev)
    t.bits_tensor = lambda bits: torch.from_numpy(np.asarray(bits, np.uint16).view(np.int16).copy()).view(
        torch.bfloat16).to(dev)
    t.float_tensor = lambda x: torch.from_numpy(np.asarray(x).copy()).to(dev)
    t.int_tensor = lambda x: torch.from_numpy(np.asarray(x, np.int64).copy()).to(dev)
    t.float8_tensor = (lambda n: torch.zeros(n, dtype=torch.float8_e4m3fn, device=dev)) \
        if hasattr(torch, "float8_e4m3fn") else None
    return t


# ---- a small case -----------------------------------------------------------------------------

def small_case(vattn, rng, name="c0"):
    """B=2, P=[5,0], T=[3,2], H=2, d_qk=8, d_v=4, with an oracle and a serving output."""
    n_q, H, dqk, dv = 5, 2, 8, 4
    f32 = lambda shape: rng.normal(0, 1, shape).astype(np.float32)  # noqa: E731
    return vattn.Case(
        name=name, num_heads=H, sm_scale=0.25, d_qk=dqk, d_v=dv,
        q=vattn.float32_to_bf16(f32((n_q, H, dqk))), kv_pool=vattn.float32_to_bf16(f32((6, dqk))),
        kv_indices=np.array([0, 2, 4, 5, 1], np.int32), kv_indptr=np.array([0, 5, 5], np.int32),
        kv_draft=vattn.float32_to_bf16(f32((n_q, dqk))), qo_indptr=np.array([0, 3, 5], np.int32),
        draft_mask=np.array([1, 0, 0, 1, 1, 0, 1, 1, 1, 1, 0, 1, 1], np.uint8),
        draft_mask_indptr=np.array([0, 9, 13], np.int64), kv_slot_ids=np.arange(100, 106, dtype=np.int64),
        draft_parent=np.array([-1, 0, 1, -1, 0], np.int32), int_attrs={"layer": 1},
        outputs=[vattn.Output("oracle_fp64", "oracle", f32((n_q, H, dv)), f32((n_q, H))),
                 vattn.Output("serving", "server", vattn.float32_to_bf16(f32((n_q, H, dv))), None)])


def with_bf16(c, convert_fn):
    """The case with q, kv_pool, kv_draft and serving's out given through convert_fn(bits)."""
    outs = [o if o.producer == "oracle_fp64" else dataclasses.replace(o, out=convert_fn(o.out)) for o in c.outputs]
    return dataclasses.replace(c, q=convert_fn(c.q), kv_pool=convert_fn(c.kv_pool), kv_draft=convert_fn(c.kv_draft),
                               outputs=outs)


def bf16_fields(c):
    return {"q": c.q, "kv_pool": c.kv_pool, "kv_draft": c.kv_draft, "serving": c.outputs[1].out}


def roundtrip(vattn, tmp, label, given, want, convert=False):
    """Writes `given`, reads it back; every bf16 field must hold want's bits exactly."""
    path = os.path.join(tmp, "rt.h5")
    try:
        vattn.write(path, vattn.Header(source="synthetic:test"), [given], convert=convert)
        back = vattn.read(path).cases[0]
    except vattn.CaseFileError as e:
        check(False, f"{label}: refused: {e}")
        return
    bad = [k for k, v in bf16_fields(back).items()
           if v.dtype != np.uint16 or not np.array_equal(v, np.asarray(bf16_fields(want)[k]))]
    check(not bad, f"{label}: bf16 fields read back bit for bit" + (f" (differ: {bad})" if bad else ""))


def refused(vattn, tmp, label, case, field, convert=False, words=""):
    """The write must raise CaseFileError naming the case and field, and leave the folder empty."""
    box = tempfile.mkdtemp(dir=tmp)
    path = os.path.join(box, "x.h5")
    try:
        vattn.write(path, vattn.Header(source="synthetic:test"), [case], convert=convert)
        check(False, f"{label}: written, expected a refusal naming field '{field}'")
    except vattn.CaseFileError as e:
        left = os.listdir(box)
        check(e.case == case.name and e.field == field and words in str(e) and not left,
              f"{label}: refused naming case '{e.case}' field '{e.field}'" +
              ("" if e.field == field else f" (expected '{field}')") + (f"; left {left}" if left else "") +
              (f"; the message lacks {words!r}: {e}" if words not in str(e) else ""))
    except Exception as e:  # a numpy or h5py error: not what a user should see
        check(False, f"{label}: {type(e).__name__} instead of CaseFileError: {e}")


def main():
    a = arguments()
    import vattn
    from vattn.bf16 import float64_to_bf16

    rng = np.random.default_rng(11)
    table = bf16_table()
    with tempfile.TemporaryDirectory(prefix="vattn-dtypes-") as tmp:
        base = small_case(vattn, rng)
        bits = bf16_fields(base)
        as_f32 = lambda b: vattn.bf16_to_float32(b)  # noqa: E731

        # 1. Conversions against the exhaustive reference.
        x = hard_values(rng)
        got, want = float64_to_bf16(x), nearest_bf16(x, table)
        check(np.array_equal(got, want), f"float64 -> bf16 is round-to-nearest-even on {x.size} values "
                                         f"({int((got != want).sum())} differ)")
        trap = np.float64(1 + 2.0 ** -8 + 2.0 ** -30)  # float32 rounds it onto a bf16 tie, then to even: 0x3F80
        check(int(float64_to_bf16(trap)) == 0x3F81 == int(nearest_bf16(trap, table)[0]),
              "float64 just above a bf16 tie rounds up (no double rounding through float32)")
        with np.errstate(over="ignore"):
            x32 = x.astype(np.float32)
        finite = np.isfinite(x32) | np.isnan(x)
        check(np.array_equal(vattn.float32_to_bf16(x32)[finite], nearest_bf16(x32.astype(np.float64), table)[finite]),
              "float32 -> bf16 is round-to-nearest-even")
        check(int(vattn.float32_to_bf16(np.float32(-1.5))) == 0xBFC0, "-1.5 is 0xBFC0 (not 0xFFFF)")

        # Round trips, one per accepted form.
        roundtrip(vattn, tmp, "uint16 bits", base, base)
        roundtrip(vattn, tmp, "big-endian uint16 bits", with_bf16(base, lambda b: b.astype(">u2")), base)
        roundtrip(vattn, tmp, "non-contiguous uint16 bits",
                  with_bf16(base, lambda b: np.stack([b, b], axis=-1)[..., 0]), base)
        roundtrip(vattn, tmp, "float32 values, convert=True", with_bf16(base, as_f32), base, convert=True)
        roundtrip(vattn, tmp, "float64 values, convert=True", with_bf16(base, lambda b: as_f32(b).astype(np.float64)),
                  base, convert=True)
        roundtrip(vattn, tmp, "float16 values, convert=True",
                  with_bf16(base, lambda b: as_f32(b).astype(np.float16)),
                  with_bf16(base, lambda b: vattn.float32_to_bf16(as_f32(b).astype(np.float16).astype(np.float32))),
                  convert=True)
        noisy = {k: rng.normal(0, 3, np.asarray(v).shape) * 2.0 ** rng.integers(-30, 30) for k, v in bits.items()}
        given = dataclasses.replace(base, q=noisy["q"], kv_pool=noisy["kv_pool"], kv_draft=noisy["kv_draft"],
                                    outputs=[base.outputs[0], dataclasses.replace(base.outputs[1], out=noisy["serving"])])
        expect = with_bf16(given, lambda v: nearest_bf16(v, table).reshape(np.asarray(v).shape))
        roundtrip(vattn, tmp, "arbitrary float64 values, convert=True (nearest even)", given, expect, convert=True)
        try:
            import ml_dtypes
        except ImportError:
            ml_dtypes = None
            print("SKIP: ml_dtypes is not installed for this python3: its round trips and bf16_view's are not run "
                  "(scripts/install-deps.sh installs it)")
        if ml_dtypes is not None:
            roundtrip(vattn, tmp, "ml_dtypes.bfloat16 arrays", with_bf16(base, lambda b: b.view(ml_dtypes.bfloat16)),
                      base)
            roundtrip(vattn, tmp, "vattn.bf16_view output", with_bf16(base, vattn.bf16_view), base)
            roundtrip(vattn, tmp, "ml_dtypes.bfloat16 from float32 (ml_dtypes' rounding)",
                      with_bf16(base, lambda b: as_f32(b).astype(ml_dtypes.bfloat16)), base)
        torch = real_torch()
        if torch is None:
            torch = stand_in_torch()
            sys.modules["torch"] = torch  # what the package's `import torch` then finds
            print("note: torch is not installed: torch tensors are a stand-in with torch's Tensor API "
                  "(detach, contiguous, view, to, numpy) on a pretend CUDA device")
        else:
            print(f"note: torch {torch.torch.__version__} is installed: real tensors on {torch.device}")
        roundtrip(vattn, tmp, "torch bfloat16 tensors", with_bf16(base, torch.bits_tensor), base)
        roundtrip(vattn, tmp, "torch float32 tensors, convert=True",
                  with_bf16(base, lambda b: torch.float_tensor(as_f32(b))), base, convert=True)

        # Index fields from other integer types, lists and empty lists; lse from float64.
        c = dataclasses.replace(base, kv_indices=[0, 2, 4, 5, 1], kv_indptr=np.array([0, 5, 5], np.uint64),
                                qo_indptr=torch.int_tensor([0, 3, 5]), draft_mask=base.draft_mask.astype(bool),
                                draft_mask_indptr=np.array([0, 9, 13], np.int16),
                                outputs=[dataclasses.replace(base.outputs[0], lse=base.outputs[0].lse.astype(np.float64)),
                                         base.outputs[1]])
        path = os.path.join(tmp, "ints.h5")
        vattn.write(path, vattn.Header(source="synthetic:test"), [c])
        back = vattn.read(path).cases[0]
        check(back.kv_indices.dtype == np.int32 and list(back.kv_indices) == [0, 2, 4, 5, 1] and
              list(back.qo_indptr) == [0, 3, 5] and list(back.draft_mask) == list(base.draft_mask) and
              np.array_equal(back.outputs[0].lse, base.outputs[0].lse), "index fields from lists, uint64, torch int64, "
                                                                        "int16 and bool; lse from float64")
        empty = dataclasses.replace(base, kv_indices=[], kv_indptr=[0, 0, 0], kv_pool=np.zeros((0, 8), np.uint16),
                                    kv_slot_ids=[])
        path = os.path.join(tmp, "empty.h5")
        vattn.write(path, vattn.Header(source="synthetic:test"), [empty])
        check(vattn.read(path).cases[0].kv_indices.size == 0, "an empty list for an empty index field")

        # The case: float32 values (here exact bf16 values) written with convert=True replay.
        fixture = vattn.read(os.path.join(a.root, "fixtures", "uniform_chain.h5"))
        path = os.path.join(tmp, "replay.h5")
        vattn.write(path, vattn.Header(source="synthetic:uniform"), [with_bf16(c, as_f32) for c in fixture.cases],
                    convert=True)
        p = subprocess.run([a.vattn, "replay", path], capture_output=True, text=True)
        # Where a GPU is, replay also runs the default revision: more passes, still none failed.
        check(p.returncode == 0 and re.search(r"\b[1-9]\d* passed, 0 failed", p.stdout) is not None,
              f"a fixture's cases given as float32 with convert=True replay with vattn (exit {p.returncode})"
              + ("" if p.returncode == 0 else f":\n{p.stdout}{p.stderr}"))

        # 2. Refusals, each naming the case and field, nothing left behind.
        refused(vattn, tmp, "float32 q without convert", with_bf16(base, as_f32), "q", words="convert=True")
        refused(vattn, tmp, "float64 kv_pool without convert",
                dataclasses.replace(base, kv_pool=as_f32(base.kv_pool).astype(np.float64)), "kv_pool")
        refused(vattn, tmp, "float32 serving out without convert",
                dataclasses.replace(base, outputs=[base.outputs[0], dataclasses.replace(
                    base.outputs[1], out=as_f32(base.outputs[1].out))]), "outputs/serving/out")
        refused(vattn, tmp, "int16 q (bits under another type)", dataclasses.replace(base, q=base.q.view(np.int16)), "q")
        refused(vattn, tmp, "int64 values for kv_draft", dataclasses.replace(base, kv_draft=base.kv_draft.astype(np.int64)),
                "kv_draft")
        refused(vattn, tmp, "int16 q with convert=True", dataclasses.replace(base, q=base.q.view(np.int16)), "q",
                convert=True)
        refused(vattn, tmp, "bool q", dataclasses.replace(base, q=base.q > 0), "q")
        refused(vattn, tmp, "strings for q", dataclasses.replace(base, q=np.full(base.q.shape, "x")), "q")
        refused(vattn, tmp, "a list of floats for q", dataclasses.replace(base, q=as_f32(base.q).tolist()), "q")
        refused(vattn, tmp, "complex kv_pool with convert=True",
                dataclasses.replace(base, kv_pool=base.kv_pool.astype(np.complex64)), "kv_pool", convert=True)
        refused(vattn, tmp, "bf16 bits for oracle_fp64's out",
                dataclasses.replace(base, outputs=[dataclasses.replace(base.outputs[0], out=vattn.float32_to_bf16(
                    base.outputs[0].out)), base.outputs[1]]), "outputs/oracle_fp64/out")
        refused(vattn, tmp, "integers for lse",
                dataclasses.replace(base, outputs=[dataclasses.replace(base.outputs[0], lse=np.zeros((5, 2), np.int32)),
                                                   base.outputs[1]]), "outputs/oracle_fp64/lse")
        refused(vattn, tmp, "float kv_indices", dataclasses.replace(base, kv_indices=np.array([0, 2, 4, 5, 1.0])),
                "kv_indices")
        refused(vattn, tmp, "NaN in kv_indptr", dataclasses.replace(base, kv_indptr=np.array([0, np.nan, 5])),
                "kv_indptr")
        refused(vattn, tmp, "kv_indices 2^40 (wraps in int32)",
                dataclasses.replace(base, kv_indices=np.array([0, 2, 4, 5, 1 << 40], np.int64)), "kv_indices")
        refused(vattn, tmp, "draft_mask 256 (wraps in uint8)",
                dataclasses.replace(base, draft_mask=base.draft_mask.astype(np.int32) * 256), "draft_mask")
        refused(vattn, tmp, "q flat", dataclasses.replace(base, q=base.q.ravel()), "q")
        refused(vattn, tmp, "kv_pool [1, n_rows, d_qk]", dataclasses.replace(base, kv_pool=base.kv_pool[None]), "kv_pool")
        refused(vattn, tmp, "qo_indptr [B+1, 1]", dataclasses.replace(base, qo_indptr=base.qo_indptr[:, None]),
                "qo_indptr")
        refused(vattn, tmp, "an integer attribute outside the schema",
                dataclasses.replace(base, int_attrs={"layer": 1, "batch": 3}), "batch")
        refused(vattn, tmp, "num_heads a float", dataclasses.replace(base, num_heads=2.0), "num_heads")
        refused(vattn, tmp, "a producer twice",
                dataclasses.replace(base, outputs=[base.outputs[1], base.outputs[1]]), "outputs/serving")
        refused(vattn, tmp, "a producer name with '/'",
                dataclasses.replace(base, outputs=[dataclasses.replace(base.outputs[1], producer="a/b")]), "outputs/a/b")
        refused(vattn, tmp, "torch float32 tensors without convert",
                with_bf16(base, lambda b: torch.float_tensor(as_f32(b))), "q")
        if torch.float8_tensor is not None:
            refused(vattn, tmp, "a torch float8 tensor", dataclasses.replace(base, kv_draft=torch.float8_tensor(40)),
                    "kv_draft", convert=True)
        if ml_dtypes is not None:
            refused(vattn, tmp, "ml_dtypes float8 with convert=True",
                    dataclasses.replace(base, q=as_f32(base.q).astype(ml_dtypes.float8_e4m3fn)), "q", convert=True)

        # 3. A fresh temporary, renamed into place; nothing left on a failure; links refused.
        box = os.path.join(tmp, "box")
        os.mkdir(box)
        real_replace, seen = os.replace, []

        def failing_replace(src, dst):
            seen.append(src)
            raise OSError(28, "No space left on device (simulated)")
        os.replace = failing_replace
        try:
            vattn.write(os.path.join(box, "f.h5"), vattn.Header(source="synthetic:test"), [base])
            check(False, "a write whose rename fails raises")
        except OSError:
            pass
        finally:
            os.replace = real_replace
        check(os.listdir(box) == [] and len(seen) == 1 and os.path.dirname(seen[0]) == box and
              os.path.basename(seen[0]) != "f.h5.tmp", f"a failed write leaves nothing (temporary {seen}, "
                                                        f"left {os.listdir(box)})")
        target = os.path.join(tmp, "precious.txt")
        with open(target, "w") as f:
            f.write("precious\n")
        os.symlink(target, os.path.join(box, "link.h5"))
        try:
            vattn.write(os.path.join(box, "link.h5"), vattn.Header(source="synthetic:test"), [base])
            check(False, "a write to a symbolic link raises")
        except vattn.CaseFileError as e:
            with open(target) as f:
                check("symbolic link" in str(e) and f.read() == "precious\n" and sorted(os.listdir(box)) == ["link.h5"],
                      "a write to a symbolic link is refused, its target untouched, nothing left")

        # 4. Capture.submit: the same rules.
        from vattn import capture

        T, P, H, slots = 2, 3, 2, 8
        call = dict(q=base.q[:T], k_extend=base.kv_draft[:T, None], k_buffer=np.tile(base.kv_pool[:1], (slots, 1))[:, None],
                    qo_indptr=np.array([0, T]), kv_indptr=np.array([0, P]), kv_indices=np.array([5, 1, 6]),
                    custom_mask=np.concatenate([np.ones((T, P), bool), np.tril(np.ones((T, T), bool))], 1).ravel(),
                    mask_indptr=np.array([0, T * (P + T)]), sm_scale=0.25, o=np.zeros((T, H, 512), np.uint16))
        call["q"] = np.tile(call["q"], (1, 1, 72))  # 576 columns: MLA
        call["k_extend"] = np.tile(call["k_extend"], (1, 1, 72))
        call["k_buffer"] = np.tile(call["k_buffer"], (1, 1, 72))
        cap = capture.Capture(os.path.join(tmp, "cap32"), start_writer=False)
        cap.submit(0, 0, **dict(call, q=as_f32(call["q"])))
        cap.drain()
        st = cap.close()
        check(st["written"] == 0 and st["skipped_unsupported"] == 1 and " q: expected bf16" in " ".join(st["errors"]),
              f"Capture.submit refuses float32 q, naming the field: {st['errors']}")
        if ml_dtypes is not None:
            cap = capture.Capture(os.path.join(tmp, "capml"), start_writer=False)
            cap.submit(0, 0, **dict(call, q=call["q"].view(ml_dtypes.bfloat16)))
            cap.drain()
            st = cap.close()
            files = os.listdir(os.path.join(tmp, "capml"))
            ok = st["written"] == 1 and len(files) == 1
            check(ok and np.array_equal(vattn.read(os.path.join(tmp, "capml", files[0])).cases[0].q, call["q"]),
                  f"Capture.submit takes ml_dtypes.bfloat16 q by its bits ({st})")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
