"""Display prefixes an agent copied from a view of the file, on every line it quotes.

A model that read a file through a viewer sometimes quotes each line with what
the viewer put in front of it: a line number (``12: ``, ``    12→``, ``cat -n``'s
``    12\\t``), a box glyph (``│ ``, ``█ ``), or a diff's marker (`` ``, ``-`` on
old_string's lines, `` ``, ``+`` on new_string's, the `` `` lines the same on both).
:func:`readings` gives old_string and new_string without them when every line of
both carries one of the same kind; the edit tool tries them when old_string as
sent is not in the file, and applies one only when its old_string is there
exactly once.
"""

from __future__ import annotations

import re
from itertools import pairwise

from redline.engine.records import record

_NUMBERED = (
    ("line numbers ('12: ')", re.compile(r"[ \t]*(\d+):")),
    ("line numbers ('12→')", re.compile(r"[ \t]*(\d+)→")),
    ("line numbers ('12' and a tab)", re.compile(r"[ \t]*(\d+)\t")),
    ("line numbers ('12 │ ')", re.compile(r"[ \t]*(\d+) ?│")),
)
_BOXES = ("│", "┃", "█", "▌", "▐")


@record(frozen=True)
class Reading:
    """old_string and new_string without their prefixes, and what the prefixes were."""

    old: str
    new: str
    prefixes: str


def _lines(text: str) -> list[str]:
    """The lines of ``text`` (a final newline ends the last line; it starts no other)."""
    if not text:
        return []
    return (text[:-1] if text.endswith("\n") else text).split("\n")


def _joined(lines: list[str], like: str) -> str:
    return "\n".join(lines) + ("\n" if like.endswith("\n") else "")


def readings(old: str, new: str) -> list[Reading]:
    """Every way of reading ``old`` and ``new`` without display prefixes on their lines
    (none when some line of either has none, or old_string's line numbers do not
    count up by one)."""
    old_lines, new_lines = _lines(old), _lines(new)
    if not old_lines:
        return []
    found: list[Reading] = []
    for name, pattern in _NUMBERED:
        matches = [pattern.match(line) for line in old_lines]
        theirs = [pattern.match(line) for line in new_lines]
        if not all(matches) or not all(theirs):
            continue
        numbers = [int(m.group(1)) for m in matches if m]
        if any(b != a + 1 for a, b in pairwise(numbers)):
            continue
        cut_old = [line[m.end() :] for line, m in zip(old_lines, matches, strict=True) if m]
        cut_new = [line[m.end() :] for line, m in zip(new_lines, theirs, strict=True) if m]
        found += _with_or_without_a_space(cut_old, cut_new, old, new, name)
    for box in _BOXES:
        if all(line.startswith(box) for line in old_lines + new_lines):
            cut_old = [line[1:] for line in old_lines]
            cut_new = [line[1:] for line in new_lines]
            found += _with_or_without_a_space(cut_old, cut_new, old, new, f"box glyphs ('{box} ')")
    if (
        all(line[:1] in ("", " ", "-") for line in old_lines)
        and all(line[:1] in ("", " ", "+") for line in new_lines)
        and any(line[:1] in ("-", "+") for line in old_lines + new_lines)
        and _context(old_lines) == _context(new_lines)
    ):
        cut_old = [line[1:] for line in old_lines]
        cut_new = [line[1:] for line in new_lines]
        found.append(
            Reading(_joined(cut_old, old), _joined(cut_new, new), "diff markers (' ', '-', '+')")
        )
    return found


def _context(lines: list[str]) -> list[str]:
    """A diff's context lines: the same, in the same order, on both sides of a hunk (a
    list whose items start with '-' and whose other lines are indented is not a diff)."""
    return [line[1:] for line in lines if line[:1] in ("", " ")]


def _with_or_without_a_space(
    old_lines: list[str], new_lines: list[str], old: str, new: str, name: str
) -> list[Reading]:
    """The lines as cut, and without the one space the view put after its prefix when
    every line that has text has it (which one was meant is for the file to say)."""
    out = [Reading(_joined(old_lines, old), _joined(new_lines, new), name)]
    texts = [line for line in old_lines + new_lines if line]
    if texts and all(line.startswith(" ") for line in texts):
        out.append(
            Reading(
                _joined([line[1:] for line in old_lines], old),
                _joined([line[1:] for line in new_lines], new),
                name,
            )
        )
    return out
