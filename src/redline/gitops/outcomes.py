"""The outcome log: requests a session refused, which leave no commit and so no note.

A request that ends ``rejected`` (by the policy), ``validation_failed``,
``no_match`` or ``ambiguous`` changes nothing, so the evidence ledger
(``refs/notes/redline``) never sees it. ``redline stats`` needs it all the same
(how often a tier is refused says as much as how often it is used), so the
daemon appends one JSON line per such request to
``<git-common-dir>/redline/outcomes/<session>.jsonl``::

    {"time": "2026-01-01T00:00:00Z", "session": "s", "tool": "edit",
     "status": "rejected", "match_type": "fuzzy", "confidence": 0.93,
     "path": "migrations/001.sql", "request": "3f2a…"}

``request`` is a digest of the request as sent (a retried request has the same
one); ``match_type``/``confidence`` are null when nothing matched. The log is
local to this clone (it is not pushed: the notes carry the committed evidence
across machines). Each line is one ``write`` on a file opened ``O_APPEND``, so
lines never interleave; past :data:`LIMIT` bytes the file is moved aside to
``<session>.jsonl.1`` (replacing an older one), so the log stays bounded. A log
that cannot be written never fails the request: :func:`record` says so in its
return value and the daemon logs it.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from redline.gitops.notes import utc_now
from redline.gitops.repo import Layout

FOLDER = "outcomes"
SUFFIX = ".jsonl"
RECORDED = ("rejected", "validation_failed", "no_match", "ambiguous")  # in the order shown
LIMIT = 10 * 1024 * 1024  # bytes in the current file before it is moved aside
_MAX_LINE = 64 * 1024  # a path longer than this is cut: one line stays one small write


def folder(layout: Layout) -> Path:
    return layout.state / FOLDER


def log_path(layout: Layout, session: str) -> Path:
    return folder(layout) / f"{session}{SUFFIX}"


def entry(
    session: str, request: Any, result: Mapping[str, Any], time: str | None = None
) -> dict[str, Any]:
    """The log line for a refused request (``result`` as ``Result.to_dict`` gives it)."""
    match_type, confidence = _evidence(result)
    tool = request.get("tool") if isinstance(request, Mapping) else None
    path = result.get("path")
    return {
        "time": time or utc_now(),
        "session": session,
        "tool": tool if isinstance(tool, str) else None,
        "status": result.get("status"),
        "match_type": match_type,
        "confidence": confidence,
        "path": path[:4096] if isinstance(path, str) else None,
        "request": _digest(request),
    }


def entries(
    session: str, request: Any, result: Mapping[str, Any], time: str | None = None
) -> list[dict[str, Any]]:
    """The log lines a request's answer gives: one for a refused request, one for each
    refused file group of a patch that was partly applied (or failed for mixed reasons)."""
    status = result.get("status")
    if status in RECORDED:
        return [entry(session, request, result, time)]
    lines = []
    for group in result.get("not_applied") or []:
        if not isinstance(group, Mapping) or group.get("status") not in RECORDED:
            continue
        paths = group.get("paths") or []
        refused = {
            "status": group["status"],
            "match_type": group.get("match_type"),
            "confidence": group.get("confidence"),
            "path": paths[0] if len(paths) == 1 else None,
        }
        lines.append(entry(session, request, refused, time))
    return lines


def _evidence(result: Mapping[str, Any]) -> tuple[str | None, float | None]:
    """The match a refused request had: its own, else its least confident span or hunk."""
    if result.get("match_type") is not None:
        return str(result["match_type"]), _number(result.get("confidence"))
    spans = [s for s in [*result.get("matches", []), *result.get("hunks", [])] if s]
    spans = [s for s in spans if isinstance(s, Mapping) and s.get("match_type")]
    if not spans:
        return None, None
    weakest = min(spans, key=lambda s: _number(s.get("confidence")) or 0.0)
    return str(weakest["match_type"]), _number(weakest.get("confidence"))


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _digest(request: Any) -> str:
    text = json.dumps(request, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def record(layout: Layout, line: Mapping[str, Any], limit: int = LIMIT) -> str | None:
    """Append ``line`` to its session's log; None when written, else why it was not."""
    session = str(line.get("session") or "")
    if not session or "/" in session or session.startswith("."):
        return f"no session name to file the outcome under ({session!r})"
    data = json.dumps(line, ensure_ascii=False, sort_keys=True).encode("utf-8", "replace") + b"\n"
    if len(data) > _MAX_LINE:
        return f"the outcome line is {len(data)} bytes, more than {_MAX_LINE}"
    path = log_path(layout, session)
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        _rotate(path, limit)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            written = os.write(fd, data)
        finally:
            os.close(fd)
    except OSError as exc:
        return f"cannot write {path}: {exc.strerror or exc}"
    if written != len(data):
        return f"only {written} of {len(data)} bytes reached {path}"
    return None


def _rotate(path: Path, limit: int) -> None:
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return
    if size >= limit:
        os.replace(path, path.with_name(path.name + ".1"))


def read(layout: Layout, session: str | None = None) -> Iterator[dict[str, Any]]:
    """Every readable line of the logs (one session's, or all), older file first.

    A line that is not a JSON object (a torn write after a crash, a hand edit) is
    skipped: the log is a local record, not evidence.
    """
    base = folder(layout)
    if session is not None:
        names = [f"{session}{SUFFIX}"]
    else:
        try:
            names = sorted({p.name.removesuffix(".1") for p in base.iterdir() if _is_log(p.name)})
        except OSError:
            return
    for name in names:
        for path in (base / f"{name}.1", base / name):
            yield from _lines(path)


def _is_log(name: str) -> bool:
    return name.endswith((SUFFIX, SUFFIX + ".1")) and not name.startswith(".")


def _lines(path: Path) -> Iterator[dict[str, Any]]:
    try:
        handle = path.open("rb")
    except OSError:
        return
    with handle:
        for raw in handle:
            try:
                line = json.loads(raw)
            except ValueError:
                continue
            if isinstance(line, dict):
                yield line
