"""The repeated-failure hint: after a second miss on a file within a turn."""

from __future__ import annotations

import posixpath

from redline.engine.result import Result

HINT = (
    "this is failed attempt {count} on {path} in this turn: re-read the target range of "
    "the file and copy old_string from what you read (or rewrite the whole section) "
    "instead of retyping old text from memory"
)


class FailureHints:
    """Counts failed edits per file; a success or a new turn resets the count."""

    def __init__(self) -> None:
        self._turn: dict[str, object] = {}
        self._count: dict[str, int] = {}

    def observe(self, path: str, turn: object, result: Result) -> None:
        """Record ``result`` and set its ``hint`` from the second failure on."""
        path = posixpath.normpath(path)
        if self._turn.get(path, turn) != turn or result.ok:
            self._count.pop(path, None)
        self._turn[path] = turn
        if result.ok or result.status in ("invalid", "failed"):
            return  # a malformed request, or the machine refusing a write: no text to re-read
        count = self._count.get(path, 0) + 1
        self._count[path] = count
        if count >= 2:
            result.hint = HINT.format(count=count, path=path)

    def failed(self, path: str) -> tuple[object, int] | None:
        """The turn and count of the failures on ``path`` so far (None: none counted)."""
        path = posixpath.normpath(path)
        count = self._count.get(path)
        return None if count is None else (self._turn.get(path), count)

    def restore(self, path: str, turn: object, count: int) -> None:
        """Take up a count of failures kept from an earlier process (the caller's state)."""
        path = posixpath.normpath(path)
        self._turn[path] = turn
        self._count[path] = count
