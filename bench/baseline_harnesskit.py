"""A straightforward HarnessKit-style edit tool, the comparison point for redline.

Single edit, strictest first; the first tier that finds a window wins:

1. exact substring — first occurrence (duplicates are not refused);
2. per-line ``rstrip`` equality over windows of old_string's line count — first window;
3. per-line whitespace-normalised equality (runs collapsed, ends stripped) — first window;
4. fuzzy: ``difflib.SequenceMatcher.ratio()`` of each window's text against old_string,
   best window if ≥ threshold (0.8), first on ties.

The matched span is replaced by new_string verbatim (no indentation, newline or
punctuation adaptation, no invisible-character cleanup). replace_all replaces
every exact occurrence. A batch applies its items one after another on the
evolving text; any failing item fails the whole batch (nothing written).

The straightforward scan (the default, and what the benchmark compares with)
computes ``ratio()`` for every window. With ``prune=True`` it skips windows whose
``real_quick_ratio()``/``quick_ratio()`` upper bounds cannot reach the threshold
or beat the best ratio so far — the idiom of ``difflib.get_close_matches``; the
chosen window is the same, only faster. The benchmark reports that variant too.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from redline.engine.edit import EditItem, EditRequest

_TERMINATOR = re.compile(r"\r?\n")


@dataclass(frozen=True)
class BaselineOutcome:
    status: str  # applied | no_match | invalid
    data: bytes | None
    match_type: str | None = None


@dataclass(frozen=True)
class _Lines:
    """The text split into lines: each line's text (no terminator) and start offset."""

    texts: list[str]
    starts: list[int]

    @classmethod
    def of(cls, text: str) -> _Lines:
        texts: list[str] = []
        starts: list[int] = []
        pos = 0
        for m in _TERMINATOR.finditer(text):
            texts.append(text[pos : m.start()])
            starts.append(pos)
            pos = m.end()
        texts.append(text[pos:])
        starts.append(pos)
        return cls(texts, starts)

    def span(self, first: int, count: int) -> tuple[int, int]:
        last = first + count - 1
        return self.starts[first], self.starts[last] + len(self.texts[last])


def _window_match(lines: _Lines, old_lines: list[str], key: str) -> int:
    """First window whose lines equal old_string's lines after ``key`` normalisation."""
    n = len(old_lines)
    want = [_normalise(s, key) for s in old_lines]
    for s in range(len(lines.texts) - n + 1):
        if all(_normalise(lines.texts[s + k], key) == want[k] for k in range(n)):
            return s
    return -1


def _normalise(line: str, key: str) -> str:
    return line.rstrip() if key == "rstrip" else " ".join(line.split())


def _fuzzy(lines: _Lines, old: str, threshold: float, prune: bool) -> int:
    n = old.count("\n") + 1
    matcher = difflib.SequenceMatcher(None)
    matcher.set_seq2(old)
    best, best_at = -1.0, -1
    for s in range(len(lines.texts) - n + 1):
        matcher.set_seq1("\n".join(lines.texts[s : s + n]))
        floor = max(best, threshold)
        if prune and (matcher.real_quick_ratio() < floor or matcher.quick_ratio() < floor):
            continue
        ratio = matcher.ratio()
        if ratio >= threshold and ratio > best:
            best, best_at = ratio, s
    return best_at


def replace_one(
    text: str, item: EditItem, threshold: float, prune: bool = False
) -> tuple[str | None, str]:
    """(new text or None, match type or refusal status) for one edit item."""
    old, new = item.old_string, item.new_string
    if not old or old == new:
        return None, "invalid"
    if item.replace_all:
        return (text.replace(old, new), "exact") if old in text else (None, "no_match")
    at = text.find(old)
    if at >= 0:
        return text[:at] + new + text[at + len(old) :], "exact"
    lines = _Lines.of(text)
    trailing = old.endswith("\n")
    body = old[:-1] if trailing else old
    old_lines = body.split("\n")
    for tier in ("rstrip", "whitespace"):
        first = _window_match(lines, old_lines, tier)
        if first >= 0:
            return _splice(text, lines, first, len(old_lines), new, trailing), tier
    first = _fuzzy(lines, body, threshold, prune)
    if first >= 0:
        return _splice(text, lines, first, len(old_lines), new, trailing), "fuzzy"
    return None, "no_match"


def _splice(text: str, lines: _Lines, first: int, count: int, new: str, trailing: bool) -> str:
    start, end = lines.span(first, count)
    if trailing:  # old_string ended with a newline: the line terminator is part of the span
        m = _TERMINATOR.match(text, end)
        end = m.end() if m else end
    return text[:start] + new + text[end:]


def apply_baseline(data: bytes, request: EditRequest, prune: bool = False) -> BaselineOutcome:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return BaselineOutcome("invalid", None)
    kinds: list[str] = []
    for item in request.edits:
        result, kind = replace_one(text, item, request.threshold, prune)
        if result is None:
            return BaselineOutcome(kind, None)
        text = result
        kinds.append(kind)
    return BaselineOutcome("applied", text.encode("utf-8"), ",".join(kinds))
