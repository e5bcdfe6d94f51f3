"""The repeated-failure hint across separate ``redline apply`` calls.

A ``--jsonl`` stream or a daemon session counts the failed edits of a file
within a turn in memory (``engine.hints``). An agent that starts one ``redline
apply`` per edit would lose that count between calls, so an edit that names
its ``turn`` keeps it in a small state file in the user's cache folder
(``redline.userdirs``: ``retries/<key>.json``, one file per root, keyed by the
root's resolved path). Edits without a turn are counted within the process
only: across calls nothing says that two of them belong to one turn.

The state is advisory: it is bounded (:data:`MAX_PATHS` files per root, entries
older than :data:`MAX_AGE` seconds forgotten, :data:`MAX_ROOTS` state files),
written atomically (a temporary file renamed over it), and a file that cannot
be read, does not parse or belongs to another root is ignored; one that cannot
be written is skipped. Never a reason for a request to fail. Nothing is read or
written until an edit with a turn is answered.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from redline.engine.hints import FailureHints

if TYPE_CHECKING:
    from redline.engine.result import Result

FOLDER = "retries"
MAX_PATHS = 100  # files of one root with a count kept
MAX_AGE = 6 * 3600  # seconds: a count older than this belongs to a turn long over
MAX_ROOTS = 64  # state files kept; the least recently written go first


class KeptHints:
    """:class:`~redline.engine.hints.FailureHints` for the edits under ``root``, with the
    counts of edits that name a turn kept in ``folder`` (default: the user's cache)."""

    def __init__(self, root: Path, folder: Path | None = None) -> None:
        self.root = str(root.resolve())
        self.hints = FailureHints()
        self._folder = folder
        self._kept: dict[str, list[Any]] | None = None  # path -> [turn, count, time]

    def observe(self, path: str, turn: object, result: Result) -> None:
        """As :meth:`FailureHints.observe`, taking up and keeping the count of a turn."""
        if turn is None:
            self.hints.observe(path, turn, result)
            return
        kept = self._load()
        before = self.hints.failed(path)
        self.hints.observe(path, turn, result)
        after = self.hints.failed(path)
        if after == before:
            return
        if after is None:
            kept.pop(_key(path), None)
        else:
            kept.pop(_key(path), None)  # re-inserted last: the newest entry
            kept[_key(path)] = [after[0], after[1], time.time()]
        self._save(kept)

    def _load(self) -> dict[str, list[Any]]:
        if self._kept is None:
            self._kept = _read(self._file(), self.root)
            for path, (turn, count, _) in self._kept.items():
                if self.hints.failed(path) is None:
                    self.hints.restore(path, turn, count)
        return self._kept

    def _file(self) -> Path:
        folder = self._folder
        if folder is None:
            from redline.userdirs import user_cache_dir

            folder = user_cache_dir() / FOLDER
        return folder / f"{zlib.crc32(self.root.encode('utf-8', 'surrogateescape')):08x}.json"

    def _save(self, kept: dict[str, list[Any]]) -> None:
        while len(kept) > MAX_PATHS:
            kept.pop(next(iter(kept)))
        _write(self._file(), {"root": self.root, "paths": kept})


def _key(path: str) -> str:
    import posixpath

    return posixpath.normpath(path)


def _read(file: Path, root: str) -> dict[str, list[Any]]:
    """The counts kept for ``root`` that are still fresh; empty when there are none or the
    file cannot be read, does not parse, or belongs to another root."""
    try:
        data = json.loads(file.read_bytes())
    except (OSError, ValueError, RecursionError):
        return {}
    if not isinstance(data, dict) or data.get("root") != root:
        return {}
    paths = data.get("paths")
    if not isinstance(paths, dict):
        return {}
    now = time.time()
    kept: dict[str, list[Any]] = {}
    for path, entry in paths.items():
        if not (isinstance(entry, list) and len(entry) == 3):
            continue
        turn, count, at = entry
        if (
            type(turn) in (str, int)
            and type(count) is int
            and count > 0
            and type(at) in (int, float)
            and 0 <= now - at <= MAX_AGE
        ):
            kept[path] = [turn, count, at]
    return kept


def _write(file: Path, data: dict[str, Any]) -> None:
    """Replace ``file`` with ``data`` in one step; nothing on failure (the state is only
    advice). A new state file makes room by removing the oldest beyond MAX_ROOTS."""
    tmp = file.with_name(f".{file.name}.{os.getpid()}.tmp")
    try:
        new = not file.exists()
        file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, file)
        if new:
            _prune(file.parent)
    except (OSError, ValueError):
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


def _prune(folder: Path) -> None:
    files = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime)
    for old in files[:-MAX_ROOTS]:
        old.unlink(missing_ok=True)
