"""Reading and writing case files (docs/case-format.md, format vattn-cases v1)."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import os
import tempfile

import h5py
import numpy as np

from . import dtypes, h5rules
from .errors import CaseFileError
from .validate import validate

FORMAT_NAME = "vattn-cases"
FORMAT_VERSION = 1
ORACLE = "oracle_fp64"
OPTIONAL_HEADER = ("model", "gpu", "notes")
CASE_INT_ATTRS = ("layer", "step", "tp_rank")
BF16 = ("q", "kv_pool", "kv_draft")


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


def _raiser(path: str, case: str, field: str):
    """err(reason) for the h5rules functions: raises the CaseFileError naming this place."""
    def err(reason: str):
        raise CaseFileError(path, case, field, reason)
    return err


def default_memory_limit() -> int:
    """vattn's default --max-memory: half the machine's RAM (8 GiB assumed when it cannot tell)."""
    try:
        ram = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        ram = 0
    return (ram if ram > 0 else 8 << 30) // 2


def case_memory_estimate(n_q: int, heads: int, d_qk: int, d_v: int, n_rows: int, keys: int, mask_entries: int,
                         outputs: int) -> int:
    """Bytes that reading and checking one case takes, as vattn counts them (case_file_read.cpp):
    the tensors, the stored outputs widened to float, the oracle's float64 working set."""
    need = (2 * n_rows * d_qk + 2 * n_q * heads * d_qk + 2 * n_q * d_qk + 4 * keys + mask_entries
            + outputs * 4 * n_q * heads * (d_v + 1) + 3 * 8 * n_q * heads * (d_v + 1))
    return max(0, need)  # negative dims are validate()'s to report


def _indptr_total(v) -> int:
    """The last entry of an index-pointer array that starts at 0 and never decreases, else -1."""
    v = np.asarray(v, dtype=np.int64)
    if v.size == 0 or v[0] != 0 or (np.diff(v) < 0).any():
        return -1
    return int(v[-1])


class _CaseReader:
    """One case group, read in vattn's order (case_file_read.cpp read_case): attributes, the index
    arrays, the memory check from the dataspaces, then the tensors and stored outputs. The first
    broken rule is raised, so both readers name the same field for the same file."""

    def __init__(self, path: str, group: h5py.Group, name: str, max_memory: int):
        self.path, self.g, self.name, self.max_memory = path, group, name, max_memory

    def err(self, field: str):
        return _raiser(self.path, self.name, field)

    def int_dim(self, key: str) -> int:
        v = h5rules.attr_int(self.g, key, self.err(key))
        if not -2 ** 31 <= v < 2 ** 31:
            self.err(key)(f"value {v} is out of range")
        return v

    def array(self, name: str, elem: str, want: list, loc=None, field=None):
        """(data, dims) of dataset `name` after its type, bf16 marker and shape checks."""
        field = field or name
        err = self.err(field)
        d = h5rules.open_dataset(self.g if loc is None else loc, name, err)
        t = d.id.get_type()
        if not _ELEM_FITS[elem](t):
            err(f"expected {_ELEM_TEXT[elem]}, found {h5rules.type_name(t)}")
        if elem == "bf16":
            _check_bf16_marker(d, err)
        shape = h5rules.dims(d, err)
        h5rules.check_shape(shape, want, err)
        return h5rules.read(d, _ELEM_NUMPY[elem], err), shape

    def expect_elements(self, name: str, want: int, shape: str) -> None:
        """A dataset whose length is already fixed is measured before it is read: a claim over twice
        the expected count plus 2^20 is refused without reading it (a small corrupt file must not
        make the reader allocate what its dataspace claims)."""
        err = self.err(name)
        if want < 0 or not h5rules.hard_link(self.g, name, err):
            return
        have = int(np.prod(h5rules.dims(h5rules.open_dataset(self.g, name, err), err), dtype=object))
        if have > 2 * want + (1 << 20):
            err(f"has {have} elements, expected {want} ({shape})")

    def leading_dim(self, name: str) -> int:
        err = self.err(name)
        if not h5rules.hard_link(self.g, name, err):
            return 0
        shape = h5rules.dims(h5rules.open_dataset(self.g, name, err), err)
        return min(shape[0], 1 << 40) if shape else 0

    def check_memory(self, c: Case, mask_total: int) -> None:
        n_rows, n_q = self.leading_dim("kv_pool"), self.leading_dim("q")
        outputs = 0
        if h5rules.hard_link(self.g, "outputs", self.err("outputs")):
            og = h5rules.open_group(self.g, "outputs", "group 'outputs'", self.err("outputs"))
            outputs = len(h5rules.member_names(og, self.err("outputs")))
        need = case_memory_estimate(n_q, c.num_heads, c.d_qk, c.d_v, n_rows, max(0, _indptr_total(c.kv_indptr)),
                                    max(0, mask_total), outputs)
        if need > self.max_memory:
            self.err("")(f"needs {need / 2 ** 30:.2f} GiB to be read and checked, more than the limit of "
                         f"{self.max_memory / 2 ** 30:.2f} GiB (max_memory; vattn's --max-memory)")

    def read(self) -> Case:
        g = self.g
        num_heads, d_qk, d_v = (self.int_dim(k) for k in ("num_heads", "d_qk", "d_v"))
        sm_scale = h5rules.attr_float64(g, "sm_scale", self.err("sm_scale"))
        num_requests = h5rules.attr_int(g, "num_requests", self.err("num_requests"))
        if not 0 <= num_requests < 2 ** 31 - 1:
            self.err("num_requests")(f"value {num_requests} is out of range (0 to {2 ** 31 - 2})")
        recipe = ""
        if h5rules.has_attr(g, "recipe", self.err("recipe")):
            recipe = h5rules.attr_string(g, "recipe", self.err("recipe"))
        int_attrs = {k: h5rules.attr_int(g, k, self.err(k)) for k in CASE_INT_ATTRS
                     if h5rules.has_attr(g, k, self.err(k))}
        c = Case(name=self.name, num_heads=num_heads, sm_scale=sm_scale, d_qk=d_qk, d_v=d_v, recipe=recipe,
                 int_attrs=int_attrs, q=None, kv_pool=None, kv_indices=None, kv_indptr=None, kv_draft=None,
                 qo_indptr=None, draft_mask=None, draft_mask_indptr=None)

        pointers, by_b = num_requests + 1, [(-1, "num_requests+1")]
        self.expect_elements("qo_indptr", pointers, "num_requests+1")
        c.qo_indptr, _ = self.array("qo_indptr", "int32", by_b)
        if len(c.qo_indptr) != pointers:
            self.err("num_requests")(f"is {num_requests} but qo_indptr has {len(c.qo_indptr)} entries "
                                     "(num_requests+1 expected)")
        self.expect_elements("kv_indptr", pointers, "num_requests+1")
        c.kv_indptr, _ = self.array("kv_indptr", "int32", by_b)
        self.expect_elements("kv_indices", _indptr_total(c.kv_indptr), "kv_indptr[B]")
        c.kv_indices, _ = self.array("kv_indices", "int32", [(-1, "kv_indptr[B]")])
        self.expect_elements("draft_mask_indptr", pointers, "num_requests+1")
        c.draft_mask_indptr, _ = self.array("draft_mask_indptr", "int64", by_b)
        mask_total = -1
        if _indptr_total(c.qo_indptr) >= 0:
            T = np.diff(c.qo_indptr.astype(np.int64))
            mask_total = int((T * T).sum())
        self.check_memory(c, mask_total)  # from the dataspaces: before anything large is read
        self.expect_elements("draft_mask", mask_total, "sum of T_b^2")
        c.draft_mask, _ = self.array("draft_mask", "uint8", [(-1, "sum of T_b^2")])

        c.kv_pool, shape = self.array("kv_pool", "bf16", [(-1, "n_rows"), (d_qk, "d_qk")])
        n_rows = shape[0]
        if h5rules.hard_link(g, "kv_slot_ids", self.err("kv_slot_ids")):
            c.kv_slot_ids, _ = self.array("kv_slot_ids", "int64", [(n_rows, "n_rows")])
        n_q_want = _indptr_total(c.qo_indptr)
        self.expect_elements("q", -1 if n_q_want < 0 else n_q_want * num_heads * d_qk, "n_q x num_heads x d_qk")
        c.q, shape = self.array("q", "bf16", [(-1, "n_q"), (num_heads, "num_heads"), (d_qk, "d_qk")])
        n_q = shape[0]
        c.kv_draft, _ = self.array("kv_draft", "bf16", [(n_q, "n_q"), (d_qk, "d_qk")])
        if h5rules.hard_link(g, "draft_parent", self.err("draft_parent")):
            c.draft_parent, _ = self.array("draft_parent", "int32", [(n_q, "n_q")])
        self.read_outputs(c, n_q)
        return c

    def read_outputs(self, c: Case, n_q: int) -> None:
        if not h5rules.hard_link(self.g, "outputs", self.err("outputs")):
            return
        og = h5rules.open_group(self.g, "outputs", "group 'outputs'", self.err("outputs"))
        for producer in h5rules.member_names(og, self.err("outputs")):
            base = "outputs/" + producer
            pg = h5rules.open_group(og, producer, f"'{base}'", self.err(base))
            description = h5rules.attr_string(pg, "description", self.err(base))
            err = self.err(base + "/out")
            d = h5rules.open_dataset(pg, "out", err)
            t = d.id.get_type()
            h5rules.check_shape(h5rules.dims(d, err), [(n_q, "n_q"), (c.num_heads, "num_heads"), (c.d_v, "d_v")], err)
            if producer == ORACLE and not h5rules.is_float(t, 4):
                err(f"expected float32 ({ORACLE} stores out as float32), found {h5rules.type_name(t)}")
            if producer != ORACLE and not _ELEM_FITS["bf16"](t):
                err(f"expected uint16 bf16 bits (only {ORACLE} stores float32), found {h5rules.type_name(t)}")
            if _ELEM_FITS["bf16"](t):
                _check_bf16_marker(d, err)
                out = h5rules.read(d, np.uint16, err)
            else:
                out = h5rules.read(d, np.float32, err)
            # lse is optional for a producer that does not report one; oracle_fp64 always has it.
            lse = None
            if producer == ORACLE or h5rules.hard_link(pg, "lse", self.err(base + "/lse")):
                lse, _ = self.array("lse", "float32", [(n_q, "n_q"), (c.num_heads, "num_heads")], loc=pg,
                                    field=base + "/lse")
            c.outputs.append(Output(producer, description, out, lse))


_ELEM_FITS = {"bf16": lambda t: h5rules.is_integer(t, 2, False), "uint8": lambda t: h5rules.is_integer(t, 1, False),
              "int32": lambda t: h5rules.is_integer(t, 4, True), "int64": lambda t: h5rules.is_integer(t, 8, True),
              "float32": lambda t: h5rules.is_float(t, 4)}
_ELEM_TEXT = {"bf16": "uint16 bf16 bits", "uint8": "uint8", "int32": "int32", "int64": "int64", "float32": "float32"}
_ELEM_NUMPY = {"bf16": np.uint16, "uint8": np.uint8, "int32": np.int32, "int64": np.int64, "float32": np.float32}


def _check_bf16_marker(d: h5py.Dataset, err) -> None:
    """bf16 travels as uint16; the attribute is what tells a reader the bits are not integers."""
    if not h5rules.has_attr(d, "dtype", err):
        err("uint16 bf16 bits need attribute dtype=\"bfloat16\"; it is missing")
    tag = h5rules.attr_string(d, "dtype", err)
    if tag != "bfloat16":
        err(f"attribute dtype is '{tag}', expected 'bfloat16'")


def _header(path: str, f: h5py.File) -> Header:
    """The root attributes, in vattn's order (case_file_read.cpp read_header)."""
    if not h5rules.has_attr(f, "format", _raiser(path, "", "format")):
        _raiser(path, "", "format")("missing root attribute 'format': not a vattn case file")
    fmt = h5rules.attr_string(f, "format", _raiser(path, "", "format"))
    if fmt != FORMAT_NAME:
        _raiser(path, "", "format")(f"is '{fmt}', expected '{FORMAT_NAME}': not a vattn case file")
    version = h5rules.attr_int(f, "format_version", _raiser(path, "", "format_version"))
    if version != FORMAT_VERSION:
        _raiser(path, "", "format_version")(f"version {version} is not known to this reader (it reads "
                                            f"{FORMAT_VERSION}); a newer vattn may read it")
    text = {k: h5rules.attr_string(f, k, _raiser(path, "", k)) for k in ("source", "created", "generator")}
    optional = {k: h5rules.attr_string(f, k, _raiser(path, "", k)) for k in OPTIONAL_HEADER
                if h5rules.has_attr(f, k, _raiser(path, "", k))}
    return Header(optional=optional, format_version=version, **text)


def _case_names(path: str, f: h5py.File) -> tuple[h5py.Group, list[str]]:
    """/cases and its members, every one checked to be a group (hard link) before any is read."""
    err = _raiser(path, "", "cases")
    cases = h5rules.open_group(f, "cases", "group '/cases'", err)
    names = h5rules.member_names(cases, err)
    for n in names:
        h5rules.hard_link(cases, n, err)
        if not h5rules.is_group(cases, n, err):
            _raiser(path, n, "")(f"'/cases/{n}' is not a group (every member of /cases is a case)")
    return cases, names


def read(path: str, validate_cases: bool = True, max_memory: int | None = None) -> CaseFile:
    """Reads a case file with vattn's reader rules; raises CaseFileError naming file, case and field.

    max_memory: bytes one case may need to be read and checked (vattn's --max-memory, default half
    the RAM); a case whose dataspaces claim more is refused before its tensors are read."""
    limit = default_memory_limit() if max_memory is None else int(max_memory)
    if limit <= 0:
        raise ValueError(f"max_memory must be a number of bytes > 0 (got {max_memory!r})")
    err = _raiser(path, "", "")
    if not os.path.exists(path):
        err("file does not exist")
    if not os.path.isfile(path):
        err("is not a regular file")
    try:
        is_hdf5 = h5py.is_hdf5(path)
    except OSError as e:
        err(f"cannot check whether it is an HDF5 file ({e})")
    if not is_hdf5:
        err("not an HDF5 file (no HDF5 signature found)")
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise CaseFileError(path, "", "", f"cannot open the HDF5 file ({e})") from e
    with f:
        header = _header(path, f)
        cases_group, names = _case_names(path, f)
        cases = []
        for name in names:
            g = h5rules.open_group(cases_group, name, "case group", _raiser(path, name, ""))
            c = _CaseReader(path, g, name, limit).read()
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
