"""Unified diffs of an edit, computed over the changed region only."""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence

_HUNK = re.compile(r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@")
# Line boundaries ``str.splitlines`` knows besides "\n"; a text holding one takes
# the general path, which splits both texts whole.
_OTHER_BREAKS = ("\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")
CONTEXT = 3
Opcode = tuple[str, int, int, int, int]
_GALLOP = 256  # characters compared in one step at first, doubling while they agree


def unified(path: str, before: str, after: str, shared: tuple[int, int] = (0, 0)) -> str:
    """``git diff``-style text for ``before`` → ``after`` (LF views). ``shared``: how many
    characters the texts are known to share at the start and at the end (at least)."""
    if before == after:
        return ""
    # What the texts share is looked through once, in ``before``.
    middle = after[shared[0] : len(after) - shared[1]]
    if _other_breaks(before) or _other_breaks(middle):
        a = before.splitlines(keepends=True)
        b = after.splitlines(keepends=True)
        lo, a_end, b_end = _region(a, b)
        a_slice, b_slice = a[lo:a_end], b[lo:b_end]
    else:
        lo, a_slice, b_slice = _newline_region(before, after, shared)
    lines = difflib.unified_diff(
        _terminated(a_slice), _terminated(b_slice), f"a/{path}", f"b/{path}", n=CONTEXT
    )
    return "".join(_shift(line, lo) for line in lines)


def unified_spans(path: str, before: str, after: str, spans: Sequence[tuple[int, int, int]]) -> str:
    """:func:`unified` for an edit whose replacements are known: ``before[start:end]``
    became ``length`` characters of ``after`` for each ``(start, end, length)``, in
    order. Only the lines the spans touch are compared, however far apart they are
    (a batch of edits across a long file)."""
    if len(spans) == 1:  # the changed region is the span: the rest is shared
        start, end, _ = spans[0]
        return unified(path, before, after, (start, len(before) - end))
    if not spans or _other_breaks(before) or _other_breaks(after):
        return unified(path, before, after)
    if before == after:
        return ""
    a = _terminated(before.splitlines(keepends=True))
    b = _terminated(after.splitlines(keepends=True))
    codes: list[Opcode] = []
    ia = ib = 0  # lines of a and b up to which codes are made
    for a1, a2, b1, b2 in _blocks(before, after, spans, len(a), len(b)):
        if a1 > ia:
            codes.append(("equal", ia, a1, ib, b1))
        matcher = difflib.SequenceMatcher(None, a[a1:a2], b[b1:b2], False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal" and codes and codes[-1][0] == "equal":
                _, x1, _, y1, _ = codes.pop()
                codes.append(("equal", x1, a1 + i2, y1, b1 + j2))
            else:
                codes.append((tag, a1 + i1, a1 + i2, b1 + j1, b1 + j2))
        ia, ib = a2, b2
    if ia < len(a):
        if codes and codes[-1][0] == "equal":
            _, x1, _, y1, _ = codes.pop()
            codes.append(("equal", x1, len(a), y1, len(b)))
        else:
            codes.append(("equal", ia, len(a), ib, len(b)))
    out = [f"--- a/{path}\n", f"+++ b/{path}\n"]
    for group in _grouped(codes, CONTEXT):
        first, last = group[0], group[-1]
        out.append(f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n")
        for kind, i1, i2, j1, j2 in group:
            if kind == "equal":
                out += [" " + line for line in a[i1:i2]]
                continue
            out += ["-" + line for line in a[i1:i2]]
            out += ["+" + line for line in b[j1:j2]]
    return "".join(out)


def _grouped(codes: list[Opcode], n: int) -> list[list[Opcode]]:
    """Hunks of opcodes with ``n`` lines of context, as ``difflib`` groups its own."""
    codes = list(codes)
    if codes[0][0] == "equal":
        tag, i1, i2, j1, j2 = codes[0]
        codes[0] = tag, max(i1, i2 - n), i2, max(j1, j2 - n), j2
    if codes[-1][0] == "equal":
        tag, i1, i2, j1, j2 = codes[-1]
        codes[-1] = tag, i1, min(i2, i1 + n), j1, min(j2, j1 + n)
    groups: list[list[Opcode]] = []
    group: list[Opcode] = []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal" and i2 - i1 > 2 * n:
            group.append((tag, i1, min(i2, i1 + n), j1, min(j2, j1 + n)))
            groups.append(group)
            group = []
            i1, j1 = max(i1, i2 - n), max(j1, j2 - n)
        group.append((tag, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        groups.append(group)
    return groups


def _blocks(
    before: str, after: str, spans: Sequence[tuple[int, int, int]], a_len: int, b_len: int
) -> list[tuple[int, int, int, int]]:
    """The line ranges ``(a1, a2, b1, b2)`` the spans touch, merged where they meet."""
    blocks: list[tuple[int, int, int, int]] = []
    a_pos = a_line = b_pos = b_line = 0
    shift = 0  # characters after minus before, from the spans so far
    for start, end, length in spans:
        a_line += before.count("\n", a_pos, start)
        b_start = start + shift
        b_line += after.count("\n", b_pos, b_start)
        a_pos, b_pos = start, b_start
        a2 = min(a_line + before.count("\n", start, end) + 1, a_len)
        b2 = min(b_line + after.count("\n", b_start, b_start + length) + 1, b_len)
        a1, b1 = a_line, b_line
        if blocks and a1 <= blocks[-1][1]:
            p1, p2, q1, q2 = blocks.pop()
            a1, a2, b1, b2 = p1, max(a2, p2), q1, max(b2, q2)
        blocks.append((a1, a2, b1, b2))
        shift += length - (end - start)
    return blocks


def _range(start: int, stop: int) -> str:
    """A hunk header's range, as ``difflib.unified_diff`` writes it."""
    length = stop - start
    if length == 1:
        return f"{start + 1}"
    return f"{start + 1 if length else start},{length}"


def _other_breaks(text: str) -> bool:
    return any(mark in text for mark in _OTHER_BREAKS)


def _region(a: list[str], b: list[str]) -> tuple[int, int, int]:
    """The first line of the lines to diff and where they end in ``a`` and ``b``:
    the lines the texts do not share at the start and the end, with context."""
    head = 0
    limit = min(len(a), len(b))
    while head < limit and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < limit - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    lo = max(0, head - CONTEXT)
    return lo, len(a) - max(0, tail - CONTEXT), len(b) - max(0, tail - CONTEXT)


def _newline_region(
    before: str, after: str, known: tuple[int, int] = (0, 0)
) -> tuple[int, list[str], list[str]]:
    """:func:`_region` for texts whose only line boundary is "\\n", found from the
    characters the texts share at both ends without splitting them whole (``known``:
    how many they are known to share at the start and at the end, at least)."""
    n = min(len(before), len(after))
    prefix = _common_prefix(before, after, n, known[0])
    # Lines that end inside the shared prefix are the same lines in both.
    head = before.count("\n", 0, prefix)
    head_start = before.rfind("\n", 0, prefix) + 1  # where line ``head`` starts
    suffix = _common_suffix(before, after, n, known[1])
    a_from, b_from = len(before) - suffix, len(after) - suffix
    # Lines that start inside the shared suffix are the same lines in both; one
    # starting exactly where it begins counts when it starts a line in both texts.
    shared = before.count("\n", a_from, len(before) - 1)
    # Each text is the shared start, its middle and the shared end (cut where the two
    # would overlap, as text inserted beside a copy of its own end makes them): only
    # the middles are left to count for the texts' line counts.
    end = min(suffix, len(before) - prefix, len(after) - prefix)
    ending = shared + (a_from < len(before) and before.endswith("\n"))
    ending -= before.count("\n", a_from, len(before) - end)  # the overlap, if any
    limit = min(
        _line_count(before, head + before.count("\n", prefix, len(before) - end) + ending),
        _line_count(after, head + after.count("\n", prefix, len(after) - end) + ending),
    )
    first = before.find("\n", a_from, len(before) - 1) + 1  # the first one that starts inside
    if a_from < len(before) and _starts_line(before, a_from) and _starts_line(after, b_from):
        shared += 1
        first = a_from
    tail = min(shared, limit - head)
    start = head_start
    for _ in range(min(head, CONTEXT)):
        start = before.rfind("\n", 0, start - 1) + 1
    kept = max(0, tail - CONTEXT)  # shared lines at the end left out of the diff
    if kept == 0:
        a_end = len(before)
    elif shared - kept < kept:  # walk forward from the first shared line
        a_end = first
        for _ in range(shared - kept):
            a_end = before.find("\n", a_end) + 1
    else:
        a_end = _start_of_last(before, kept)
    # The lines left out are in the shared suffix: they end both texts.
    b_end = a_end + len(after) - len(before)
    return (
        max(0, head - CONTEXT),
        before[start:a_end].splitlines(keepends=True),
        after[start:b_end].splitlines(keepends=True),
    )


def _line_count(text: str, newlines: int) -> int:
    """Lines of ``text``, which holds ``newlines`` "\\n"."""
    return newlines + (not text.endswith("\n") and text != "")


def _starts_line(text: str, offset: int) -> bool:
    return offset == 0 or text[offset - 1] == "\n"


def _start_of_last(text: str, lines: int) -> int:
    """Where the last ``lines`` lines of ``text`` start (its length for none)."""
    end = len(text)
    if lines == 0:
        return end
    pos = end - 1 if text.endswith("\n") else end  # a final line without "\n" counts
    for _ in range(lines):
        pos = text.rfind("\n", 0, pos)
    return pos + 1


def _common_prefix(a: str, b: str, n: int, known: int = 0) -> int:
    """How many leading characters ``a`` and ``b`` share (at most ``n``; ``known`` of
    them are known to be shared)."""
    done, size = min(known, n), _GALLOP
    while done + size <= n and a[done : done + size] == b[done : done + size]:
        done += size
        size *= 2
    lo, hi = done, min(done + size, n)
    while lo < hi:  # a[:lo] == b[:lo], and nothing agrees past hi
        mid = (lo + hi + 1) // 2
        if a[done:mid] == b[done:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix(a: str, b: str, n: int, known: int = 0) -> int:
    """How many trailing characters ``a`` and ``b`` share (at most ``n``; ``known`` of
    them are known to be shared)."""
    la, lb = len(a), len(b)
    done, size = min(known, n), _GALLOP
    while done + size <= n and a[la - done - size : la - done] == b[lb - done - size : lb - done]:
        done += size
        size *= 2
    lo, hi = done, min(done + size, n)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[la - mid : la - done] == b[lb - mid : lb - done]:
            lo = mid
        else:
            hi = mid - 1
    return lo


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
