"""Indentation: infer how the file indents what old_string indents, and apply it.

A tolerant match may find old_string's lines indented differently in the file
(re-indented by a constant, or tabs where the model wrote spaces). The same
mapping is applied to old_string and new_string before merging, so lines the
edit adds get the file's indentation too.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from difflib import SequenceMatcher

_INDENT = re.compile(r"[ \t]*")
Reindent = Callable[[str], str]


def indentation(line: str) -> str:
    match = _INDENT.match(line)
    return match.group(0) if match else ""


def infer(old: str, matched: str) -> Reindent | None:
    """A function mapping old_string's indentation to the file's, or None if unneeded."""
    pairs = _paired_indents(old, matched)
    if not pairs or all(o == m for o, m in pairs):
        return None
    for model in (_same_character, _spaces_to_tabs, _tabs_to_spaces):
        mapping = model(pairs)
        if mapping is not None:
            return mapping
    return None


def apply(text: str, mapping: Reindent | None, skip_first: bool) -> str:
    """Re-indent every line of ``text`` (the first only when it starts a line)."""
    if mapping is None:
        return text
    lines = text.split("\n")
    out = []
    for i, line in enumerate(lines):
        if (i == 0 and skip_first) or not line.strip():
            out.append(line)
            continue
        ind = indentation(line)
        out.append(mapping(ind) + line[len(ind) :])
    return "\n".join(out)


def _paired_indents(old: str, matched: str) -> list[tuple[str, str]]:
    old_lines = old.split("\n")
    file_lines = matched.split("\n")
    matcher = SequenceMatcher(
        None, [line.strip() for line in old_lines], [line.strip() for line in file_lines], False
    )
    pairs: list[tuple[str, str]] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag not in ("equal", "replace"):
            continue
        for i, j in zip(range(i1, i2), range(j1, j2), strict=False):
            # The first line may start mid-line on either side; use it only when
            # both start with indentation.
            first = i == 0 or j == 0
            if first and not (old_lines[i][:1] in " \t" and file_lines[j][:1] in " \t"):
                continue
            if old_lines[i].strip() and file_lines[j].strip():
                pairs.append((indentation(old_lines[i]), indentation(file_lines[j])))
    return pairs


def _uniform(indent: str, char: str) -> bool:
    return indent == char * len(indent)


def _same_character(pairs: list[tuple[str, str]]) -> Reindent | None:
    for char in (" ", "\t"):
        if all(_uniform(o, char) and _uniform(m, char) for o, m in pairs):
            deltas = {len(m) - len(o) for o, m in pairs}
            if len(deltas) == 1:
                delta = deltas.pop()

                def mapping(ind: str, c: str = char, d: int = delta) -> str:
                    return c * max(0, len(ind) + d) if _uniform(ind, c) else ind

                return mapping
    return None


def _spaces_to_tabs(pairs: list[tuple[str, str]]) -> Reindent | None:
    if not all(_uniform(o, " ") and _uniform(m, "\t") for o, m in pairs):
        return None
    for unit in (4, 2, 8, 3):
        deltas = {len(m) - len(o) // unit for o, m in pairs if len(o) % unit == 0}
        if len(deltas) == 1 and all(len(o) % unit == 0 for o, _ in pairs):
            delta = deltas.pop()

            def mapping(ind: str, u: int = unit, d: int = delta) -> str:
                width = len(ind.expandtabs(u))
                return "\t" * max(0, width // u + d) + " " * (width % u)

            return mapping
    return None


def _tabs_to_spaces(pairs: list[tuple[str, str]]) -> Reindent | None:
    if not all(_uniform(o, "\t") and _uniform(m, " ") for o, m in pairs):
        return None
    for unit in (4, 2, 8, 3):
        deltas = {len(m) - len(o) * unit for o, m in pairs}
        if len(deltas) == 1:
            delta = deltas.pop()

            def mapping(ind: str, u: int = unit, d: int = delta) -> str:
                return " " * max(0, len(ind.expandtabs(u)) + d)

            return mapping
    return None
