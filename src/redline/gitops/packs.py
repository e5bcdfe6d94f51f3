"""New objects held in memory during a request, then written as one pack.

libgit2 writes each new object as its own loose file: a blob, two or three
trees and a commit per edit, then a note blob, its trees and a notes commit.
Creating a file is the dearest step of an edit (up to 0.5 ms of kernel time
each on some disks). :class:`StagedObjects` is an object store served to
libgit2 by a backend placed in front of libgit2's own: it takes every object
the daemon writes and serves it back until :meth:`StagedObjects.flush` writes
them all as one pack and its index (two files), before any ref or journal may
name them.

Other git processes work in the same repository, and two of them must never
be hurt by these writes:

- ``git gc --prune=now`` and ``git repack -a -d`` drop every packed object no
  ref names when they look, then delete the packs they read: a pack written
  for a request whose ref has not moved yet would lose its objects. Each pack
  is therefore written with a ``.keep`` file (git's own sign for "leave this
  pack alone"), held while a request that may use it is in flight
  (:class:`Holds`) and removed once requests pause.
- a local ``git clone`` copies ``objects/`` file by file, and fails when a
  name it listed is gone before it copies it, or is there half-written. So a
  pack and its index are written beside (``<git-dir>/redline/staging``, same
  file system) and renamed in whole; the ``.keep`` files are removed only once
  requests pause, and the packs rolled together (gitops.rollup) then too, or
  in a session that never pauses one roll-up after they were rolled
  (daemon.housekeeping: as git's own ``gc`` removes files, and for the same
  reason — each pack left costs every lookup).

A failed write leaves nothing in the way of the next one: a half-written
temporary is removed, a pack whose index could not be written is removed
too, and the objects stay staged for the next flush.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import struct
import threading
import zlib
from pathlib import Path

import pygit2

from redline.fsops.atomic import OpenNew, create_new, fsync_dir, write_all

PRIORITY = 3  # above libgit2's packs (2) and loose objects (1): every write comes here
CONSOLIDATE_AFTER = 32  # packs written since the last roll-up
_TMP_PREFIX = "tmp_pack_redline_"
KEEP_MARK = b"redline: a request that may use this pack is in flight\n"


class StagedObjects:
    """A write-back object store for one repository, used from its worker thread.

    It is served to libgit2 by a :class:`_Backend` placed in the repository's
    object database (:meth:`attach`); :meth:`reopen` gives the repository a
    fresh object database with a new backend over the same store.
    """

    def __init__(self, objects_dir: Path, staging: Path | None = None) -> None:
        self.objects_dir = objects_dir
        self.pack_dir = objects_dir / "pack"
        self.staging = staging  # where packs are written before they are renamed in
        self._staged: dict[pygit2.Oid, tuple[int, bytes]] = {}
        self.written = 0  # packs written since the last consolidation
        self.holds = Holds(self.pack_dir)

    @classmethod
    def attach(cls, repo: pygit2.Repository, staging: Path | None = None) -> StagedObjects:
        staged = cls(Path(repo.path) / "objects", staging)
        staged.remove_temporary_files()
        repo.odb.add_backend(_Backend(staged), PRIORITY)
        return staged

    def reopen(self, repo: pygit2.Repository) -> None:
        """Give ``repo`` a new object database over the same folders, served this store.

        libgit2 keeps every pack it has found in its list, the pack's index mapped,
        for as long as the object database lives — also once the pack is deleted —
        and each object it does not find costs a look into every pack of the list.
        A fresh database lists only the packs there are now. A backend belongs to
        one database, so the new one gets a backend of its own over this store:
        what is staged stays readable, and every write still comes here.
        """
        odb = pygit2.Odb(str(self.objects_dir))
        odb.add_backend(_Backend(self), PRIORITY)
        repo.set_odb(odb)

    # -- what the backend asks --------------------------------------------------------

    def read(self, oid: pygit2.Oid) -> tuple[int, bytes]:
        return self._staged[oid]

    def contains(self, oid: pygit2.Oid) -> bool:
        return oid in self._staged

    def complete(self, oid: pygit2.Oid) -> pygit2.Oid:
        """The full id of the one staged object whose id starts as ``oid`` does."""
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

    def flush(self, open_new: OpenNew = create_new, durable: bool = False) -> None:
        """Write what is staged as one pack (nothing when nothing is), held by a ``.keep``
        while a request that may use it is in flight (see :class:`Holds`).

        A failure leaves the objects staged, for the next flush to write.
        """
        if not self._staged:
            return
        name = write_pack(
            self.pack_dir,
            self._staged,
            open_new,
            staging=self.staging,
            keep=KEEP_MARK,
            durable=durable,
        )
        self.holds.written(name)
        self._staged = {}
        self.written += 1

    def remove_temporary_files(self) -> None:
        """Drop the half-written packs of a process killed inside :meth:`flush`."""
        for folder in (self.pack_dir, self.staging):
            if folder is not None and folder.is_dir():
                for leftover in folder.glob(f"{_TMP_PREFIX}*"):
                    leftover.unlink(missing_ok=True)


def fresh_odb(repo: pygit2.Repository, objects_dir: Path) -> None:
    """Give ``repo`` a new object database over ``objects_dir``: its loose objects, its
    packs as they are now, its alternates (see :meth:`StagedObjects.reopen`)."""
    repo.set_odb(pygit2.Odb(str(objects_dir)))


class _Backend(pygit2.OdbBackend):
    """libgit2's view of a :class:`StagedObjects`: serves what it holds, takes every write."""

    def __init__(self, store: StagedObjects) -> None:
        super().__init__()
        self.store = store

    def read_cb(self, oid: pygit2.Oid) -> tuple[int, bytes]:
        return self.store.read(oid)

    def read_prefix_cb(self, oid: pygit2.Oid) -> tuple[int, bytes, pygit2.Oid]:
        full = self.store.complete(oid)
        kind, data = self.store.read(full)
        return kind, data, full

    def read_header_cb(self, oid: pygit2.Oid) -> tuple[int, int]:
        kind, data = self.store.read(oid)
        return kind, len(data)

    def exists_cb(self, oid: pygit2.Oid) -> bool:
        return self.store.contains(oid)

    def exists_prefix_cb(self, oid: pygit2.Oid) -> pygit2.Oid:
        return self.store.complete(oid)

    def write_cb(self, oid: pygit2.Oid, data: bytes, kind: int) -> None:
        self.store.stage(oid, kind, data)

    def refresh_cb(self) -> None:
        """Nothing to re-read: what is staged is only in memory."""


class Holds:
    """Which packs this daemon keeps (their ``.keep``), and which it may let go.

    A request's objects may be written by any flush while it runs (another
    session's included), so a pack is held until every request that was in
    flight when it was written has ended: :meth:`begin` and :meth:`end` bracket
    each request, and :meth:`releasable` names the packs no request may still
    need. Their ``.keep`` files are removed once requests pause
    (:meth:`release`), or the packs are rolled together (gitops.rollup).
    Thread-safe: requests begin on planning threads, packs are written on the
    git worker, roll-ups run on the housekeeping thread.
    """

    def __init__(self, pack_dir: Path) -> None:
        self.pack_dir = pack_dir
        self._lock = threading.Lock()
        self._serial = 0  # packs written so far
        self._in_flight: dict[int, int] = {}  # serial at a request's start -> requests
        self._held: dict[str, int] = {}  # pack name -> serial when written

    def begin(self) -> int:
        with self._lock:
            token = self._serial
            self._in_flight[token] = self._in_flight.get(token, 0) + 1
            return token

    def end(self, token: int) -> None:
        with self._lock:
            left = self._in_flight.get(token, 0) - 1
            if left > 0:
                self._in_flight[token] = left
            else:
                self._in_flight.pop(token, None)

    def written(self, name: str) -> None:
        with self._lock:
            self._held[name] = self._serial
            self._serial += 1

    def adopt_leftovers(self) -> None:
        """Hold the ``.keep`` files a previous daemon of this repository left (their
        requests ended with it): releasable at once."""
        if not self.pack_dir.is_dir():
            return
        for keep in self.pack_dir.glob("pack-*.keep"):
            with contextlib.suppress(OSError):
                if keep.read_bytes() == KEEP_MARK:
                    with self._lock:
                        self._held.setdefault(keep.stem, -1)

    def releasable(self) -> set[str]:
        """The held packs no request in flight may still need."""
        with self._lock:
            oldest = min(self._in_flight, default=self._serial)
            return {name for name, serial in self._held.items() if serial < oldest}

    def held(self) -> set[str]:
        with self._lock:
            return set(self._held)

    def forget(self, names: set[str]) -> None:
        with self._lock:
            for name in names:
                self._held.pop(name, None)

    def release(self) -> set[str]:
        """Remove the ``.keep`` of every releasable pack; the packs let go."""
        names = self.releasable()
        done = set()
        for name in names:
            try:
                (self.pack_dir / f"{name}.keep").unlink(missing_ok=True)
            except OSError:
                continue  # tried again at the next pause
            done.add(name)
        self.forget(done)
        return done


def write_pack(
    pack_dir: Path,
    objects: dict[pygit2.Oid, tuple[int, bytes]],
    open_new: OpenNew = create_new,
    *,
    staging: Path | None = None,
    keep: bytes | None = None,
    durable: bool = False,
) -> str:
    """Write ``objects`` (id -> (type, data)) as a pack and its index; the pack's name.

    Each file is written under a temporary name in ``staging`` (default: the
    pack folder) and renamed into place, the pack before its index, as git
    does: a pack is found through its index, so no reader sees a pack that is
    not whole. With ``keep``, a ``.keep`` holding it is made first. ``durable``:
    both files are fsynced before they are renamed, and the folder after.
    On a failure nothing this call made is left.
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
    made: list[Path] = []  # names this call created, removed again on a failure
    try:
        if keep is not None:
            _keep(pack_dir / f"{name}.keep", keep, open_new, made)
        for suffix, content in ((".pack", body), (".idx", index)):
            target = pack_dir / f"{name}{suffix}"
            existed = target.exists()
            _write_new(staging, target, content, open_new, durable)
            if not existed:
                made.append(target)
        if durable:
            fsync_dir(pack_dir)
    except BaseException:
        for path in reversed(made):
            with contextlib.suppress(OSError):
                path.unlink()
        raise
    return name


def _keep(path: Path, mark: bytes, open_new: OpenNew, made: list[Path]) -> None:
    """Make the ``.keep`` at ``path`` (one already there holds the pack just as well)."""
    try:
        fd = open_new(path, 0o444)
    except FileExistsError:
        return
    made.append(path)
    try:
        write_all(fd, mark)
    finally:
        os.close(fd)


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


def _write_new(
    staging: Path | None, target: Path, data: bytes | bytearray, open_new: OpenNew, durable: bool
) -> None:
    """Write ``data`` to a temporary file in ``staging`` (or beside ``target``), rename it
    to ``target``; the temporary is gone whatever happens."""
    folder = target.parent
    if staging is not None:
        try:
            staging.mkdir(mode=0o700, parents=True, exist_ok=True)
            folder = staging
        except OSError:
            pass  # the staging folder was removed and cannot be made again: write beside
    tmp = folder / f"{_TMP_PREFIX}{target.name}"
    try:
        fd = open_new(tmp, 0o444)
    except FileExistsError:  # a leftover of a write that failed in another way
        tmp.unlink(missing_ok=True)
        fd = open_new(tmp, 0o444)
    try:
        try:
            write_all(fd, data)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.replace(tmp, target)
        except OSError as exc:
            if folder == target.parent or exc.errno != errno.EXDEV:
                raise
            tmp.unlink(missing_ok=True)  # the staging folder is on another file system
            _write_new(None, target, data, open_new, durable)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
