"""The journal that makes a request's commit recoverable after a crash.

Before any ref moves, the journal records what the request will do: the branch
(old → new), the note of each new commit, and the worktree files to write.
Objects are already in the object database then. A request resolves its own
journal before it answers (gitops.publish); only a process killed in between
leaves one, which the next start rolls forward when the branch is still where
the journal left it — a request is applied whole, or (if the branch moved
elsewhere) not at all.

Each session has one journal file, overwritten in place: a checksummed record,
or an empty one once the request is done (an empty or missing file reads the
same).
"""

from __future__ import annotations

import json
import os
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# A record: magic, payload length and CRC-32, then the JSON payload (length 0: empty).
_HEADER = struct.Struct(">4sII")
_MAGIC = b"RLJ1"


@dataclass(frozen=True)
class JournalEntry:
    session: str
    request: str
    ref: str
    old: str
    new: str
    notes: dict[str, str]  # commit id -> the blob of its note (added to whatever tip is current)
    files: dict[str, tuple[str, int] | None]  # path -> (blob id, mode) or None (delete)
    # paths whose index entries are refreshed last: the files above and the external
    # changes committed with them (already on disk, but staged only at the end)
    stage: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "version": 2,
            "session": self.session,
            "request": self.request,
            "ref": self.ref,
            "old": self.old,
            "new": self.new,
            "notes": dict(self.notes),
            "files": {p: (list(v) if v is not None else None) for p, v in self.files.items()},
            "stage": list(self.stage),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> JournalEntry:
        return cls(
            session=data["session"],
            request=data["request"],
            ref=data["ref"],
            old=data["old"],
            new=data["new"],
            notes={str(c): str(b) for c, b in data["notes"].items()},
            files={
                p: (str(v[0]), int(v[1])) if v is not None else None
                for p, v in data["files"].items()
            },
            stage=tuple(str(p) for p in data.get("stage", ())),
        )


def path_for(folder: Path, session: str) -> Path:
    return folder / f"{session}.journal"


def write(folder: Path, entry: JournalEntry, durable: bool = False) -> None:
    """Record ``entry`` in the session's journal file, in one write at its start.

    The file is kept between requests, so recording costs no file creation. A
    write cut short by a kill fails its checksum and reads as no entry: it was
    never complete, so no ref had moved. ``durable``: fsynced before this
    returns, so that a ref fsynced after it never outlives it in a power loss
    (gitops.durability); git's own writes are not fsynced unless asked.
    """
    payload = json.dumps(entry.to_json()).encode("utf-8")
    path = path_for(folder, entry.session)
    try:
        _overwrite(path, _record(payload), durable)
    except FileNotFoundError:  # the folder was removed under the daemon: made again
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        _overwrite(path, _record(payload), durable)


def clear(folder: Path, session: str, durable: bool = False) -> None:
    """Mark the session's journal empty: its request is done (or was dropped).

    Overwritten in place, which needs no new space; should even that fail, the
    file is cut to nothing or removed (both read as no entry), so a request
    answered as not applied is never rolled forward later.
    """
    path = path_for(folder, session)
    if not path.exists():
        return
    try:
        _overwrite(path, _record(b""), durable)
    except OSError:
        try:
            os.truncate(path, 0)
        except OSError:
            path.unlink(missing_ok=True)


def read(folder: Path, session: str) -> JournalEntry | None:
    """The session's pending entry; None when it is empty, missing or torn."""
    try:
        data = path_for(folder, session).read_bytes()
    except FileNotFoundError:
        return None
    if len(data) < _HEADER.size:
        return None
    magic, length, checksum = _HEADER.unpack_from(data)
    payload = data[_HEADER.size : _HEADER.size + length]
    if magic != _MAGIC or not length or len(payload) != length or zlib.crc32(payload) != checksum:
        return None
    try:
        return JournalEntry.from_json(json.loads(payload))
    except (ValueError, KeyError, TypeError, IndexError):
        return None


def _record(payload: bytes) -> bytes:
    return _HEADER.pack(_MAGIC, len(payload), zlib.crc32(payload)) + payload


def _overwrite(path: Path, record: bytes, durable: bool = False) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        view = memoryview(record)
        offset = 0
        while offset < len(view):
            offset += os.pwrite(fd, view[offset:], offset)
        if durable:
            os.fdatasync(fd)
    finally:
        os.close(fd)
