"""Reading and writing case files (docs/case-format.md, format vattn-cases v1)."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import os
import tempfile

import h5py
import numpy as np

from . import dtypes
from .errors import CaseFileError
from .validate import validate

FORMAT_NAME = "vattn-cases"
FORMAT_VERSION = 1
ORACLE = "oracle_fp64"
OPTIONAL_HEADER = ("model", "gpu", "notes")
CASE_INT_ATTRS = ("layer", "step", "tp_rank")
BF16 = ("q", "kv_pool", "kv_draft")
# dataset -> (numpy dtype, required)
DATASETS = {"q": (np.uint16, True), "kv_pool": (np.uint16, True), "kv_indices": (np.int32, True),
            "kv_indptr": (np.int32, True), "kv_slot_ids": (np.int64, False), "kv_draft": (np.uint16, True),
            "qo_indptr": (np.int32, True), "draft_mask": (np.uint8, True), "draft_mask_indptr": (np.int64, True),
            "draft_parent": (np.int32, False)}


@dataclasses.dataclass
class Output:
    producer: str
    description: str
    out: np.ndarray  # [n_q, H, d_v]: float32 for oracle_fp64, else bf16 bits (uint16)
    lse: np.ndarray | None  # [n_q, H] float32; None: the producer reports none (never for oracle_fp64)


@dataclasses.dataclass
class Case:
    name: str
    num_heads: int
    sm_scale: float
    q: np.ndarray
    kv_pool: np.ndarray
    kv_indices: np.ndarray
    kv_indptr: np.ndarray
    kv_draft: np.ndarray
    qo_indptr: np.ndarray
    draft_mask: np.ndarray
    draft_mask_indptr: np.ndarray
    d_qk: int = 576
    d_v: int = 512
    kv_slot_ids: np.ndarray | None = None
    draft_parent: np.ndarray | None = None
    recipe: str = ""
    int_attrs: dict[str, int] = dataclasses.field(default_factory=dict)
    outputs: list[Output] = dataclasses.field(default_factory=list)

    @property
    def num_requests(self):
        return len(self.qo_indptr) - 1


@dataclasses.dataclass
class Header:
    source: str
    created: str = ""
    generator: str = ""
    optional: dict[str, str] = dataclasses.field(default_factory=dict)
    format_version: int = FORMAT_VERSION


@dataclasses.dataclass
class CaseFile:
    path: str
    header: Header
    cases: list[Case]


def _text(v):
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


def _hard_link(group, name, err):
    """The member must be a hard link: nothing outside the file is followed."""
    link = group.get(name, getlink=True)
    if link is None:
        return False
    if isinstance(link, h5py.ExternalLink):
        err(name, "is an external link (to an object in another file): a case file must hold its objects itself")
    if isinstance(link, h5py.SoftLink):
        err(name, "is a soft link: a case file must hold its objects itself (hard links only)")
    return True


def _dataset(g, name, dtype, err, required=True):
    if not _hard_link(g, name, err):
        if required:
            err(name, f"missing dataset '{name}'")
        return None
    d = g[name]
    if not isinstance(d, h5py.Dataset):
        err(name, f"'{name}' is not a dataset")
    if d.is_virtual:
        err(name, "is a virtual dataset: vattn reads only data stored in the case file")
    if d.external:
        err(name, "keeps its raw data in external file(s): vattn reads only data stored in the case file")
    want = np.dtype(dtype).newbyteorder("<")
    if d.dtype != want and not (d.dtype == np.dtype(dtype) and want.byteorder in "=<|"):
        err(name, f"expected {np.dtype(dtype).name}, found {d.dtype.name}{' (big-endian)' if d.dtype.byteorder == '>' else ''}")
    if name in BF16 and _text(d.attrs.get("dtype", "")) != "bfloat16":
        err(name, "bf16 data must carry the attribute dtype = \"bfloat16\"")
    try:
        return d[()]
    except OSError as e:  # a missing filter, a truncated file
        err(name, f"cannot read the data ({e})")


def _int_attr(attrs, key, err, required=True):
    if key not in attrs:
        if required:
            err(key, f"missing attribute '{key}'")
        return None
    v = attrs[key]
    if not isinstance(v, (np.integer, int)) or isinstance(v, bool):
        err(key, f"must be an integer (found {type(v).__name__})")
    return int(v)


def _read_case(path, g, name):
    def err(field, reason):
        raise CaseFileError(path, name, field, reason)

    a = g.attrs
    if "sm_scale" not in a:
        err("sm_scale", "missing attribute 'sm_scale'")
    if not isinstance(a["sm_scale"], np.float64) and not isinstance(a["sm_scale"], float):
        err("sm_scale", f"must be float64 (found {np.asarray(a['sm_scale']).dtype.name})")
    arrays = {k: _dataset(g, k, t, err, req) for k, (t, req) in DATASETS.items()}
    c = Case(name=name, num_heads=_int_attr(a, "num_heads", err), d_qk=_int_attr(a, "d_qk", err),
             d_v=_int_attr(a, "d_v", err), sm_scale=float(a["sm_scale"]),
             recipe=_text(a["recipe"]) if "recipe" in a else "",
             int_attrs={k: _int_attr(a, k, err) for k in CASE_INT_ATTRS if k in a}, **arrays)
    num_requests = _int_attr(a, "num_requests", err)
    if num_requests != c.num_requests:
        err("num_requests", f"is {num_requests} but qo_indptr has {len(c.qo_indptr)} entries (num_requests+1 expected)")
    if _hard_link(g, "outputs", err):
        for producer in sorted(g["outputs"]):
            base = "outputs/" + producer
            _hard_link(g["outputs"], producer, lambda f, r, base=base: err(base, r))
            og = g["outputs"][producer]
            if "description" not in og.attrs:
                err(base, "missing attribute 'description'")
            out_type = np.float32 if producer == ORACLE else np.uint16
            out = _dataset(og, "out", out_type, lambda f, r, base=base: err(base + "/out", r))
            if producer != ORACLE and _text(og["out"].attrs.get("dtype", "")) != "bfloat16":
                err(base + "/out", "bf16 data must carry the attribute dtype = \"bfloat16\"")
            # lse is optional for a producer that does not report one; oracle_fp64 always has it.
            lse = _dataset(og, "lse", np.float32, lambda f, r, base=base: err(base + "/lse", r), required=producer == ORACLE)
            c.outputs.append(Output(producer, _text(og.attrs["description"]), out, lse))
    return c


def read(path, validate_cases=True):
    """Reads a case file; raises CaseFileError naming file, case and field."""
    if not os.path.isfile(path):
        raise CaseFileError(path, "", "", "file does not exist" if not os.path.exists(path) else "is not a regular file")
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise CaseFileError(path, "", "", f"cannot open the HDF5 file ({e})") from e
    with f:
        a = f.attrs
        if _text(a.get("format", "")) != FORMAT_NAME:
            raise CaseFileError(path, "", "format", "not a vattn case file")
        version = a.get("format_version")
        if version is None or int(version) != FORMAT_VERSION:
            raise CaseFileError(path, "", "format_version", f"{version} is not known to this reader")
        for key in ("source", "created", "generator"):
            if key not in a:
                raise CaseFileError(path, "", key, f"missing root attribute '{key}'")
        header = Header(source=_text(a["source"]), created=_text(a["created"]), generator=_text(a["generator"]),
                        optional={k: _text(a[k]) for k in OPTIONAL_HEADER if k in a}, format_version=int(version))
        if not _hard_link(f, "cases", lambda fld, r: (_ for _ in ()).throw(CaseFileError(path, "", "cases", r))):
            raise CaseFileError(path, "", "cases", "missing group '/cases'")
        cases = []
        for name in sorted(f["cases"]):
            _hard_link(f["cases"], name, lambda fld, r, name=name: (_ for _ in ()).throw(CaseFileError(path, name, "", r)))
            if not isinstance(f["cases"][name], h5py.Group):
                raise CaseFileError(path, "", "cases", f"'/cases/{name}' is not a group (every member of /cases is a case)")
            c = _read_case(path, f["cases"][name], name)
            if validate_cases:
                validate(c, path)
            cases.append(c)
    return CaseFile(path, header, cases)


def _stored_case(path: str, c: Case, convert: bool) -> Case:
    """The case as it will be stored: every array through the rules of dtypes.py, the attributes
    checked as vattn's reader will read them, validate() and the shapes vattn's reader expects."""
    def err(field, reason):
        raise CaseFileError(path, c.name, field, "cannot write: " + reason)

    for k in ("num_heads", "d_qk", "d_v"):
        v = getattr(c, k)
        if not isinstance(v, (int, np.integer)) or isinstance(v, (bool, np.bool_)):
            err(k, f"must be an integer (is {type(v).__name__})")
        if not -2 ** 31 <= int(v) < 2 ** 31:
            err(k, f"value {v} does not fit int32")
    if not isinstance(c.sm_scale, (int, float, np.integer, np.floating)) or isinstance(c.sm_scale, (bool, np.bool_)):
        err("sm_scale", f"must be a number (is {type(c.sm_scale).__name__})")
    if not isinstance(c.recipe, str):
        err("recipe", f"must be a string (is {type(c.recipe).__name__})")
    for k, v in c.int_attrs.items():
        if k not in CASE_INT_ATTRS:
            err(k, "not an integer case attribute of the schema (layer, step, tp_rank)")
        if not isinstance(v, (int, np.integer)) or isinstance(v, (bool, np.bool_)) or not -2 ** 63 <= int(v) < 2 ** 63:
            err(k, f"must be an integer that fits int64 (is {v!r})")
    producers = [o.producer for o in c.outputs]
    try:
        arrays = {k: dtypes.bf16_bits(getattr(c, k), k, convert) for k in BF16}
        for k, t in _INDEX_ARRAYS.items():
            v = getattr(c, k)
            arrays[k] = None if v is None else dtypes.int_array(v, k, t)
        outputs = []
        for o in c.outputs:
            base = "outputs/" + str(o.producer)
            if not isinstance(o.producer, str) or o.producer in ("", ".") or "/" in o.producer:
                err(base, "a producer name must be non-empty, not '.', without '/'")
            if producers.count(o.producer) > 1:
                err(base, "the producer appears twice")
            out = (dtypes.float32_array(o.out, base + "/out") if o.producer == ORACLE
                   else dtypes.bf16_bits(o.out, base + "/out", convert))
            lse = None if o.lse is None else dtypes.float32_array(o.lse, base + "/lse")
            outputs.append(Output(o.producer, o.description, out, lse))
    except CaseFileError as e:
        raise CaseFileError(path, c.name, e.field, e.reason) from None
    s = dataclasses.replace(c, num_heads=int(c.num_heads), d_qk=int(c.d_qk), d_v=int(c.d_v),
                            sm_scale=float(c.sm_scale), int_attrs={k: int(v) for k, v in c.int_attrs.items()},
                            outputs=outputs, **arrays)
    validate(s, path)
    # The element counts are right (validate); the ranks must be too, or vattn refuses the file.
    n_q, n_rows, H = int(s.qo_indptr[-1]), s.kv_pool.size // s.d_qk, s.num_heads
    want = {"q": (n_q, H, s.d_qk), "kv_pool": (n_rows, s.d_qk), "kv_draft": (n_q, s.d_qk),
            "kv_slot_ids": (n_rows,), "draft_parent": (n_q,)}
    for k in _INDEX_ARRAYS:
        want.setdefault(k, (getattr(s, k).size,) if getattr(s, k) is not None else None)
    for o in s.outputs:
        want["outputs/" + o.producer + "/out"] = (n_q, H, s.d_v)
        want["outputs/" + o.producer + "/lse"] = (n_q, H)
    have = {k: getattr(s, k) for k in list(BF16) + list(_INDEX_ARRAYS)}
    for o in s.outputs:
        have["outputs/" + o.producer + "/out"], have["outputs/" + o.producer + "/lse"] = o.out, o.lse
    for k, a in have.items():
        if a is not None and tuple(a.shape) != want[k]:
            err(k, f"has shape {list(a.shape)}, expected {list(want[k])} (the shape vattn reads)")
    return s


_INDEX_ARRAYS = {"kv_indices": np.int32, "kv_indptr": np.int32, "kv_slot_ids": np.int64, "qo_indptr": np.int32,
                 "draft_mask": np.uint8, "draft_mask_indptr": np.int64, "draft_parent": np.int32}


def write(path: str, header: Header, cases: list, convert: bool = False) -> None:
    """Writes a complete case file (replacing it), as vattn's writer lays it out.

    bf16 fields take uint16 bits, ml_dtypes.bfloat16 arrays or torch bfloat16 tensors (their bits);
    float16/32/64 values only with convert=True, rounded to nearest even (dtypes.py). Anything
    else, and anything vattn's reader would refuse, raises CaseFileError naming the case and field
    before a byte is written. The file is written under a fresh temporary name beside it and
    renamed into place; a path that is a symbolic link is refused, never written through."""
    for k in ("source", "created", "generator"):
        if not isinstance(getattr(header, k), str):
            raise CaseFileError(path, "", k, "cannot write: must be a string")
    if not header.source:
        raise CaseFileError(path, "", "source", "cannot write: must be set")
    for k, v in header.optional.items():
        if k not in OPTIONAL_HEADER:
            raise CaseFileError(path, "", k, "cannot write: not a root attribute of the schema (model, gpu, notes)")
        if not isinstance(v, str):
            raise CaseFileError(path, "", k, "cannot write: must be a string")
    names = [c.name for c in cases]
    for c in cases:
        if not isinstance(c.name, str) or not c.name or c.name == "." or "/" in c.name or names.count(c.name) > 1:
            raise CaseFileError(path, str(c.name), "", "cannot write: a case name must be unique, non-empty, not "
                                                       "'.', without '/'")
    stored = [_stored_case(path, c, convert) for c in cases]
    if os.path.islink(path):
        raise CaseFileError(path, "", "", "cannot write: it is a symbolic link (the file is replaced, never written through)")
    # A fresh temporary beside it (mkstemp: O_CREAT|O_EXCL, a name nobody planted), renamed into
    # place; removed on any failure, so a failed write leaves neither half a file nor a temporary.
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".", prefix=os.path.basename(path) + ".tmp-")
    try:
        os.fchmod(fd, 0o644)
        with os.fdopen(fd, "w+b") as fo, h5py.File(fo, "w") as f:
            f.attrs["format"] = FORMAT_NAME
            f.attrs["format_version"] = np.int32(FORMAT_VERSION)
            f.attrs["source"] = header.source
            f.attrs["created"] = header.created or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            f.attrs["generator"] = header.generator or "vattn (python) 0.1.0"
            for k, v in header.optional.items():
                f.attrs[k] = v
            root = f.create_group("cases")
            for c in stored:
                g = root.create_group(c.name)
                for k in ("num_heads", "d_qk", "d_v"):
                    g.attrs[k] = np.int32(getattr(c, k))
                g.attrs["num_requests"] = np.int32(c.num_requests)
                g.attrs["sm_scale"] = np.float64(c.sm_scale)
                if c.recipe:
                    g.attrs["recipe"] = c.recipe
                for k, v in c.int_attrs.items():
                    g.attrs[k] = np.int64(v)
                for k in list(BF16) + list(_INDEX_ARRAYS):
                    v = getattr(c, k)
                    if v is None:
                        continue
                    d = g.create_dataset(k, data=v, **_storage(v))
                    if k in BF16:
                        d.attrs["dtype"] = "bfloat16"
                if c.outputs:
                    og = g.create_group("outputs")
                    for o in c.outputs:
                        p = og.create_group(o.producer)
                        p.attrs["description"] = o.description
                        d = p.create_dataset("out", data=o.out, **_storage(o.out))
                        if o.producer != ORACLE:
                            d.attrs["dtype"] = "bfloat16"
                        if o.lse is not None:
                            p.create_dataset("lse", data=o.lse)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _storage(a: np.ndarray) -> dict:
    """Datasets over 64 KiB: chunked, shuffled, deflated (level 4), as vattn writes them."""
    if a.nbytes <= 64 * 1024 or a.ndim == 0:
        return {}
    row = a.itemsize * int(np.prod(a.shape[1:], dtype=np.int64))
    chunk = (max(1, min(a.shape[0], 256 * 1024 // max(row, 1))),) + a.shape[1:]
    return {"chunks": chunk, "shuffle": True, "compression": "gzip", "compression_opts": 4}
