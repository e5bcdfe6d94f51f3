"""Write-behind for a stream of edits (``redline apply --jsonl``).

While the stream is ahead of redline — the next request is already waiting —
an edit's new bytes are held and the next edit of the same file starts from
them: the file is written once, as ``git apply`` writes it, however many edits
of it the stream carries. The held files are written, and only then their
answers printed, when the stream catches up (no request waiting), before any
request that is not an edit, and past a bound. So a printed answer is always on
disk; a file that cannot be written, or that another program changed since it
was read, turns every held answer for it into ``failed`` — none of them was
written.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from redline.engine.records import field, record
from redline.fsops import interrupts
from redline.fsops.atomic import read_regular_stat, replace_file
from redline.fsops.resources import explain

# Held past these, the stream is written and answered before it goes on.
MAX_ANSWERS = 1000
MAX_BYTES = 64 << 20


def _stamp(info: os.stat_result) -> tuple[int, int, int, int]:
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


@record
class _Held:
    path: str  # as the answers name it
    data: bytes
    stamp: tuple[int, int, int, int]  # the file on disk when it was first read
    answers: list[int] = field(default_factory=list)  # their places in the queue


class WriteBehind:
    """The held files of a stream and the answers waiting for them, in order."""

    def __init__(self) -> None:
        self._held: dict[Path, _Held] = {}
        self._queue: list[dict[str, Any]] = []
        self._last_read: tuple[Path, tuple[int, int, int, int]] | None = None
        self._current: tuple[Path, _Held, bytes | None] | None = None  # the last hold

    def read(self, target: Path) -> bytes:
        """The file's content as the stream left it: held bytes, or the disk's."""
        held = self._held.get(target)
        if held is not None:
            return held.data
        data, info = read_regular_stat(target)
        self._last_read = (target, _stamp(info))
        return data

    def hold(self, target: Path, path: str, data: bytes) -> None:
        """Keep ``data`` as ``target``'s new content, to be written at the next flush."""
        held = self._held.get(target)
        if held is None:
            assert self._last_read is not None and self._last_read[0] == target, (
                "hold() follows the read() of the same file"
            )
            held = self._held[target] = _Held(path, data, self._last_read[1])
            self._current = (target, held, None)
        else:
            self._current = (target, held, held.data)
            held.data = data

    def answer(self, payload: dict[str, Any]) -> None:
        """Queue a request's answer, after its :meth:`hold` if it held a file.

        A held edit is answered ``applied``; any other answer (the request met
        a bug after its edit was held) takes the hold back.
        """
        if self._current is not None:
            target, held, before = self._current
            self._current = None
            if payload.get("status") == "applied":
                held.answers.append(len(self._queue))
            elif before is None:
                del self._held[target]
            else:
                held.data = before
        self._queue.append(payload)

    @property
    def full(self) -> bool:
        held = sum(len(h.data) for h in self._held.values())
        return len(self._queue) >= MAX_ANSWERS or held >= MAX_BYTES

    def flush(self) -> list[dict[str, Any]]:
        """Write every held file; the queued answers, in order, failures rewritten."""
        for target, held in self._held.items():
            with interrupts.writing():
                error = _write(target, held)
            if error is None:
                continue
            if len(held.answers) > 1:
                error += f" (the stream held {len(held.answers)} edits of it; none was written)"
            for place in held.answers:
                self._queue[place] = _failed(self._queue[place], error)
        answers, self._queue = self._queue, []
        self._held.clear()
        return answers


def _write(target: Path, held: _Held) -> str | None:
    """Write ``held`` over ``target`` unless it changed on disk; the error, if any."""
    try:
        if _stamp(os.stat(target)) != held.stamp:
            return (
                f"{held.path!r} was changed by another program while the stream ran; this "
                "edit was not written; re-read the file and send the edit again"
            )
        replace_file(target, held.data)
    except OSError as exc:
        return f"cannot write {held.path!r}: {explain(exc, target)}. The file is unchanged"
    return None


def _failed(payload: dict[str, Any], error: str) -> dict[str, Any]:
    from redline.engine.result import Result

    result = Result("failed", path=payload.get("path"), error=error)
    return result.to_dict()
