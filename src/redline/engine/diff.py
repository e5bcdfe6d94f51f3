"""Unified diffs of an edit, computed over the changed region only."""

from __future__ import annotations

import difflib
import re

_HUNK = re.compile(r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@")
CONTEXT = 3


def unified(path: str, before: str, after: str) -> str:
    """``git diff``-style text for ``before`` → ``after`` (LF views)."""
    if before == after:
        return ""
    a = before.splitlines(keepends=True)
    b = after.splitlines(keepends=True)
    head = 0
    limit = min(len(a), len(b))
    while head < limit and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < limit - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    lo = max(0, head - CONTEXT)
    a_slice = a[lo : len(a) - max(0, tail - CONTEXT)]
    b_slice = b[lo : len(b) - max(0, tail - CONTEXT)]
    lines = difflib.unified_diff(
        _terminated(a_slice), _terminated(b_slice), f"a/{path}", f"b/{path}", n=CONTEXT
    )
    return "".join(_shift(line, lo) for line in lines)


def _terminated(lines: list[str]) -> list[str]:
    if lines and not lines[-1].endswith("\n"):
        return [*lines[:-1], lines[-1] + "\n\\ No newline at end of file\n"]
    return lines


def _shift(line: str, offset: int) -> str:
    match = _HUNK.match(line)
    if match is None or offset == 0:
        return line
    a_start, a_len, b_start, b_len = match.groups()
    return (
        f"@@ -{int(a_start) + offset}{a_len or ''} +{int(b_start) + offset}{b_len or ''} @@"
        + line[match.end() :]
    )
