"""Adapting the replacement to a tolerant match: a three-way merge.

Base is old_string, "ours" is the matched text of the file, "theirs" is
new_string. Where new_string leaves old_string unchanged the file's text is
kept (its indentation, punctuation, a line that drifted since it was read);
only what the edit changes is written. For the fuzzy tiers, an edit that
changes a line which also changed in the file is a conflict and is refused —
unless the two versions of that line differ only by whitespace, punctuation or
a typo-sized slip in a word.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass
from difflib import SequenceMatcher

from rapidfuzz.distance import OSA, Levenshtein

from redline.engine import indent
from redline.engine.fold import Folded, fold_punctuation, fold_whitespace, translate_punctuation
from redline.engine.newlines import LF

Opcode = tuple[str, int, int, int, int]
_TOKEN = re.compile(r"\w+|[^\w\s]")
_CHAR_REFINE_LIMIT = 4000


@dataclass(frozen=True)
class MergeConflict(Exception):
    """The edit changes a line that also changed in the file since it was read."""

    line: int  # 0-based line within old_string
    expected: str
    found: str


def adapt(old: str, new: str, matched: str, match_type: str) -> str:
    """The text that replaces ``matched`` (raises :class:`MergeConflict`)."""
    if match_type == "exact" or matched == old:
        return new
    if match_type == "trailing_newline":
        return new[:-1] if new.endswith(LF) else new
    skip_first = old[:1] not in (" ", "\t")
    mapping = indent.infer(old, matched) if match_type != "punctuation" else None
    base = indent.apply(old, mapping, skip_first)
    theirs = indent.apply(new, mapping, skip_first)
    aligned = _alignment(base, matched, match_type)
    ops = diff_opcodes(base, theirs)
    if match_type in ("fuzzy", "line_fuzzy"):
        repaired, slips = _repair_slips(base, matched, ops, aligned)
        if repaired != base:
            # Lines the edit changes are taken as the file has them, so the
            # edit rewrites them whole instead of interleaving two spellings;
            # a misspelt word copied into new_string takes the file's spelling.
            base = repaired
            for wrong, right in slips:
                theirs = re.sub(rf"\b{re.escape(wrong)}\b", right, theirs)
            aligned = _alignment(base, matched, match_type)
            ops = diff_opcodes(base, theirs)
    return _emit(theirs, matched, ops, aligned)


def diff_opcodes(a: str, b: str) -> list[Opcode]:
    """Character opcodes from ``a`` to ``b``: a line diff refined inside replaced blocks."""
    a_lines = a.splitlines(keepends=True)
    b_lines = b.splitlines(keepends=True)
    a_starts = _starts(a_lines)
    b_starts = _starts(b_lines)
    out: list[Opcode] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, a_lines, b_lines, False).get_opcodes():
        ca1, ca2, cb1, cb2 = a_starts[i1], a_starts[i2], b_starts[j1], b_starts[j2]
        if tag == "replace" and (ca2 - ca1) + (cb2 - cb1) <= _CHAR_REFINE_LIMIT:
            inner = SequenceMatcher(None, a[ca1:ca2], b[cb1:cb2], False).get_opcodes()
            out.extend((t, ca1 + x1, ca1 + x2, cb1 + y1, cb1 + y2) for t, x1, x2, y1, y2 in inner)
        else:
            out.append((tag, ca1, ca2, cb1, cb2))
    return out


def _starts(lines: list[str]) -> list[int]:
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    return starts


class _Alignment:
    """Maps boundaries of old_string to boundaries of the matched text."""

    def __init__(self, old: str, matched: str, pairs: list[tuple[int, int]]) -> None:
        self.old = old
        self.matched = matched
        self.old_index = [o for o, _ in pairs]
        self.file_index = [m for _, m in pairs]

    def boundary(self, i: int) -> int:
        if i <= 0:
            return 0
        if i >= len(self.old):
            return len(self.matched)
        k = bisect_left(self.old_index, i)
        if k < len(self.old_index) and self.old_index[k] == i:
            return self.file_index[k]
        # i falls inside a run of old characters with no counterpart.
        gap_start_old = self.old_index[k - 1] + 1 if k > 0 else 0
        gap_start = self.file_index[k - 1] + 1 if k > 0 else 0
        gap_end = self.file_index[k] if k < len(self.file_index) else len(self.matched)
        if gap_start_old == i:
            return gap_start
        return _gap_position(self.old[gap_start_old:i], self.matched[gap_start:gap_end], gap_start)


def _gap_position(old_part: str, file_gap: str, base: int) -> int:
    """Where a boundary inside an unmatched run of old text falls in the file's run."""
    newlines = old_part.count(LF)
    pos = 0
    for _ in range(newlines):
        nxt = file_gap.find(LF, pos)
        if nxt == -1:
            return base + len(file_gap)
        pos = nxt + 1
    if old_part.endswith(LF):
        return base + pos
    # Mid-line: past the file's indentation on that line.
    while pos < len(file_gap) and file_gap[pos] in " \t":
        pos += 1
    return base + pos


def _alignment(old: str, matched: str, match_type: str) -> _Alignment:
    if match_type in ("punctuation", "whitespace"):
        fold = fold_punctuation if match_type == "punctuation" else fold_whitespace
        a: Folded = fold(old)
        b: Folded = fold(matched)
        if a.text == b.text:
            return _Alignment(old, matched, list(zip(a.origins(), b.origins(), strict=True)))
    pairs: list[tuple[int, int]] = []
    for op in Levenshtein.opcodes(old, matched):
        if op.tag == "equal":
            pairs.extend(
                zip(range(op.src_start, op.src_end), range(op.dest_start, op.dest_end), strict=True)
            )
    return _Alignment(old, matched, pairs)


def _emit(theirs: str, matched: str, ops: list[Opcode], aligned: _Alignment) -> str:
    out: list[str] = []
    for tag, i1, i2, j1, j2 in ops:
        if tag == "equal":
            out.append(matched[aligned.boundary(i1) : aligned.boundary(i2)])
        else:
            out.append(theirs[j1:j2])
    return "".join(out)


def _repair_slips(
    base: str, matched: str, ops: list[Opcode], aligned: _Alignment
) -> tuple[str, set[tuple[str, str]]]:
    """old_string with each line the edit touches replaced by the file's version.

    Raises :class:`MergeConflict` when such a line differs from the file's in
    more than whitespace, punctuation or a slip of the pen.
    """
    starts = _starts(base.splitlines(keepends=True))
    touched: set[int] = set()
    for tag, i1, i2, _j1, _j2 in ops:
        if tag == "equal":
            continue
        first = bisect_left(starts, i1 + 1) - 1
        if i1 == i2:
            if i1 in starts:  # inserted between lines: touches none
                continue
            touched.add(first)
        else:
            last = bisect_left(starts, i2) - 1
            touched.update(range(first, last + 1))
    pieces = base.splitlines(keepends=True)
    slips: set[tuple[str, str]] = set()
    for line in sorted(touched):
        if line >= len(pieces):
            continue
        lo, hi = starts[line], starts[line + 1]
        expected = base[lo:hi].rstrip(LF)
        found = matched[aligned.boundary(lo) : aligned.boundary(hi)].rstrip(LF)
        line_slips = slips_between(expected, found)
        if line_slips is None:
            raise MergeConflict(line, expected, found)
        slips.update(line_slips)
        if LF not in found:
            pieces[line] = found + pieces[line][len(expected) :]
    return "".join(pieces), slips


def slips_between(expected: str, found: str) -> list[tuple[str, str]] | None:
    """The misspelt words of two versions of a line, or None if they really differ.

    Differences in whitespace and punctuation are tolerated; so is a word
    with a slip of one or two characters. Anything else is a real change.
    """
    if "".join(expected.split()) == "".join(found.split()):
        return []
    a = _TOKEN.findall(translate_punctuation(expected))
    b = _TOKEN.findall(translate_punctuation(found))
    slips: list[tuple[str, str]] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, a, b, False).get_opcodes():
        if tag == "equal":
            continue
        if tag != "replace" or i2 - i1 != j2 - j1:
            return None
        for x, y in zip(a[i1:i2], b[j1:j2], strict=True):
            if not _typo(x, y):
                return None
            slips.append((x, y))
    return slips


def _typo(a: str, b: str) -> bool:
    """A slip of one or two letters in a word; never a changed number or digit."""
    if not (a.isidentifier() and b.isidentifier()):
        return False
    if [c for c in a if c.isdigit()] != [c for c in b if c.isdigit()]:
        return False
    if min(len(a), len(b)) < 4:
        return False
    limit = 1 if max(len(a), len(b)) <= 8 else 2
    return bool(OSA.distance(a, b) <= limit)
