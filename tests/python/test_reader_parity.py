#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""ctest: the Python package's reader (vattn.read) and vattn's (vattn info) give the same verdict on
the same hostile and malformed files: both accept, or both refuse naming the same case and field.

The files are made here with h5py from a small valid file of two cases (every optional member
present: kv_slot_ids, draft_parent, an oracle_fp64 and a bf16 `serving` output): one defect per
file (wrong element types, byte orders, ranks, dataspaces, attribute kinds and counts, values,
missing members, NaN where an index belongs, links and storage outside the file, a filter vattn
lacks, declared-only and compressed-bomb datasets, a case over the memory limit, truncated and
non-HDF5 files), a few with two defects (which one is named first is part of the contract), and
variants both must accept (fixed-length and space-padded strings, one-element attributes,
big-endian floats). Both readers get the same memory limit (--max-memory / max_memory); the
Python reader runs in a child with an address-space limit of that plus 512 MiB, so a file that
makes it allocate what the dataspace claims ends as a crash, which counts as a disagreement.

usage: test_reader_parity.py --vattn PATH/TO/vattn --root REPO
       test_reader_parity.py --driver SRC MAX_MEMORY FILE...   (the Python side, one JSON line a file)
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

MAX_MEMORY_GIB = 1
H, D_QK, D_V = 2, 8, 4


def driver(src, max_memory, files):
    """Reads each file with vattn.read; prints {"file", "verdict", "case", "field", "reason"}."""
    import resource

    sys.path.insert(0, src)
    import vattn
    from vattn.errors import _printable

    with open("/proc/self/statm") as f:
        mapped = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    cap = mapped + max_memory + (512 << 20)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    for path in files:
        print(json.dumps({"file": path, "verdict": "started"}), flush=True)
        try:
            vattn.read(path, max_memory=max_memory)
            v = {"verdict": "accepted"}
        except vattn.CaseFileError as e:
            v = {"verdict": "refused", "case": _printable(e.case), "field": _printable(e.field), "reason": e.reason}
        except BaseException as e:  # MemoryError, a TypeError from a file nobody expected: a finding
            v = {"verdict": "crash", "reason": f"{type(e).__name__}: {e}"}
        print(json.dumps(dict(v, file=path)), flush=True)


# ---- the files --------------------------------------------------------------------------------

def bits(rng, shape):
    x = rng.normal(0, 1, shape).astype("float32")
    return ((x.view("uint32") + 0x8000) >> 16).astype("uint16")


def write_base(path):
    """Two valid cases, 'a' and 'b': B=2, P=[3,2], T=[2,3] (a chain and a tree), H=2, d_qk=8, d_v=4."""
    import h5py
    import numpy as np

    rng = np.random.default_rng(5)
    with h5py.File(path, "w") as f:
        f.attrs.update({"format": "vattn-cases", "format_version": np.int32(1), "source": "fixture",
                        "created": "2026-01-01T00:00:00Z", "generator": "test_reader_parity.py", "model": "none"})
        for name in ("a", "b"):
            g = f.create_group("cases/" + name)
            g.attrs.update({"num_heads": np.int32(H), "d_qk": np.int32(D_QK), "d_v": np.int32(D_V),
                            "num_requests": np.int32(2), "sm_scale": np.float64(0.125), "layer": np.int64(3),
                            "step": np.int64(7)})
            for k, v in (("q", bits(rng, (5, H, D_QK))), ("kv_pool", bits(rng, (4, D_QK))),
                         ("kv_draft", bits(rng, (5, D_QK)))):
                g.create_dataset(k, data=v).attrs["dtype"] = "bfloat16"
            g["kv_indices"] = np.array([0, 1, 2, 3, 1], np.int32)
            g["kv_indptr"] = np.array([0, 3, 5], np.int32)
            g["kv_slot_ids"] = np.array([10, 11, 12, 13], np.int64)
            g["qo_indptr"] = np.array([0, 2, 5], np.int32)
            g["draft_mask"] = np.array([1, 0, 1, 1] + [1, 0, 0, 1, 1, 0, 1, 0, 1], np.uint8)
            g["draft_mask_indptr"] = np.array([0, 4, 13], np.int64)
            g["draft_parent"] = np.array([-1, 0, -1, 0, 0], np.int32)
            o = g.create_group("outputs/oracle_fp64")
            o.attrs["description"] = "float64 CPU oracle"
            o["out"] = rng.normal(0, 1, (5, H, D_V)).astype(np.float32)
            o["lse"] = rng.normal(0, 1, (5, H)).astype(np.float32)
            s = g.create_group("outputs/serving")
            s.attrs["description"] = "a server's kernel"
            s.create_dataset("out", data=bits(rng, (5, H, D_V))).attrs["dtype"] = "bfloat16"


def mutations(tmp):
    """(label, change(f, g)) with g = /cases/b; each makes one file from the base."""
    import h5py
    import numpy as np
    from h5py import h5a, h5s, h5t

    def ds(name, data, bf16=False, **kw):
        def change(f, g):
            del g[name]
            d = g.create_dataset(name, data=data, **kw)
            if bf16:
                d.attrs["dtype"] = "bfloat16"
        return change

    def declared(name, shape, dtype, bf16=False, chunks=True):
        def change(f, g):
            del g[name]
            d = g.create_dataset(name, shape=shape, dtype=dtype, chunks=(min(shape[0], 4096),) + shape[1:] if chunks
                                 else None)
            if bf16:
                d.attrs["dtype"] = "bfloat16"
        return change

    def attr(name, value, where="b"):
        def change(f, g):
            obj = {"b": g, "root": f}[where]
            if name in obj.attrs:
                del obj.attrs[name]
            obj.attrs[name] = value
        return change

    def drop_attr(name, where="b"):
        return lambda f, g: {"b": g, "root": f}[where].attrs.__delitem__(name)

    def drop(name):
        return lambda f, g: g.__delitem__(name)

    def both(*changes):
        def change(f, g):
            for c in changes:
                c(f, g)
        return change

    def fixed_string(name, text, pad, where="root"):
        def change(f, g):
            obj = {"b": g, "root": f}[where]
            del obj.attrs[name]
            t = h5t.C_S1.copy()
            t.set_size(len(text))
            t.set_strpad(pad)
            a = h5a.create(obj.id, name.encode(), t, h5s.create(h5s.SCALAR))
            a.write(np.array(text, dtype=f"S{len(text)}"))
        return change

    def pool_rows(n):
        return np.zeros((n, D_QK), np.uint16)

    def qo_bomb(f, g):
        """2^26 zeros, written and deflated to a few KB: what vattn reads before num_requests is checked."""
        del g["qo_indptr"]
        d = g.create_dataset("qo_indptr", shape=(1 << 26,), dtype=np.int32, chunks=(1 << 20,), compression="gzip")
        zeros = np.zeros(1 << 22, np.int32)
        for i in range(0, 1 << 26, 1 << 22):
            d[i:i + (1 << 22)] = zeros

    def virtual(f, g):
        pool = g["kv_pool"][()]
        layout = h5py.VirtualLayout(shape=pool.shape, dtype=pool.dtype)
        layout[...] = h5py.VirtualSource(os.path.join(tmp, "elsewhere.h5"), "pool", shape=pool.shape)
        del g["kv_pool"]
        g.create_virtual_dataset("kv_pool", layout, fillvalue=0).attrs["dtype"] = "bfloat16"

    def external_storage(f, g):
        raw = os.path.join(tmp, "raw.bin")
        pool = g["kv_pool"][()]
        pool.tofile(raw)
        del g["kv_pool"]
        g.create_dataset("kv_pool", shape=pool.shape, dtype=pool.dtype,
                         external=[(raw, 0, pool.nbytes)]).attrs["dtype"] = "bfloat16"

    def recompress(name, **kw):
        def change(f, g):
            data, marker = g[name][()], g[name].attrs.get("dtype")
            del g[name]
            d = g.create_dataset(name, data=data, chunks=True, **kw)
            if marker is not None:
                d.attrs["dtype"] = marker
        return change

    enum_u1 = h5py.enum_dtype({"hidden": 0, "visible": 1}, basetype="u1")
    mask = np.array([1, 0, 1, 1] + [1, 0, 0, 1, 1, 0, 1, 0, 1], np.uint8)
    q = bits(np.random.default_rng(1), (5, H, D_QK))
    nan_idx = np.array([0, 1, np.nan, 3, 1])
    evil = "evil\x1b[31mname"
    return [
        # -- valid variants: both must accept
        ("valid: the base file", lambda f, g: None),
        ("valid: no optional members", both(drop("kv_slot_ids"), drop("draft_parent"), drop("outputs"),
                                            drop_attr("layer"), drop_attr("step"), drop_attr("model", "root"))),
        ("valid: fixed-length null-padded source", fixed_string("source", b"fixture\0\0", h5t.STR_NULLPAD)),
        ("valid: fixed-length space-padded format", fixed_string("format", b"vattn-cases   ", h5t.STR_SPACEPAD)),
        ("valid: one-element array attributes", both(attr("num_heads", np.array([H], np.int32)),
                                                     attr("sm_scale", np.array([0.125])),
                                                     attr("format_version", np.array([1], np.int16), "root"))),
        ("valid: uint8 and int16 integer attributes", both(attr("d_v", np.uint8(D_V)), attr("layer", np.int16(3)))),
        ("valid: big-endian float64 sm_scale", attr("sm_scale", np.array(0.125, ">f8"))),
        ("valid: big-endian float32 lse", lambda f, g: ds("lse", g["outputs/oracle_fp64/lse"][()].astype(">f4"))(
            f, g["outputs/oracle_fp64"])),
        ("valid: gzip and shuffle", recompress("q", compression="gzip", shuffle=True)),
        ("valid: fletcher32 (one of HDF5's own filters)", recompress("kv_pool", fletcher32=True)),
        ("valid: a case name with escapes", lambda f, g: f["cases"].move("b", evil)),
        ("valid: no cases", lambda f, g: (f["cases"].__delitem__("a"), f["cases"].__delitem__("b"))),
        # -- the file and its root attributes
        ("format missing", drop_attr("format", "root")),
        ("format another name", attr("format", "vattn-case", "root")),
        ("format an integer", attr("format", np.int32(1), "root")),
        ("format_version 2", attr("format_version", np.int32(2), "root")),
        ("format_version a string", attr("format_version", "1", "root")),
        ("format_version a float", attr("format_version", 1.0, "root")),
        ("format_version big-endian", attr("format_version", np.array(1, ">i4"), "root")),
        ("format_version two values", attr("format_version", np.array([1, 1], np.int32), "root")),
        ("source missing", drop_attr("source", "root")),
        ("source an integer", attr("source", np.int64(7), "root")),
        ("generator a float", attr("generator", 0.5, "root")),
        ("model an integer", attr("model", np.int32(5), "root")),
        ("notes two strings", attr("notes", ["x", "y"], "root")),
        ("/cases missing", lambda f, g: (f.__delitem__("cases"), f.create_group("other"))),
        ("/cases a dataset", lambda f, g: (f.__delitem__("cases"), f.create_dataset("cases", data=[1, 2]))),
        ("/cases a soft link", lambda f, g: (f.move("cases", "real"), f.__setitem__("cases", h5py.SoftLink("/real")))),
        ("a member of /cases a dataset, another case broken",
         both(lambda f, g: f["cases"].create_dataset("c", data=[1]), lambda f, g: ds("q", q.astype(np.float32))(
             f, f["cases/a"]))),
        ("a member of /cases a soft link", lambda f, g: f["cases"].__setitem__("c", h5py.SoftLink("/cases/a"))),
        ("a member of /cases an external link", lambda f, g: f["cases"].__setitem__("c", h5py.ExternalLink(
            os.path.join(tmp, "elsewhere.h5"), "/cases/a"))),
        # -- case attributes
        ("num_heads missing", drop_attr("num_heads")),
        ("num_heads a float", attr("num_heads", 2.0)),
        ("num_heads a string", attr("num_heads", "2")),
        ("num_heads bool", attr("num_heads", np.bool_(True))),
        ("num_heads big-endian", attr("num_heads", np.array(H, ">i4"))),
        ("num_heads two values", attr("num_heads", np.array([H, H], np.int32))),
        ("num_heads 2^40", attr("num_heads", np.int64(1 << 40))),
        ("num_heads 0", attr("num_heads", np.int32(0))),
        ("num_heads -1", attr("num_heads", np.int32(-1))),
        ("num_heads 3 (the data says 2)", attr("num_heads", np.int32(3))),
        ("d_qk 2^30 (a case over the memory limit)", attr("d_qk", np.int32(1 << 30))),
        ("d_v > d_qk", attr("d_v", np.int32(D_QK + 1))),
        ("d_v uint64 above INT64_MAX", attr("d_v", np.uint64(1 << 63))),
        ("sm_scale missing", drop_attr("sm_scale")),
        ("sm_scale float32", attr("sm_scale", np.float32(0.125))),
        ("sm_scale an integer", attr("sm_scale", np.int64(1))),
        ("sm_scale NaN", attr("sm_scale", np.float64("nan"))),
        ("sm_scale negative", attr("sm_scale", -0.125)),
        ("num_requests missing", drop_attr("num_requests")),
        ("num_requests 3 (qo_indptr says 2)", attr("num_requests", np.int32(3))),
        ("num_requests -1", attr("num_requests", np.int32(-1))),
        ("num_requests 2^40", attr("num_requests", np.int64(1 << 40))),
        ("num_requests a float", attr("num_requests", 2.0)),
        ("recipe an integer", attr("recipe", np.int32(4))),
        ("recipe that does not parse", attr("recipe", "B=2 H=x")),
        ("recipe of another shape", attr("recipe", "B=2 H=2 P=[3,2] T=[2,2]")),
        ("layer a float", attr("layer", 3.0)),
        ("step a string", attr("step", "7")),
        ("tp_rank uint64 above INT64_MAX", attr("tp_rank", np.uint64((1 << 64) - 1))),
        ("tp_rank big-endian", attr("tp_rank", np.array(0, ">i8"))),
        # -- datasets: presence and element types
        *[(f"{k} missing", drop(k)) for k in ("q", "kv_pool", "kv_indices", "kv_indptr", "kv_draft", "qo_indptr",
                                               "draft_mask", "draft_mask_indptr")],
        ("q a group", lambda f, g: (g.__delitem__("q"), g.create_group("q"))),
        ("q float32", ds("q", q.astype(np.float32), bf16=True)),
        ("q int16", ds("q", q.view(np.int16), bf16=True)),
        ("kv_pool big-endian uint16", lambda f, g: ds("kv_pool", g["kv_pool"][()].astype(">u2"), bf16=True)(f, g)),
        ("kv_draft without the bf16 marker", lambda f, g: g["kv_draft"].attrs.__delitem__("dtype")),
        ("q marked float16", lambda f, g: g["q"].attrs.__setitem__("dtype", "float16")),
        ("q marker an integer", lambda f, g: g["q"].attrs.__setitem__("dtype", np.int32(16))),
        ("kv_indices int64", ds("kv_indices", np.array([0, 1, 2, 3, 1], np.int64))),
        ("kv_indices float64 with NaN", ds("kv_indices", nan_idx)),
        ("kv_indptr uint32", ds("kv_indptr", np.array([0, 3, 5], np.uint32))),
        ("kv_indptr big-endian int32", ds("kv_indptr", np.array([0, 3, 5], ">i4"))),
        ("qo_indptr float32 with NaN", ds("qo_indptr", np.array([0, np.nan, 5], np.float32))),
        ("draft_mask bool", ds("draft_mask", mask.astype(bool))),
        ("draft_mask int8", ds("draft_mask", mask.astype(np.int8))),
        ("draft_mask an enum over uint8", ds("draft_mask", mask, dtype=enum_u1)),
        ("draft_mask_indptr int32", ds("draft_mask_indptr", np.array([0, 4, 13], np.int32))),
        ("kv_slot_ids int32", ds("kv_slot_ids", np.array([10, 11, 12, 13], np.int32))),
        ("draft_parent int64", ds("draft_parent", np.array([-1, 0, -1, 0, 0], np.int64))),
        ("draft_parent float with NaN", ds("draft_parent", np.array([-1, 0, np.nan, 0, 0]))),
        ("q a string dataset", ds("q", np.array([b"abc"] * 80), bf16=True)),
        # -- ranks and dataspaces
        ("q flat (the right element count)", ds("q", q.ravel(), bf16=True)),
        ("q [n_q, H*d_qk]", ds("q", q.reshape(5, H * D_QK), bf16=True)),
        ("kv_pool flat", lambda f, g: ds("kv_pool", g["kv_pool"][()].ravel(), bf16=True)(f, g)),
        ("kv_draft [n_q, 1, d_qk]", lambda f, g: ds("kv_draft", g["kv_draft"][()].reshape(5, 1, D_QK), bf16=True)(f, g)),
        ("kv_draft of another n_q", ds("kv_draft", np.zeros((4, D_QK), np.uint16), bf16=True)),
        ("qo_indptr [B+1, 1]", ds("qo_indptr", np.array([[0], [2], [5]], np.int32))),
        ("kv_indices a scalar", ds("kv_indices", np.int32(0))),
        ("kv_indices a null dataspace", ds("kv_indices", h5py.Empty(np.int32))),
        ("kv_slot_ids n_rows+1", ds("kv_slot_ids", np.arange(5, dtype=np.int64))),
        ("draft_parent [n_q, 1]", ds("draft_parent", np.array([[-1], [0], [-1], [0], [0]], np.int32))),
        ("kv_pool of another width", ds("kv_pool", np.zeros((4, D_QK + 1), np.uint16), bf16=True)),
        # -- values (validate())
        ("qo_indptr decreasing", ds("qo_indptr", np.array([0, 5, 2], np.int32))),
        ("qo_indptr starting at 1", ds("qo_indptr", np.array([1, 2, 5], np.int32))),
        ("a request with no drafts", both(ds("qo_indptr", np.array([0, 0, 5], np.int32)))),
        ("kv_indices past the pool", ds("kv_indices", np.array([0, 1, 2, 4, 1], np.int32))),
        ("kv_indices negative", ds("kv_indices", np.array([0, -1, 2, 3, 1], np.int32))),
        ("kv_indices one short", ds("kv_indices", np.array([0, 1, 2, 3], np.int32))),
        ("kv_indptr decreasing", ds("kv_indptr", np.array([0, 3, 2], np.int32))),
        ("kv_slot_ids repeated", ds("kv_slot_ids", np.array([10, 11, 11, 13], np.int64))),
        ("kv_slot_ids negative", ds("kv_slot_ids", np.array([10, -11, 12, 13], np.int64))),
        ("draft_mask 2", ds("draft_mask", np.where(np.arange(13) == 2, 2, mask).astype(np.uint8))),
        ("draft_mask diagonal 0 on a row that sees", ds("draft_mask", np.where(np.arange(13) == 3, 0, mask).astype(
            np.uint8))),
        ("draft_mask_indptr spans", ds("draft_mask_indptr", np.array([0, 5, 13], np.int64))),
        ("draft_parent out of range", ds("draft_parent", np.array([-1, 1, -1, 0, 0], np.int32))),
        ("draft_parent another tree", ds("draft_parent", np.array([-1, 0, -1, 0, 1], np.int32))),
        # -- outputs
        ("outputs a dataset", lambda f, g: (g.__delitem__("outputs"), g.create_dataset("outputs", data=[0]))),
        ("outputs/serving a dataset", lambda f, g: (g["outputs"].__delitem__("serving"),
                                                    g["outputs"].create_dataset("serving", data=[0]))),
        ("outputs/serving a soft link", lambda f, g: (g["outputs"].__delitem__("serving"), g["outputs"].__setitem__(
            "serving", h5py.SoftLink("/cases/a/outputs/serving")))),
        ("description missing", lambda f, g: g["outputs/serving"].attrs.__delitem__("description")),
        ("description an integer", lambda f, g: g["outputs/serving"].attrs.__setitem__("description", np.int32(1))),
        ("serving out missing", lambda f, g: g["outputs/serving"].__delitem__("out")),
        ("serving out float32", lambda f, g: ds("out", np.zeros((5, H, D_V), np.float32))(f, g["outputs/serving"])),
        ("serving out flat", lambda f, g: ds("out", np.zeros(5 * H * D_V, np.uint16), bf16=True)(
            f, g["outputs/serving"])),
        ("serving out without the marker", lambda f, g: g["outputs/serving/out"].attrs.__delitem__("dtype")),
        ("serving lse of another shape", lambda f, g: g["outputs/serving"].create_dataset(
            "lse", data=np.zeros((5, H + 1), np.float32))),
        ("oracle out bf16 bits", lambda f, g: ds("out", np.zeros((5, H, D_V), np.uint16), bf16=True)(
            f, g["outputs/oracle_fp64"])),
        ("oracle lse missing", lambda f, g: g["outputs/oracle_fp64"].__delitem__("lse")),
        ("oracle lse float64", lambda f, g: ds("lse", np.zeros((5, H)))(f, g["outputs/oracle_fp64"])),
        ("oracle lse an external link", lambda f, g: (g["outputs/oracle_fp64"].__delitem__("lse"),
                                                      g["outputs/oracle_fp64"].__setitem__("lse", h5py.ExternalLink(
                                                          os.path.join(tmp, "elsewhere.h5"), "/lse")))),
        # -- outside the file, filters
        ("q a soft link", lambda f, g: (g.__delitem__("q"), g.__setitem__("q", h5py.SoftLink("/cases/a/q")))),
        ("kv_pool an external link", lambda f, g: (g.__delitem__("kv_pool"), g.__setitem__(
            "kv_pool", h5py.ExternalLink(os.path.join(tmp, "elsewhere.h5"), "/pool")))),
        ("kv_pool a virtual dataset", virtual),
        ("kv_pool in external raw storage", external_storage),
        ("q compressed with LZF", recompress("q", compression="lzf")),
        # -- sizes: declared, never written, compressed bombs, the memory limit
        ("kv_pool declared 2^27 rows (over the memory limit)", declared("kv_pool", (1 << 27, D_QK), np.uint16, True)),
        ("kv_pool declared 2^20 rows, never written", declared("kv_pool", (1 << 20, D_QK), np.uint16, True)),
        ("kv_pool contiguous, never written", declared("kv_pool", (4, D_QK), np.uint16, True, chunks=False)),
        ("q declared 2^28 tokens", declared("q", (1 << 28, H, D_QK), np.uint16, True)),
        ("q declared 2^20 tokens, never written", declared("q", (1 << 20, H, D_QK), np.uint16, True)),
        ("kv_indices declared 2^31 entries", declared("kv_indices", (1 << 31,), np.int32)),
        ("draft_mask declared 2^32 entries", declared("draft_mask", (1 << 32,), np.uint8)),
        ("qo_indptr declared 2^30 entries", declared("qo_indptr", (1 << 30,), np.int32)),
        ("kv_indptr declared 2^30 entries", declared("kv_indptr", (1 << 30,), np.int32)),
        ("draft_mask_indptr declared 2^30 entries", declared("draft_mask_indptr", (1 << 30,), np.int64)),
        ("lse declared 2^30 rows", lambda f, g: declared("lse", (1 << 30, H), np.float32)(f, g["outputs/oracle_fp64"])),
        ("qo_indptr 2^26 zeros, deflated", qo_bomb),
        ("kv_slot_ids declared, never written", declared("kv_slot_ids", (4,), np.int64)),
        # -- two defects: which is named first is part of the contract
        ("num_heads a float and q float32", both(attr("num_heads", 2.0), ds("q", q.astype(np.float32), bf16=True))),
        ("kv_indices int64 and qo_indptr float32",
         both(ds("kv_indices", np.array([0, 1, 2, 3, 1], np.int64)), ds("qo_indptr", np.array([0, 2, 5], np.float32)))),
        ("kv_pool int16 and draft_mask uint16",
         both(ds("kv_pool", pool_rows(4).view(np.int16), bf16=True), ds("draft_mask", mask.astype(np.uint16)))),
        ("kv_draft float32 and draft_parent int64",
         both(ds("kv_draft", np.zeros((5, D_QK), np.float32), bf16=True),
              ds("draft_parent", np.array([-1, 0, -1, 0, 0], np.int64)))),
        ("sm_scale float32 and num_requests a float", both(attr("sm_scale", np.float32(0.1)), attr("num_requests", 2.0))),
        ("serving out float32 and q flat", both(
            lambda f, g: ds("out", np.zeros((5, H, D_V), np.float32))(f, g["outputs/serving"]),
            ds("q", q.ravel(), bf16=True))),
        ("the memory limit and kv_indices int64", both(attr("d_qk", np.int32(1 << 30)),
                                                        ds("kv_indices", np.array([0, 1, 2, 3, 1], np.int64)))),
        ("qo_indptr decreasing and draft_mask int8", both(ds("qo_indptr", np.array([0, 5, 2], np.int32)),
                                                           ds("draft_mask", mask.astype(np.int8)))),
    ]


def whole_file_cases(tmp, base):
    """Files that are not an edited copy: truncated, empty, not HDF5, a folder, missing."""
    out = []
    size = os.path.getsize(base)
    for label, keep in (("truncated to half", size // 2), ("truncated to 100 bytes", 100), ("empty", 0)):
        path = os.path.join(tmp, re.sub(r"\W+", "_", label) + ".h5")
        with open(base, "rb") as src, open(path, "wb") as dst:
            dst.write(src.read(keep))
        out.append((label, path))
    text = os.path.join(tmp, "text.h5")
    with open(text, "w") as f:
        f.write("not an HDF5 file\n" * 100)
    folder = os.path.join(tmp, "folder.h5")
    os.mkdir(folder)
    return out + [("a text file", text), ("a folder", folder), ("a missing file", os.path.join(tmp, "nosuch.h5"))]


# ---- the two readers --------------------------------------------------------------------------

MESSAGE = re.compile(r"(?:case '(?P<case>.*?)': )?(?:field '(?P<field>.*?)': )?(?P<reason>.*)")


def vattn_verdict(exe, path):
    p = subprocess.run([exe, "info", "--max-memory", str(MAX_MEMORY_GIB), path], capture_output=True, text=True,
                       errors="replace", timeout=120)
    if p.returncode == 0:
        return {"verdict": "accepted"}
    # "vattn info: FILE: case 'NAME': field 'FIELD': reason"
    line = next((x for x in p.stderr.splitlines() if path + ": " in x), None)
    if p.returncode != 2 or line is None:
        return {"verdict": "crash", "reason": f"exit {p.returncode}: {p.stderr.strip()[-400:]}"}
    m = MESSAGE.fullmatch(line[line.index(path + ": ") + len(path) + 2:])
    return {"verdict": "refused", "case": m["case"] or "", "field": m["field"] or "", "reason": m["reason"]}


def python_verdicts(src, files):
    """Runs the driver; one that dies (a signal, a limit) is recorded as a crash on its file and
    restarted on the rest."""
    verdicts, todo = {}, list(files)
    while todo:
        p = subprocess.run([sys.executable, __file__, "--driver", src, str(MAX_MEMORY_GIB << 30)] + todo,
                           capture_output=True, text=True, timeout=600)
        started = None
        for line in p.stdout.splitlines():
            v = json.loads(line)
            if v["verdict"] == "started":
                started = v["file"]
            else:
                verdicts[v.pop("file")] = v
        done = set(verdicts)
        todo = [f for f in todo if f not in done]
        if todo and started in todo:
            verdicts[started] = {"verdict": "crash", "reason": f"the reader died (exit {p.returncode}): "
                                                               f"{p.stderr.strip()[-400:]}"}
            todo.remove(started)
        elif todo:
            raise SystemExit(f"FAIL: the Python driver stopped before {todo[0]}: {p.stderr.strip()[-800:]}")
    return verdicts


def main():
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from package_checks import arguments, check, finish

    a = arguments()
    import h5py

    with tempfile.TemporaryDirectory(prefix="vattn-parity-") as tmp:
        base = os.path.join(tmp, "base.h5")
        write_base(base)
        files = []
        for i, (label, change) in enumerate(mutations(tmp)):
            path = os.path.join(tmp, f"m{i:03d}.h5")
            shutil.copyfile(base, path)
            with h5py.File(path, "r+") as f:
                change(f, f["cases/b"] if "cases/b" in f else None)
            files.append((label, path))
        files += whole_file_cases(tmp, base)

        theirs = {path: vattn_verdict(a.vattn, path) for _, path in files}
        mine = python_verdicts(a.src, [path for _, path in files])
        accepted = refused = 0
        for label, path in files:
            v, p = theirs[path], mine.get(path)
            if p is None:
                p = {"verdict": "missing"}
            same = v["verdict"] == p["verdict"] and (v["verdict"] != "refused" or
                                                     (v["case"], v["field"]) == (p["case"], p["field"]))
            crashed = "crash" in (v["verdict"], p["verdict"])
            if v["verdict"] == "refused":
                what = f"refuse case '{v['case']}' field '{v['field']}'"
            else:
                what = v["verdict"]
            if same and not crashed:
                accepted += v["verdict"] == "accepted"
                refused += v["verdict"] == "refused"
                print(f"ok: {label}: both {what}")
            else:
                check(False, f"{label}: vattn {v['verdict']} {v.get('case', '')!r} {v.get('field', '')!r} "
                             f"({v.get('reason', '')}); python {p['verdict']} {p.get('case', '')!r} "
                             f"{p.get('field', '')!r} ({p.get('reason', '')})")
        # The labels say which verdict is meant: a test that both readers pass by refusing
        # everything (or accepting everything) must not pass.
        for label, path in files:
            if label.startswith("valid:"):
                check(theirs[path]["verdict"] == "accepted", f"{label}: vattn accepts it")
            elif theirs[path]["verdict"] == "accepted":
                check(False, f"{label}: vattn accepts a file meant to be refused")
        print(f"{len(files)} files: {accepted} accepted and {refused} refused by both readers alike")
    return finish()


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--driver":
        driver(sys.argv[2], int(sys.argv[3]), sys.argv[4:])
        sys.exit(0)
    sys.exit(main())
