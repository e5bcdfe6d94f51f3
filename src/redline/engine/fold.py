"""Folded views of text for the tolerant tiers, with a map back to the original.

A fold is a 1:1 character translation followed by deletions, applied in
stages: the punctuation fold first drops invisible characters and orphan
combining marks, then optional spaces, so that ``foo\u200b bar`` folds like
``foo bar`` (old_string arrives already cleaned of invisible characters). Both
the file and old_string are folded the same way; a match in the folded file is
mapped back to a span of the original through the deleted positions.
"""

from __future__ import annotations

import re
import sys
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import Any

_PUNCTUATION_TABLE: dict[int, str] = {
    **{ord(c): "'" for c in "‘’‚‛′‵"},
    **{ord(c): '"' for c in "“”„‟″‶«»"},
    **{ord(c): "-" for c in "‐‑‒–—―−"},
    # Full-width ASCII variants (，；：．！？（） and the rest) to their ASCII twins.
    **{cp: chr(cp - 0xFEE0) for cp in range(0xFF01, 0xFF5F)},
    0x3000: " ",  # ideographic space
    0x00A0: " ",  # no-break space
    # CJK punctuation with one obvious ASCII twin (and its half-width forms).
    0x3001: ",",  # 、 ideographic comma
    0xFF64: ",",  # ､ half-width ideographic comma
    0x3002: ".",  # 。 ideographic full stop
    0xFF61: ".",  # ｡ half-width ideographic full stop
    **{ord(c): '"' for c in "「」｢｣"},  # corner brackets: quotation marks
    **{ord(c): "'" for c in "『』"},  # white corner brackets: quotes inside quotes
    0x3010: "[",  # 【 black lenticular bracket
    0x3011: "]",  # 】
}

_COMBINING = "\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
_INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff\u00ad"
# One optional space after , ; : . ! ? (, before ), or between two word
# characters. Written to start with a literal space so that re scans fast.
_OPTIONAL_SPACE = r" (?:(?<=[,;:.!?(] )(?=\S)|(?<=\S )(?=\))|(?<=\w )(?=\w))"
_SPACE_DELETIONS = re.compile(_OPTIONAL_SPACE)
_INVISIBLE_DELETIONS = re.compile(
    rf"[{_INVISIBLE}]"  # invisible characters in the file
    # combining marks with no visible base: at a line start, after whitespace or
    # after an invisible character (as invisible.clean removes them)
    + rf"|(?:(?<=[\s{_INVISIBLE}])|^)[{_COMBINING}]+",
    re.MULTILINE,
)
_INVISIBLE_OR_MARK = re.compile(rf"[{_INVISIBLE}{_COMBINING}]")
_ASCII_STAGES = (_SPACE_DELETIONS,)
_PUNCTUATION_STAGES = (_INVISIBLE_DELETIONS, _SPACE_DELETIONS)
_WHITESPACE = re.compile(r"\s+")
# Above this size, positions are mapped back without building the whole shift table.
_LARGE = 4096
_LAST_SPACE = 0x3000  # no character above U+3000 is whitespace
_PIECE = 1 << 16  # characters folded in one call (see _pieces)
_CUT = re.compile(r"\n|[A-Za-z0-9](?=[A-Za-z0-9])")


@dataclass
class Folded:
    """A folded text; :meth:`span` maps a folded span back to the original."""

    original: str
    source: str  # the original after the 1:1 translation; deletions apply to it
    text: str
    _stages: tuple[re.Pattern[str], ...]  # deletions, each applied to the previous result
    kind: str = "punctuation"
    _shifts: list[int] | None = field(default=None, repr=False)
    _index: Any = field(default=None, repr=False)  # numpy: kept positions or line starts
    # The source index of the last line mapped on its own, and that line's shift table.
    _line: tuple[int, list[int]] | None = field(default=None, repr=False)

    def _shift_table(self) -> list[int]:
        # Entry m is the folded position at which the m-th deleted character was.
        if self._shifts is None:
            deleted: list[int] = []  # source indices of the deleted characters, ascending
            stage = self.source
            for n, pattern in enumerate(self._stages):
                if n:
                    stage = self._stages[n - 1].sub("", stage)
                # Position p of this stage is source index p + bisect_right(shifts, p).
                shifts = [d - m for m, d in enumerate(deleted)]
                found = [
                    pos + bisect_right(shifts, pos)
                    for m in pattern.finditer(stage)
                    for pos in range(m.start(), m.end())
                ]
                deleted = sorted(deleted + found) if deleted else found
            self._shifts = [d - m for m, d in enumerate(deleted)]
        return self._shifts

    def origin(self, j: int) -> int:
        """The original index of the folded character at ``j``."""
        if len(self.source) > _LARGE and self._shifts is None:
            return self._origin_large(j)
        return j + bisect_right(self._shift_table(), j)

    def _origin_large(self, j: int) -> int:
        import numpy as np  # only for large texts

        if self._index is None:
            codes = np.frombuffer(self.source.encode(_UTF32), dtype=np.uint32)
            if self.kind == "whitespace":
                # Whitespace folding deletes every space: position j is the j-th kept one.
                spaces = _space_table()[np.minimum(codes, _LAST_SPACE)] & (codes <= _LAST_SPACE)
                self._index = np.flatnonzero(~spaces)
            else:
                # Punctuation folding keeps every newline: map within the line.
                self._index = np.flatnonzero(codes == ord("\n"))
        if self.kind == "whitespace":
            return int(self._index[j])
        line = self.text.count("\n", 0, j)
        column = j - (self.text.rfind("\n", 0, j) + 1)
        start = int(self._index[line - 1]) + 1 if line else 0
        return start + self._line_origin(start, column)

    def _line_origin(self, start: int, column: int) -> int:
        # No deletion looks across a newline, so the line starting at source index
        # ``start`` folds on its own; its shift table (kept for the next call, as a
        # span maps two positions of one line) maps a column back. The piece is
        # never mapped through origin(), which could come back here for a long line.
        if self._line is None or self._line[0] != start:
            end = self.source.find("\n", start)
            if end < 0:  # the last line, without a newline
                end = len(self.source)
            piece = Folded(self.original[start:end], self.source[start:end], "", self._stages)
            self._line = (start, piece._shift_table())
        return column + bisect_right(self._line[1], column)

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
    source = "".join(piece.translate(_PUNCTUATION_TABLE) for piece in _pieces(text))
    # Most files hold no invisible character or combining mark: skip that stage.
    plain = source.isascii() or _INVISIBLE_OR_MARK.search(source) is None
    stages = _ASCII_STAGES if plain else _PUNCTUATION_STAGES
    return Folded(text, source, _delete(source, stages), stages)


def fold_whitespace(text: str, compact: str | None = None) -> Folded:
    """``text`` with every whitespace character removed. ``compact``: the text's
    :func:`compact_lines`, when made already: the fold is it without its newlines
    (one pass over a shorter text instead of another over the whole one)."""
    folded = without_spaces(text) if compact is None else compact.replace("\n", "")
    return Folded(text, text, folded, (_WHITESPACE,), "whitespace")


# The ASCII characters re's \s and str.isspace() take for whitespace (the same set).
_ASCII_SPACES = b" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"
_ASCII_SPACES_BUT_NEWLINE = _ASCII_SPACES.replace(b"\n", b"")


def without_spaces(text: str) -> str:
    """``text`` with every whitespace character removed (``re.sub(r"\\s+", "", text)``).

    An ASCII text, as most source files are, is stripped byte-wise in one pass:
    a whole-file fold of a 100,000-line file took a tenth of a second by regex.
    Another text is stripped a piece at a time, its ASCII pieces byte-wise.
    """
    if text.isascii():
        return text.encode("ascii").translate(None, _ASCII_SPACES).decode("ascii")
    return "".join(
        _ascii_without(piece, _ASCII_SPACES) if piece.isascii() else "".join(piece.split())
        for piece in _pieces(text)
    )


# Stands for a newline while str.split() takes a line's other whitespace out (a
# private-use character; a text that holds it is compacted otherwise).
_NEWLINE_STAND_IN = "\ue000"


def compact_lines(text: str) -> str | None:
    """``text`` with the whitespace of each line removed and its punctuation folded
    1:1, its newlines kept: line by line what :func:`compact_key` gives, in one pass.
    None for a text holding an invisible character or a combining mark (whose
    deletions depend on their neighbours: such a text is folded whole), or U+E000.

    An ASCII text is stripped byte-wise, another a piece at a time (its ASCII pieces
    byte-wise): a file with a few typographic marks costs about what an ASCII one does.
    """
    if text.isascii():
        return _ascii_without(text, _ASCII_SPACES_BUT_NEWLINE)
    out = []
    for piece in _pieces(text):
        if piece.isascii():  # nothing to fold 1:1 in it
            out.append(_ascii_without(piece, _ASCII_SPACES_BUT_NEWLINE))
            continue
        if _NEWLINE_STAND_IN in piece or _INVISIBLE_OR_MARK.search(piece):
            return None
        lines = "".join(piece.replace("\n", _NEWLINE_STAND_IN).split())
        out.append(lines.replace(_NEWLINE_STAND_IN, "\n").translate(_PUNCTUATION_TABLE))
    return "".join(out)


def _ascii_without(text: str, spaces: bytes) -> str:
    return text.encode("ascii").translate(None, spaces).decode("ascii")


_UTF32 = "utf-32-le" if sys.byteorder == "little" else "utf-32-be"


@cache
def _space_table() -> Any:
    """``table[c]``: whether code point ``c`` (≤ U+3000) is whitespace to ``re``'s ``\\s``."""
    import numpy as np

    return np.array([chr(c).isspace() for c in range(_LAST_SPACE + 1)], dtype=np.bool_)


def translate_punctuation(text: str) -> str:
    """``text`` with quotes, dashes and full-width punctuation folded 1:1 (no deletions)."""
    return text.translate(_PUNCTUATION_TABLE)


def compact_key(text: str) -> str:
    """``text`` with punctuation folded and every space gone: what it says, not its layout."""
    return "".join(punctuation_key(text).split())


def punctuation_key(text: str) -> str:
    """The punctuation-folded form of ``text`` (no map back)."""
    return _delete(text.translate(_PUNCTUATION_TABLE), _PUNCTUATION_STAGES)


def _delete(text: str, stages: tuple[re.Pattern[str], ...]) -> str:
    return "".join(_delete_piece(piece, stages) for piece in _pieces(text))


def _delete_piece(text: str, stages: tuple[re.Pattern[str], ...]) -> str:
    for pattern in stages:
        text = pattern.sub("", text)
    return text


def _pieces(text: str) -> Iterator[str]:
    """``text`` cut into pieces of about :data:`_PIECE` characters, each folded on its own.

    A long text is not folded in one call, which would hold the GIL (and stall
    the daemon's other threads) for its whole length. The cuts fall after a
    newline, or inside a long line between two ASCII letters or digits: no
    deletion looks across either (deletions are spaces, invisible characters
    and marks, judged by their neighbours), so the pieces fold to the same text.
    """
    if len(text) <= _PIECE:
        yield text
        return
    start = 0
    while start < len(text):
        cut = _CUT.search(text, start + _PIECE)
        end = len(text) if cut is None else cut.end()
        yield text[start:end]
        start = end
