"""New objects held in memory during a request, then written as one pack.

libgit2 writes each new object as its own loose file: a blob, two or three
trees and a commit per edit, then a note blob, its trees and a notes commit.
Creating a file is the dearest step of an edit (up to 0.5 ms of kernel time
each on some disks). :class:`StagedObjects` is an object-database backend
placed in front of libgit2's own: it takes every object the daemon writes and
serves it back until :meth:`StagedObjects.flush` writes them all as one pack
and its index (two files), before any ref or journal may name them.

Packs accumulate, one per request; :func:`consolidate` rolls the small ones
together with ``git repack --geometric``, as git's own maintenance does; the
daemon runs it beside the requests, never inside one (``daemon/housekeeping.py``).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import struct
import threading
import time
import zlib
from collections.abc import Mapping
from pathlib import Path

import pygit2

from redline.fsops.atomic import OpenNew, create_new, write_all

PRIORITY = 3  # above libgit2's packs (2) and loose objects (1): every write comes here
CONSOLIDATE_AFTER = 32  # packs written since the last roll-up
REPACK_TIMEOUT = 120.0  # seconds a roll-up may take before it is killed
_POLL = 0.05  # seconds between looks at a cancelled or late roll-up
_TMP_PREFIX = "tmp_pack_redline_"


class StagedObjects(pygit2.OdbBackend):
    """A write-back object store for one repository, used from its worker thread."""

    def __init__(self, objects_dir: Path) -> None:
        super().__init__()
        self.pack_dir = objects_dir / "pack"
        self._staged: dict[pygit2.Oid, tuple[int, bytes]] = {}
        self.written = 0  # packs written since the last consolidation

    @classmethod
    def attach(cls, repo: pygit2.Repository) -> StagedObjects:
        staged = cls(Path(repo.path) / "objects")
        staged.remove_temporary_files()
        repo.odb.add_backend(staged, PRIORITY)
        return staged

    # -- the backend ------------------------------------------------------------------

    def read_cb(self, oid: pygit2.Oid) -> tuple[int, bytes]:
        return self._staged[oid]

    def read_prefix_cb(self, oid: pygit2.Oid) -> tuple[int, bytes, pygit2.Oid]:
        full = self._complete(oid)
        kind, data = self._staged[full]
        return kind, data, full

    def read_header_cb(self, oid: pygit2.Oid) -> tuple[int, int]:
        kind, data = self._staged[oid]
        return kind, len(data)

    def exists_cb(self, oid: pygit2.Oid) -> bool:
        return oid in self._staged

    def exists_prefix_cb(self, oid: pygit2.Oid) -> pygit2.Oid:
        return self._complete(oid)

    def write_cb(self, oid: pygit2.Oid, data: bytes, kind: int) -> None:
        self.stage(oid, kind, data)

    def refresh_cb(self) -> None:
        """Nothing to re-read: what is staged is only in memory."""

    def _complete(self, oid: pygit2.Oid) -> pygit2.Oid:
        if oid in self._staged:
            return oid
        prefix = str(oid).rstrip("0")  # libgit2 pads a short id with zeros
        found = [o for o in self._staged if str(o).startswith(prefix)]
        if len(found) > 1:
            raise ValueError(f"ambiguous object id prefix {prefix}")
        if not found:
            raise KeyError(oid)
        return found[0]

    # -- writing ----------------------------------------------------------------------

    def stage(self, oid: pygit2.Oid, kind: int, data: bytes) -> None:
        """Hold one object (``oid`` must be its id) until the next flush."""
        self._staged[oid] = (kind, bytes(data))

    @property
    def pending(self) -> int:
        return len(self._staged)

    def flush(self, open_new: OpenNew = create_new) -> None:
        """Write what is staged as one pack (nothing when nothing is)."""
        if not self._staged:
            return
        write_pack(self.pack_dir, self._staged, open_new)
        self._staged = {}
        self.written += 1

    def remove_temporary_files(self) -> None:
        """Drop the half-written pack of a process killed inside :meth:`flush`."""
        if self.pack_dir.is_dir():
            for leftover in self.pack_dir.glob(f"{_TMP_PREFIX}*"):
                leftover.unlink(missing_ok=True)


def write_pack(
    pack_dir: Path, objects: dict[pygit2.Oid, tuple[int, bytes]], open_new: OpenNew = create_new
) -> str:
    """Write ``objects`` (id -> (type, data)) as a pack and its index; the pack's name.

    The pack is renamed into place before its index, as git does: a pack is
    found through its index, so no reader sees a pack that is not whole.
    """
    pack_dir.mkdir(parents=True, exist_ok=True)
    ids = sorted(objects, key=lambda o: o.raw)
    body = bytearray(b"PACK" + struct.pack(">II", 2, len(ids)))
    offsets, crcs = [], []
    for oid in ids:
        kind, data = objects[oid]
        entry = _entry_header(kind, len(data)) + zlib.compress(data, 1)
        offsets.append(len(body))
        crcs.append(zlib.crc32(entry))
        body += entry
    checksum = hashlib.sha1(body).digest()
    body += checksum
    name = f"pack-{checksum.hex()}"
    index = bytearray(b"\xfftOc" + struct.pack(">I", 2))
    counts = [0] * 256
    for oid in ids:
        counts[oid.raw[0]] += 1
    total = 0
    for count in counts:
        total += count
        index += struct.pack(">I", total)
    for oid in ids:
        index += oid.raw
    index += struct.pack(f">{len(ids)}I", *crcs)
    index += struct.pack(f">{len(ids)}I", *offsets)
    index += checksum
    index += hashlib.sha1(index).digest()
    _write_new(pack_dir, f"{name}.pack", body, open_new)
    _write_new(pack_dir, f"{name}.idx", index, open_new)
    return name


def _entry_header(kind: int, size: int) -> bytes:
    """A pack entry's type and size: 3 bits and 4 bits, then 7 bits a byte."""
    out = bytearray()
    byte = (kind << 4) | (size & 0x0F)
    size >>= 4
    while size:
        out.append(byte | 0x80)
        byte = size & 0x7F
        size >>= 7
    out.append(byte)
    return bytes(out)


def _write_new(folder: Path, name: str, data: bytes | bytearray, open_new: OpenNew) -> None:
    tmp = folder / f"{_TMP_PREFIX}{name}"
    fd = open_new(tmp, 0o444)
    try:
        write_all(fd, data)
    finally:
        os.close(fd)
    os.replace(tmp, folder / name)


def consolidate(
    repo_dir: Path,
    *,
    env: Mapping[str, str],
    timeout: float = REPACK_TIMEOUT,
    cancel: threading.Event | None = None,
) -> str | None:
    """Roll small packs together (``git repack -d --geometric=2``); why it could not, or None.

    ``env`` is the environment git runs with (see :mod:`redline.gitops.gitenv`:
    no variable in it may send git to another repository). A run that takes
    longer than ``timeout`` seconds, or is cancelled, is killed: git writes
    the new pack before it removes the old ones, so that leaves the packs as
    they were (and maybe a temporary file ``git gc`` removes).
    """
    import subprocess  # only here: the guard hook imports this module too

    try:
        process = subprocess.Popen(
            ["git", "-C", str(repo_dir), "repack", "-d", "-q", "--geometric=2"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=dict(env),
            start_new_session=True,  # its own process group: a kill reaches pack-objects too
        )
    except OSError as exc:
        return f"cannot run git ({exc}); install git, or run `git gc` now and then"
    deadline = time.monotonic() + timeout
    while True:
        try:
            _, stderr = process.communicate(timeout=_POLL)
            break
        except subprocess.TimeoutExpired:
            stopped = cancel is not None and cancel.is_set()
            if stopped or time.monotonic() >= deadline:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.communicate()
                if stopped:
                    return "git repack was stopped as the daemon stops; the packs are as before"
                return (
                    f"git repack did not finish within {timeout:g} s and was stopped; the packs "
                    f"are as before — run `git gc` in {repo_dir} when the machine is quiet"
                )
    if process.returncode != 0:
        problem = stderr.decode(errors="replace").strip()
        return f"git repack failed ({process.returncode}: {problem}); run `git gc` in {repo_dir}"
    return None
