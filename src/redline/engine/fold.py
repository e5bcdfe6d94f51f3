"""Folded views of text for the tolerant tiers, with a map back to the original.

A fold is a 1:1 character translation followed by deletions. Both the file and
old_string are folded the same way; a match in the folded file is mapped back
to a span of the original through the deleted positions.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field

_PUNCTUATION_TABLE: dict[int, str] = {
    **{ord(c): "'" for c in "‘’‚‛′‵"},
    **{ord(c): '"' for c in "“”„‟″‶«»"},
    **{ord(c): "-" for c in "‐‑‒–—―−"},
    # Full-width ASCII variants (，；：．！？（） and the rest) to their ASCII twins.
    **{cp: chr(cp - 0xFEE0) for cp in range(0xFF01, 0xFF5F)},
    0x3000: " ",  # ideographic space
    0x00A0: " ",  # no-break space
    0x3001: ",",  # ideographic comma
}

_COMBINING = "\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
_INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff\u00ad"
# One optional space after , ; : . ! ? (, before ), or between two word
# characters. Written to start with a literal space so that re scans fast.
_OPTIONAL_SPACE = r" (?:(?<=[,;:.!?(] )(?=\S)|(?<=\S )(?=\))|(?<=\w )(?=\w))"
_ASCII_DELETIONS = re.compile(_OPTIONAL_SPACE)
_PUNCTUATION_DELETIONS = re.compile(
    _OPTIONAL_SPACE
    + rf"|[{_INVISIBLE}]"  # invisible characters in the file
    + rf"|(?:(?<=\s)|^)[{_COMBINING}]+",  # combining marks with no visible base
    re.MULTILINE,
)
_WHITESPACE = re.compile(r"\s+")


@dataclass
class Folded:
    """A folded text; :meth:`span` maps a folded span back to the original."""

    original: str
    source: str  # the original after the 1:1 translation; deletions apply to it
    text: str
    _pattern: re.Pattern[str]
    _shifts: list[int] | None = field(default=None, repr=False)

    def _shift_table(self) -> list[int]:
        # Entry m is the folded position at which the m-th deleted character was.
        if self._shifts is None:
            shifts: list[int] = []
            deleted = 0
            for m in self._pattern.finditer(self.source):
                for pos in range(m.start(), m.end()):
                    shifts.append(pos - deleted)
                    deleted += 1
            self._shifts = shifts
        return self._shifts

    def origin(self, j: int) -> int:
        """The original index of the folded character at ``j``."""
        return j + bisect_right(self._shift_table(), j)

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The original span covering folded ``[start, end)`` (end > start)."""
        return self.origin(start), self.origin(end - 1) + 1

    def origins(self) -> list[int]:
        """The original index of every folded character, in order."""
        table = self._shift_table()
        out: list[int] = []
        k = 0
        for j in range(len(self.text)):
            while k < len(table) and table[k] <= j:
                k += 1
            out.append(j + k)
        return out


def fold_punctuation(text: str) -> Folded:
    source = text.translate(_PUNCTUATION_TABLE)
    pattern = _ASCII_DELETIONS if source.isascii() else _PUNCTUATION_DELETIONS
    return Folded(text, source, pattern.sub("", source), pattern)


def fold_whitespace(text: str) -> Folded:
    return Folded(text, text, _WHITESPACE.sub("", text), _WHITESPACE)


def punctuation_key(text: str) -> str:
    """The punctuation-folded form of ``text`` (no map back)."""
    return _PUNCTUATION_DELETIONS.sub("", text.translate(_PUNCTUATION_TABLE))
