"""The journal that makes a request's commit recoverable after a crash.

Before any ref moves, the journal records what the request will do: the branch
and notes refs (old → new) and the worktree files to write. Objects are already
in the object database then. On restart :func:`recover` rolls an interrupted
request forward when its branch is still where the journal left it, so a
request is applied whole or (if the branch moved on) not at all.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class JournalEntry:
    session: str
    request: str
    ref: str
    old: str
    new: str
    notes_old: str | None
    notes_new: str | None
    files: dict[str, tuple[str, int] | None]  # path -> (blob id, mode) or None (delete)
    # paths whose index entries are refreshed last: the files above and the external
    # changes committed with them (already on disk, but staged only at the end)
    stage: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "version": 1,
            "session": self.session,
            "request": self.request,
            "ref": self.ref,
            "old": self.old,
            "new": self.new,
            "notes_old": self.notes_old,
            "notes_new": self.notes_new,
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
            notes_old=data["notes_old"],
            notes_new=data["notes_new"],
            files={
                p: (str(v[0]), int(v[1])) if v is not None else None
                for p, v in data["files"].items()
            },
            stage=tuple(str(p) for p in data.get("stage", ())),
        )


def path_for(folder: Path, session: str) -> Path:
    return folder / f"{session}.json"


def _tmp_for(folder: Path, session: str) -> Path:
    return folder / f"{session}.tmp"


def write(folder: Path, entry: JournalEntry) -> None:
    """Record ``entry`` (written whole, then renamed into place).

    Like git's own writes this survives the process dying at any point; it is
    not fsynced, since the objects it names are not either (see core.fsync).
    """
    target = path_for(folder, entry.session)
    tmp = _tmp_for(folder, entry.session)
    tmp.write_text(json.dumps(entry.to_json()), encoding="utf-8")
    os.replace(tmp, target)


def clear(folder: Path, session: str) -> None:
    path_for(folder, session).unlink(missing_ok=True)


def drop_torn(folder: Path, session: str) -> None:
    """Remove a journal a crash left half-written (before its rename): it never existed."""
    _tmp_for(folder, session).unlink(missing_ok=True)


def pending(folder: Path) -> list[JournalEntry]:
    entries = []
    for path in sorted(folder.glob("*.json")):
        try:
            entries.append(JournalEntry.from_json(json.loads(path.read_text(encoding="utf-8"))))
        except (ValueError, KeyError, TypeError):
            path.unlink()  # a journal torn before its rename never existed
    return entries
