# SPDX-License-Identifier: Apache-2.0
"""Where captured calls go: the part every capturer shares (the SGLang hook in capture.py, the
graph recorder, shadow mode).

- Names: one file per call, `<stem>.h5`, or `<stem>-1.h5`, `<stem>-2.h5`, ... when that name is
  taken. A name is claimed with O_CREAT|O_EXCL|O_NOFOLLOW before the writer (casefile.write,
  which renames a finished temporary into place) fills it, so two capturers, a restarted server
  or a file someone put there are never overwritten, and a link is never followed.
- Caps: a call whose case would exceed max_case_bytes is not stored; bytes are reserved when a
  call is accepted (so calls still queued count against max_total_bytes), and a finished file
  that would take the total over the cap is removed again.
- Reporting: every call that is not stored is counted under its reason and warned about when it
  happens (a CaptureWarning naming the call and the reason), not only in close()'s counts.
"""

import contextlib
import datetime
import os
import queue
import threading
import warnings

import numpy as np

from .casefile import Header, write

# What a case file adds to its arrays: HDF5 superblock, groups, attributes, chunk indexes.
# Measured files of one case carry well under 16 KiB of it; the cap check allows 64 KiB.
FILE_OVERHEAD = 64 << 10
MAX_NUMBERED_NAMES = 1000


class CaptureWarning(UserWarning):
    """A call that a capturer could not store (or a file it could not write), reported at once."""


def case_bytes(case):
    """An upper bound of the file one case makes: its arrays uncompressed plus FILE_OVERHEAD
    (datasets over 64 KiB are deflated, which only shrinks them in practice)."""
    total = FILE_OVERHEAD
    for a in (case.q, case.kv_pool, case.kv_indices, case.kv_indptr, case.kv_draft, case.qo_indptr, case.draft_mask,
              case.draft_mask_indptr, case.kv_slot_ids, case.draft_parent):
        if a is not None:
            total += np.asarray(a).nbytes
    for o in case.outputs:
        total += np.asarray(o.out).nbytes + (0 if o.lse is None else np.asarray(o.lse).nbytes)
    return int(total)


def claim_path(out_dir, stem):
    """A fresh file name in out_dir, claimed (created empty, exclusively, never through a link)."""
    for k in range(MAX_NUMBERED_NAMES):
        path = os.path.join(out_dir, f"{stem}.h5" if k == 0 else f"{stem}-{k}.h5")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
        except FileExistsError:
            continue
        os.close(fd)
        return path
    raise OSError(f"{os.path.join(out_dir, stem)}.h5 and {MAX_NUMBERED_NAMES - 1} numbered names after it exist")


def _unclaim(path):
    """Removes a claimed name the write did not fill (still our empty regular file)."""
    with contextlib.suppress(OSError):
        st = os.lstat(path)
        if st.st_size == 0 and not os.path.islink(path):
            os.unlink(path)


class QueuedWriter:
    """The writer side every capturer shares: jobs in `self._queue` (a queue.Queue the subclass
    makes; None stops the loop) handled one at a time by `self._handle(job)`, either on a writer
    thread (`self._writer`, running `_write_loop`, or None) or on the calling thread by
    `_handle_queued` (start_writer=False)."""

    def _handle(self, job):
        raise NotImplementedError

    def _write_loop(self):
        while True:
            job = self._queue.get()
            if job is None:
                return
            self._handle(job)

    def _finish_queue(self, timeout):
        """Lets the writer thread finish what is queued and stop (or handles it here, without one)."""
        if self._writer is not None:
            self._queue.put(None)
            self._writer.join(timeout)
        else:
            self._handle_queued()

    def _handle_queued(self):
        while True:
            try:
                job = self._queue.get_nowait()
            except queue.Empty:
                return
            if job is not None:
                self._handle(job)


class CaseSink:
    """Counters, caps and file writing for one capturer. `what` prefixes every warning
    ("vattn.capture", "vattn.torch recorder", ...); `counters` names the skip reasons the
    capturer counts besides the shared ones."""

    SHARED = ("written", "bytes_written", "skipped_size", "skipped_total_cap", "write_failed")

    def __init__(self, out_dir, what, source, generator, max_case_bytes, max_total_bytes, model="", gpu="", notes="",
                 counters=()):
        if max_case_bytes <= 0 or max_total_bytes <= 0:
            raise ValueError(f"{what}: max_case_bytes and max_total_bytes must be > 0 (got {max_case_bytes}, "
                             f"{max_total_bytes})")
        self.out_dir, self.what = out_dir, what
        os.makedirs(out_dir, exist_ok=True)
        self.source, self.generator = source, generator
        self.model, self.gpu, self.notes = model, gpu, notes
        self.max_case_bytes, self.max_total_bytes = int(max_case_bytes), int(max_total_bytes)
        self._lock = threading.Lock()
        self._stats = dict.fromkeys((*self.SHARED, *counters), 0)
        self._stats["errors"] = []
        self._reserved = 0

    # ---- counting -------------------------------------------------------------------------
    def count(self, key, n=1):
        with self._lock:
            self._stats[key] = self._stats.get(key, 0) + n

    def skip(self, key, where, reason, n=1):
        """Counts a call that is not stored and warns now, naming it and why."""
        with self._lock:
            self._stats[key] = self._stats.get(key, 0) + n
            so_far = self._stats[key]
            if len(self._stats["errors"]) < 100:
                self._stats["errors"].append(f"{where}: {reason}")
        warnings.warn(f"{self.what}: {where}: not stored: {reason} ({key}: {so_far} so far)", CaptureWarning,
                      stacklevel=3)

    def stats(self):
        with self._lock:
            return dict(self._stats, errors=list(self._stats["errors"]), reserved_bytes=self._reserved)

    # ---- caps -------------------------------------------------------------------------------
    def reserve(self, where, est):
        """True when a case of about `est` bytes fits both caps (its bytes are then reserved
        until write() or release()); otherwise counted, warned about, False."""
        if est > self.max_case_bytes:
            self.skip("skipped_size", where, f"about {est} bytes, over max_case_bytes {self.max_case_bytes}")
            return False
        with self._lock:
            fits = self._stats["bytes_written"] + self._reserved + est <= self.max_total_bytes
            if fits:
                self._reserved += est
        if not fits:
            self.skip("skipped_total_cap", where, f"about {est} more bytes would pass max_total_bytes "
                                                  f"{self.max_total_bytes} (written or queued so far)")
        return fits

    def release(self, est):
        with self._lock:
            self._reserved = max(0, self._reserved - est)

    # ---- writing ----------------------------------------------------------------------------
    def header(self, notes=None):
        optional = {k: v for k, v in (("model", self.model), ("gpu", self.gpu),
                                      ("notes", self.notes if notes is None else notes)) if v}
        return Header(source=self.source, generator=self.generator, optional=optional,
                      created=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))

    def write(self, stem, case, est, where, notes=None):
        """Writes one case under a fresh name (stem.h5, stem-1.h5, ...); releases its reservation.
        Returns the path, or None when it was not written (counted and warned about)."""
        path = None
        try:
            path = claim_path(self.out_dir, stem)
            write(path, self.header(notes), [case])
            size = os.path.getsize(path)
        except Exception as e:  # a bad call or a full disk must not take the writer (or serving) down
            if path is not None:
                _unclaim(path)
            self.release(est)
            self.skip("write_failed", where, f"{type(e).__name__}: {e}")
            return None
        with self._lock:
            self._reserved = max(0, self._reserved - est)
            over_case = size > self.max_case_bytes
            over_total = not over_case and self._stats["bytes_written"] + self._reserved + size > self.max_total_bytes
            if not (over_case or over_total):
                self._stats["written"] += 1
                self._stats["bytes_written"] += size
        if over_case or over_total:
            with contextlib.suppress(OSError):
                os.unlink(path)
            if over_case:
                self.skip("skipped_size", where, f"the file came to {size} bytes, over max_case_bytes {self.max_case_bytes}")
            else:
                self.skip("skipped_total_cap", where, f"its {size} bytes would pass max_total_bytes {self.max_total_bytes}")
            return None
        return path
