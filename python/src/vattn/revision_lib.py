# SPDX-License-Identifier: Apache-2.0
"""A vattn kernel revision library (kernels/vattn_abi.h, ABI 1) from Python, with ctypes.

The suite drives revisions from C++ (src/gpu/revision.cpp); this binding lets a Python harness
run the same library on its own tensors, e.g. peers/bench_peers.py timing split-v2 in the same
loop, on the same inputs, as FlashInfer. Loading the library and reading its capabilities make
no CUDA call; workspace_size() makes none either. run() enqueues the revision's kernels on the
stream given and returns, so it may be captured into a CUDA graph. Pointers are plain integers
(e.g. torch's data_ptr()); the revision checks them host-side as the contract says
(docs/verify-attention.md), and a refusal raises RevisionLibError with the revision's own words.

    lib = Library("build/revisions/libvattn_rev_split_v2.so")
    limits = Limits(max_requests=8, max_total_drafts=128, max_drafts_per_request=16, num_heads=8, max_splits=128)
    ws_bytes = lib.workspace_size(limits)
    lib.run(Args(q=..., kv_pool=..., ...), limits, ws_ptr, ws_bytes, stream)
"""

import ctypes
import os

ABI_VERSION = 1  # VATTN_ABI_VERSION
GET_REVISION_SYMBOL = "vattn_get_revision_v1"  # VATTN_GET_REVISION_SYMBOL
STATUS = {0: "VATTN_OK", 1: "VATTN_ERR_INVALID_ARGUMENT", 2: "VATTN_ERR_UNSUPPORTED", 3: "VATTN_ERR_LIMITS",
          4: "VATTN_ERR_WORKSPACE", 5: "VATTN_ERR_CUDA"}


class RevisionLibError(RuntimeError):
    """status: the revision's vattn_status when it refused a call, else None."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


# The structs of vattn_abi.h, field for field and in order; ctypes lays them out as the C
# compiler does on the platforms the suite builds for (natural alignment). The ABI has no size
# query, so tests/python/test_revision_lib.py checks the layout through run()'s host-side
# refusals: one field broken at a time must give that field's status (two pointers the checks
# treat alike could still be swapped unseen; the docstring there says which).
class Caps(ctypes.Structure):
    _fields_ = [
        ("abi_version", ctypes.c_int), ("name", ctypes.c_char_p), ("description", ctypes.c_char_p),
        ("architectures", ctypes.c_char_p), ("d_qk", ctypes.c_int), ("d_v", ctypes.c_int),
        ("max_heads", ctypes.c_int), ("max_drafts_per_request", ctypes.c_int), ("max_prefix", ctypes.c_int64),
        ("max_requests", ctypes.c_int), ("max_splits", ctypes.c_int), ("declared_memset_nodes", ctypes.c_int),
        ("dynamic_smem_bytes", ctypes.c_size_t),
    ]


class Limits(ctypes.Structure):
    _fields_ = [
        ("max_requests", ctypes.c_int), ("max_total_drafts", ctypes.c_int64), ("max_drafts_per_request", ctypes.c_int),
        ("num_heads", ctypes.c_int), ("max_splits", ctypes.c_int),
    ]


class Args(ctypes.Structure):
    _fields_ = [
        ("q", ctypes.c_void_p), ("kv_pool", ctypes.c_void_p), ("n_slots", ctypes.c_int64),
        ("kv_indices", ctypes.c_void_p), ("kv_indptr", ctypes.c_void_p), ("kv_draft", ctypes.c_void_p),
        ("qo_indptr", ctypes.c_void_p), ("mask_bits", ctypes.c_void_p), ("mask_word_indptr", ctypes.c_void_p),
        ("forced_splits", ctypes.c_void_p), ("out", ctypes.c_void_p), ("lse", ctypes.c_void_p),
        ("num_requests", ctypes.c_int), ("n_q", ctypes.c_int64), ("num_heads", ctypes.c_int), ("d_qk", ctypes.c_int),
        ("d_v", ctypes.c_int), ("sm_scale", ctypes.c_float),
    ]


_CAPS_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(Caps))
_WS_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(Limits), ctypes.POINTER(ctypes.c_size_t))
_RUN_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(Args), ctypes.POINTER(Limits), ctypes.c_void_p, ctypes.c_size_t,
                           ctypes.c_void_p)
_STATUS_FN = ctypes.CFUNCTYPE(ctypes.c_char_p, ctypes.c_int)


class Revision(ctypes.Structure):
    """struct vattn_revision: the table of entry points the library's get-revision symbol returns."""
    _fields_ = [
        ("abi_version", ctypes.c_int), ("name", ctypes.c_char_p), ("capabilities", _CAPS_FN),
        ("workspace_size", _WS_FN), ("run", _RUN_FN), ("status_string", _STATUS_FN),
    ]


class Library:
    """A loaded revision library. Raises RevisionLibError naming the path when the file is missing,
    is not a loadable library, lacks vattn_get_revision_v1, returns no table, or speaks another
    ABI version."""

    def __init__(self, path):
        self.path = os.path.abspath(path)
        if not os.path.isfile(self.path):
            raise RevisionLibError(f"{self.path}: no such file (a CUDA build writes the revisions to BUILD/revisions/)")
        try:
            self._lib = ctypes.CDLL(self.path, mode=getattr(os, "RTLD_LOCAL", 0) | getattr(os, "RTLD_NOW", 2))
        except OSError as e:
            raise RevisionLibError(f"{self.path}: cannot load it: {e}") from e
        try:
            get = getattr(self._lib, GET_REVISION_SYMBOL)
        except AttributeError:
            raise RevisionLibError(f"{self.path}: not a vattn revision library (no symbol {GET_REVISION_SYMBOL})") from None
        get.restype, get.argtypes = ctypes.POINTER(Revision), []
        table = get()
        if not table:
            raise RevisionLibError(f"{self.path}: {GET_REVISION_SYMBOL} returned no revision table")
        self._rev = table.contents
        if self._rev.abi_version != ABI_VERSION:
            raise RevisionLibError(f"{self.path}: ABI version {self._rev.abi_version}, this binding speaks {ABI_VERSION}")
        absent = [n for n in ("capabilities", "workspace_size", "run", "status_string") if not getattr(self._rev, n)]
        if absent:
            raise RevisionLibError(f"{self.path}: the revision table has no {', '.join(absent)} entry point")
        caps = Caps()
        self._check(self._rev.capabilities(ctypes.byref(caps)), "capabilities")
        if caps.abi_version != ABI_VERSION:
            raise RevisionLibError(f"{self.path}: capabilities() says ABI version {caps.abi_version}")

        def text(b):
            return b.decode(errors="replace") if b else ""

        self.caps = {name: (text(getattr(caps, name)) if kind is ctypes.c_char_p else getattr(caps, name))
                     for name, kind in Caps._fields_}
        self.name = text(self._rev.name)

    def status_string(self, status):
        s = self._rev.status_string(int(status))
        return s.decode(errors="replace") if s else "?"

    def _check(self, status, what):
        if status != 0:
            raise RevisionLibError(f"{self.path}: {what}: {STATUS.get(status, status)}: {self.status_string(status)}",
                                   status)

    def workspace_size(self, limits):
        """Bytes of workspace run() needs under `limits` (a Limits); no CUDA call."""
        n = ctypes.c_size_t(0)
        self._check(self._rev.workspace_size(ctypes.byref(limits), ctypes.byref(n)), "workspace_size")
        return n.value

    def run_status(self, args, limits, workspace, workspace_bytes, stream):
        """run() as the ABI has it: the vattn_status, 0 when the call was enqueued."""
        return self._rev.run(ctypes.byref(args), ctypes.byref(limits), workspace, workspace_bytes, stream)

    def run(self, args, limits, workspace, workspace_bytes, stream):
        """Enqueues one call on `stream` (an int cudaStream_t, 0: the legacy default stream); raises
        RevisionLibError with the revision's status when it refuses the arguments or the enqueue fails."""
        self._check(self.run_status(args, limits, workspace, workspace_bytes, stream), "run")


def main(argv=None):
    """python3 -m vattn.revision_lib LIB: loads it (no CUDA call) and prints its capabilities."""
    import sys

    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or argv[0] in ("-h", "--help"):
        print("usage: python3 -m vattn.revision_lib LIB.so\n\nLoads a vattn kernel revision library (ABI "
              f"{ABI_VERSION}) and prints its capabilities; exit 0, 1 naming the file when it cannot be used, 2 usage.",
              file=sys.stdout if argv and argv[0] in ("-h", "--help") else sys.stderr)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    try:
        lib = Library(argv[0])
    except RevisionLibError as e:
        print(f"vattn.revision_lib: {e}", file=sys.stderr)
        return 1
    print(f"{lib.path}: revision {lib.name}")
    for k, v in lib.caps.items():
        print(f"  {k}: {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
