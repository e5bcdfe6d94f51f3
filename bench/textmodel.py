"""A file as lines plus per-line endings, and small text helpers for the corpus.

Expected results are built on this model by position: a case replaces lines
``[i, j)`` of the original file with the lines the edit should leave there, and
:meth:`Doc.replace_block` keeps every other byte of the file as it was.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

LF = "\n"
CRLF = "\r\n"
_LINE = re.compile(r"[^\n]*?(?:\r\n|\n)|[^\n]+$")

# Folding used only to check that a block is unique in its file under every
# tolerant view (quotes, full-width punctuation, whitespace).
_LOOSE_TABLE: dict[int, str] = {
    **{ord(c): "'" for c in "‘’"},
    **{ord(c): '"' for c in "“”"},
    **{cp: chr(cp - 0xFEE0) for cp in range(0xFF01, 0xFF5F)},
    0x3001: ",",
}
_SPACE = re.compile(r"\s+")


def loose_key(text: str) -> str:
    """``text`` with quotes/full-width punctuation folded and all whitespace removed."""
    return _SPACE.sub("", text.translate(_LOOSE_TABLE))


def indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def reindent(line: str, delta: int) -> str:
    """Add (``delta`` > 0) or remove leading spaces; blank lines stay blank."""
    if not line.strip():
        return line
    if delta >= 0:
        return " " * delta + line
    if not line.startswith(" " * -delta):
        raise ValueError("line is not indented enough")
    return line[-delta:]


def tabify(line: str, width: int = 4) -> str:
    """Leading runs of ``width`` spaces become tabs (alignment remainder kept as spaces)."""
    ind = indent_of(line)
    if "\t" in ind:
        return line
    tabs, rest = divmod(len(ind), width)
    return "\t" * tabs + " " * rest + line[len(ind) :]


def untabify(line: str, width: int = 4) -> str:
    ind = indent_of(line)
    return ind.replace("\t", " " * width) + line[len(ind) :]


@dataclass
class Doc:
    """Lines without their terminators, and each line's terminator ("" for none)."""

    lines: list[str]
    ends: list[str]
    string_rows: frozenset[int] | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_text(cls, text: str) -> Doc:
        lines: list[str] = []
        ends: list[str] = []
        for m in _LINE.finditer(text):
            chunk = m.group(0)
            end = CRLF if chunk.endswith(CRLF) else LF if chunk.endswith(LF) else ""
            lines.append(chunk[: len(chunk) - len(end)])
            ends.append(end)
        return cls(lines, ends)

    def copy(self) -> Doc:
        return Doc(list(self.lines), list(self.ends))

    def text(self) -> str:
        return "".join(line + end for line, end in zip(self.lines, self.ends, strict=True))

    def encode(self) -> bytes:
        return self.text().encode("utf-8")

    def block(self, i: int, j: int) -> list[str]:
        return self.lines[i:j]

    def uniform_ends(self, i: int, j: int) -> bool:
        """Every line of ``[i, j)`` ends the same way (the block's last line included)."""
        return len(set(self.ends[i:j])) == 1

    def replace_block(self, i: int, j: int, new_lines: list[str]) -> Doc:
        """Lines ``[i, j)`` replaced, from the start of line i to the end of line j-1's text.

        The newline after line j-1 is outside the span and kept. Newlines inside
        the new block take the original block's inner newlines in order; extra
        ones repeat the last inner newline (or the block's final newline).
        """
        inner = self.ends[i : j - 1]
        final = self.ends[j - 1]
        fill = inner[-1] if inner else (final or LF)
        want = max(len(new_lines) - 1, 0)
        new_inner = inner[:want] + [fill] * max(0, want - len(inner))
        if new_lines:
            new_ends = [*new_inner, final]
            lines = self.lines[:i] + new_lines + self.lines[j:]
            ends = self.ends[:i] + new_ends + self.ends[j:]
        else:  # the block's text removed; its final newline stays
            lines = [*self.lines[:i], "", *self.lines[j:]]
            ends = [*self.ends[:i], final, *self.ends[j:]]
        return Doc(lines, ends)

    def insert_lines(self, at: int, new_lines: list[str], end: str = LF) -> Doc:
        lines = self.lines[:at] + new_lines + self.lines[at:]
        ends = self.ends[:at] + [end] * len(new_lines) + self.ends[at:]
        return Doc(lines, ends)

    def delete_lines(self, i: int, j: int) -> Doc:
        return Doc(self.lines[:i] + self.lines[j:], self.ends[:i] + self.ends[j:])


def with_endings(doc: Doc, ending: str) -> Doc:
    return Doc(list(doc.lines), [ending if e else "" for e in doc.ends])
