# SPDX-License-Identifier: Apache-2.0
"""The HDF5-level rules of vattn's reader (vattn/casefile/h5_*.cpp), through h5py's low-level
API so that the same properties are looked at: link kinds, dataset storage and filters, type
classes, sizes, signs and byte orders, dataspaces, and whether the data was ever written.

Every function takes `err(reason)`, which raises the CaseFileError naming the place; nothing here
follows a link out of the file or reads data before its size is known to be what was asked."""

from __future__ import annotations

from typing import Callable, NoReturn

import h5py
import numpy as np
from h5py import h5a, h5d, h5l, h5s, h5t, h5z

Err = Callable[[str], NoReturn]


def key(name: str) -> bytes:
    """A member name as HDF5 holds it (names listed from a file may hold any bytes)."""
    return name.encode("utf-8", "surrogateescape")

# HDF5's own filters. vattn reads with the system libhdf5, which has these and no plugin (LZF,
# Blosc, ...); h5py carries LZF itself, so "h5py can read it" is not the rule.
_BUILTIN_FILTERS = {h5z.FILTER_DEFLATE: "deflate (gzip)", h5z.FILTER_SHUFFLE: "shuffle",
                    h5z.FILTER_FLETCHER32: "fletcher32", h5z.FILTER_SZIP: "szip", h5z.FILTER_NBIT: "nbit",
                    h5z.FILTER_SCALEOFFSET: "scaleoffset"}
_PLUGIN_NAMES = {32000: "lzf", 32001: "blosc", 32004: "lz4", 32008: "bitshuffle", 32015: "zstd"}


def hard_link(group: h5py.Group, name: str, err: Err) -> bool:
    """Whether `name` exists in `group`; one that exists must be a hard link (decided from the link)."""
    try:
        if not group.id.links.exists(key(name)):
            return False
        kind = group.id.links.get_info(key(name)).type
    except (KeyError, OSError, ValueError) as e:
        err(f"cannot look up '{name}' ({e})")
    if kind == h5l.TYPE_HARD:
        return True
    what = ("an external link (to an object in another file)" if kind == h5l.TYPE_EXTERNAL
            else "a soft link (a path that may lead anywhere, other files included)" if kind == h5l.TYPE_SOFT
            else "a user-defined link")
    err(f"'{name}' is {what}: a case file must hold its objects itself (hard links only); "
        "vattn follows nothing out of the file")


def open_group(loc: h5py.Group, name: str, what: str, err: Err) -> h5py.Group:
    if not hard_link(loc, name, err):
        err(f"missing {what}")
    try:
        obj = loc[key(name)]
    except (KeyError, OSError) as e:
        err(f"cannot open {what} ({e})")
    if not isinstance(obj, h5py.Group):
        err(f"{what} is not a group")
    return obj


def member_names(group: h5py.Group, err: Err) -> list[str]:
    """The members' names, bytewise sorted (vattn's order); undecodable bytes kept as escapes."""
    try:
        raw = []
        group.id.links.iterate(lambda n: raw.append(n))
    except (OSError, RuntimeError) as e:
        err(f"cannot list the group's members ({e})")
    return [n.decode("utf-8", "surrogateescape") for n in sorted(raw)]


def is_group(group: h5py.Group, name: str, err: Err) -> bool:
    try:
        return isinstance(group[key(name)], h5py.Group)
    except (KeyError, OSError) as e:
        err(f"cannot open '{name}' ({e})")


# ---- types --------------------------------------------------------------------------------

def type_name(t: h5t.TypeID) -> str:
    """A file type in vattn's words (h5_types.cpp type_name)."""
    cls, bits = t.get_class(), t.get_size() * 8
    if cls == h5t.INTEGER:
        big = bits > 8 and t.get_order() == h5t.ORDER_BE
        return ("uint" if t.get_sign() == h5t.SGN_NONE else "int") + str(bits) + (" big-endian" if big else "")
    names = {h5t.FLOAT: f"float{bits}", h5t.STRING: "string", h5t.BITFIELD: f"bitfield{bits}", h5t.OPAQUE: "opaque",
             h5t.COMPOUND: "compound", h5t.REFERENCE: "reference", h5t.ENUM: "enum (numpy bool or similar)",
             h5t.VLEN: "variable-length sequence", h5t.ARRAY: "array type", h5t.TIME: "time"}
    return names.get(cls, "unknown type")


def is_integer(t: h5t.TypeID, size: int, signed: bool) -> bool:
    """Multi-byte integers must be little-endian, whatever HDF5 could convert."""
    return (t.get_class() == h5t.INTEGER and t.get_size() == size and (t.get_sign() == h5t.SGN_2) == signed
            and (size == 1 or t.get_order() == h5t.ORDER_LE))


def is_float(t: h5t.TypeID, size: int) -> bool:
    return t.get_class() == h5t.FLOAT and t.get_size() == size


# ---- attributes ---------------------------------------------------------------------------

def has_attr(obj: h5py.HLObject, name: str, err: Err) -> bool:
    try:
        return h5a.exists(obj.id, name.encode())
    except (OSError, RuntimeError) as e:
        err(f"cannot look up attribute '{name}' ({e})")


def _scalar(obj: h5py.HLObject, name: str, err: Err) -> h5t.TypeID:
    """The type of a one-valued attribute (h5_attr.cpp open_scalar)."""
    if not has_attr(obj, name, err):
        err(f"missing attribute '{name}'")
    try:
        a = h5a.open(obj.id, name.encode())
        space = a.get_space()
        n = 0 if space.get_simple_extent_type() == h5s.NULL else space.get_simple_extent_npoints()
        t = a.get_type()
    except (OSError, RuntimeError, ValueError) as e:
        err(f"cannot open attribute '{name}' ({e})")
    if n != 1:
        err(f"attribute '{name}' must hold one value, holds {n}")
    return t


def _value(obj: h5py.HLObject, name: str, err: Err):
    try:
        v = obj.attrs[name]
    except (OSError, TypeError, ValueError) as e:
        err(f"cannot read attribute '{name}' ({e})")
    return np.asarray(v).reshape(-1)[0] if isinstance(v, np.ndarray) else v


def attr_string(obj: h5py.HLObject, name: str, err: Err) -> str:
    t = _scalar(obj, name, err)
    if t.get_class() != h5t.STRING:
        err(f"attribute '{name}': expected a string, found {type_name(t)}")
    v = _value(obj, name, err)
    if isinstance(v, (bytes, np.bytes_)):
        raw = bytes(v)
        # vattn: a space-padded string loses its trailing spaces, a null-padded one ends at its first NUL
        raw = raw.rstrip(b" ") if not t.is_variable_str() and t.get_strpad() == h5t.STR_SPACEPAD else raw.split(b"\0")[0]
        return raw.decode("utf-8", "surrogateescape")
    return str(v)


def attr_int(obj: h5py.HLObject, name: str, err: Err) -> int:
    t = _scalar(obj, name, err)
    if t.get_class() != h5t.INTEGER:
        err(f"attribute '{name}': expected an integer, found {type_name(t)}")
    if t.get_size() > 1 and t.get_order() != h5t.ORDER_LE:
        err(f"attribute '{name}': expected a little-endian integer, found {type_name(t)}")
    v = int(_value(obj, name, err))
    if v > np.iinfo(np.int64).max:
        err(f"attribute '{name}' = {v} is too large")
    return v


def attr_float64(obj: h5py.HLObject, name: str, err: Err) -> float:
    """float64 only: a float32 scale would be widened silently (h5_attr.cpp read_float_attr)."""
    t = _scalar(obj, name, err)
    if t.get_class() != h5t.FLOAT or t.get_size() != 8:
        err(f"attribute '{name}': expected float64, found {type_name(t)}")
    return float(_value(obj, name, err))


# ---- datasets -----------------------------------------------------------------------------

def _require_storage_inside(d: h5py.Dataset, name: str, err: Err) -> None:
    """Its data must be in this file and readable by vattn, from its creation properties."""
    dcpl = d.id.get_create_plist()
    if dcpl.get_layout() == h5d.VIRTUAL:
        err(f"'{name}' is a virtual dataset (its data is mapped from other datasets, other files included): "
            "vattn reads only data stored in the case file; rewrite it as a plain dataset")
    external = dcpl.get_external_count()
    if external != 0:
        err(f"'{name}' keeps its raw data in external file(s) ({external}): vattn reads only data stored in "
            "the case file; rewrite it as a plain dataset")
    for i in range(dcpl.get_nfilters()):
        code, _flags, _values, stored = dcpl.get_filter(i)
        if code not in _BUILTIN_FILTERS or not h5z.filter_avail(code):
            label = _BUILTIN_FILTERS.get(code) or _PLUGIN_NAMES.get(code) or stored.decode("utf-8", "replace") \
                or "unregistered"
            err(f"'{name}' is compressed with filter {code} ({label}), which vattn's HDF5 library does not have: "
                "rewrite the file with gzip, e.g. h5repack -f GZIP=4 in.h5 out.h5, or in h5py compression='gzip'")


def open_dataset(loc: h5py.Group, name: str, err: Err) -> h5py.Dataset:
    """`name` as a dataset: a hard link, a dataset, its data inside the file (h5_dataset.cpp)."""
    if not hard_link(loc, name, err):
        err(f"missing dataset '{name}'")
    try:
        d = loc[key(name)]
    except (KeyError, OSError) as e:
        err(f"cannot open '{name}' ({e})")
    if not isinstance(d, h5py.Dataset):
        err(f"'{name}' is not a dataset")
    _require_storage_inside(d, name, err)
    return d


def dims(d: h5py.Dataset, err: Err) -> list[int]:
    """The dataspace's dims; [] for a scalar (callers refuse it by rank), a null one refused."""
    space = d.id.get_space()
    cls = space.get_simple_extent_type()
    if cls == h5s.SCALAR:
        return []
    if cls != h5s.SIMPLE:
        err("has no shape (null dataspace)")
    return [int(n) for n in space.shape]


def dims_text(shape: list[int]) -> str:
    return "[" + ", ".join(str(n) for n in shape) + "]"


def check_shape(shape: list[int], want: list[tuple[int, str]], err: Err) -> None:
    """want: (size, name) per dim, size -1 for any; rank included."""
    ok = len(shape) == len(want) and all(s < 0 or n == s for n, (s, _) in zip(shape, want))
    if not ok:
        expected = ", ".join(name + (f"={s}" if s >= 0 else "") for s, name in want)
        err(f"has shape {dims_text(shape)}, expected [{expected}]")


def _require_written(d: h5py.Dataset, shape: list[int], count: int, err: Err) -> None:
    """A dataset must store what its dataspace declares: never-written storage holds only fill
    values, and a tiny file could declare gigabytes that way. Decided before allocating."""
    if count == 0:
        return
    never = " elements are HDF5 fill values, never written): a case file must hold what it declares"
    dcpl = d.id.get_create_plist()
    if dcpl.get_layout() != h5d.CHUNKED:
        if d.id.get_storage_size() == 0:
            err(f"stores no data (its {count}{never}")
        return
    chunk = dcpl.get_chunk()
    need = 1
    for n, c in zip(shape, chunk):
        need *= -(-n // max(c, 1))
    have = d.id.get_num_chunks()
    if have < need:
        err(f"stores {have} of the {need} chunks its shape needs (the others'{never}")


def read(d: h5py.Dataset, dtype: type, err: Err) -> np.ndarray:
    """The whole dataset converted to `dtype` (native order), after the written-data check; the
    caller has checked the file type (HDF5 would happily turn floats into integers)."""
    shape = dims(d, err)
    count = int(np.prod(shape, dtype=object)) if shape else 1
    _require_written(d, shape, count, err)
    try:
        out = np.empty(shape, dtype=dtype)
    except (MemoryError, ValueError):
        err(f"cannot allocate {count} elements to read it")
    if count:
        try:
            d.read_direct(out)
        except (OSError, TypeError, ValueError) as e:  # a missing filter, a truncated file
            err(f"cannot read the data ({e})")
    return out
