"""Adapting the replacement to a tolerant match: a three-way merge by lines.

Base is old_string, "ours" is the matched text of the file, "theirs" is
new_string. The rule: **where new_string leaves old_string unchanged, the file's
text is kept; only what the edit changes is written**, and nothing is guessed.

1. The lines of old_string are paired with the lines of the file (by their
   text with whitespace and punctuation folded away). Each pair is the same
   line with another format, the same line with a slip of the pen, or a line
   that drifted (really differs). The fuzzy tiers absorb at most one drifted
   line, never the first or last one (the window may have slid onto a
   neighbour): more real difference means the match is another block.
2. The line diff old_string → new_string says which lines the edit changes.
   Lines it leaves alone are written as the file has them.
3. A changed line that had a partner is merged field by field: indentation,
   text and trailing whitespace each come from the file where the edit leaves
   them alone. Text that both the file and the edit changed is merged token
   by token; two different changes to one token are a conflict.
4. Inserted text takes the file's format: indentation through a mapping of
   depth learnt from the paired lines (:mod:`redline.engine.indent`), and a
   token the file writes otherwise (``"`` for ``“``, a misspelt name) only when
   every occurrence in the block (a quote: every opening, or every closing
   one) maps the same way; a token mapped two ways (a name renamed in one
   line only, a file mixing hyphens and dashes) is a conflict.

Every refusal is a :class:`MergeConflict` (the edit touches text that differs
in the file) or :class:`TooDifferent` (the block is not the one old_string
quotes).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Container, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from enum import Enum

from redline.engine import indent
from redline.engine.errors import MergeConflict, TooDifferent
from redline.engine.fold import compact_key, translate_punctuation
from redline.engine.match_types import SIMILARITY
from redline.engine.newlines import LF
from redline.engine.similarity import ratio
from redline.engine.slips import (
    marks_changed,
    marks_left_out,
    punctuation_slip,
    slips_between,
)
from redline.engine.tokens import TOKEN, TokenMap, merge_tokens

_PAIRABLE = 0.5  # lines less similar than this are not the same line edited
_REWRITE = 0.75  # a changed line less similar than this to its old version is rewritten
_FUZZY = SIMILARITY
_WORD = re.compile(r"\w")


class Kind(Enum):
    SAME = "same"
    FORMAT = "format"  # whitespace or punctuation differs
    SLIP = "slip"  # a slip of the pen: a misspelt word, a dropped or doubled ( ) , :
    DRIFT = "drift"  # really differs


@dataclass(frozen=True)
class Seg:
    """One line of a text (or the part of it the span covers), split into fields."""

    indent: str
    body: str
    trail: str
    full_start: bool  # begins at the start of a line (so ``indent`` is indentation)

    @property
    def text(self) -> str:
        return self.indent + self.body + self.trail

    @property
    def blank(self) -> bool:
        return not self.body


def split(text: str, line_start: bool, line_end: bool) -> list[Seg]:
    """``text`` as segments between newlines; the first/last may be partial lines."""
    parts = text.split(LF)
    segs = []
    for k, part in enumerate(parts):
        full_start = k > 0 or line_start
        full_end = k < len(parts) - 1 or line_end
        if full_start and not part.strip(" \t"):
            segs.append(Seg(part, "", "", True))
            continue
        lead = indent.indentation(part) if full_start else ""
        rest = part[len(lead) :]
        body = rest.rstrip(" \t") if full_end else rest
        segs.append(Seg(lead, body, rest[len(body) :], full_start))
    return segs


def _key(seg: Seg) -> str:
    return compact_key(seg.body)


def adapt(
    old: str,
    new: str,
    matched: str,
    match_type: str,
    *,
    line_start: bool | None = None,
    line_end: bool = True,
    style: indent.StyleOf | None = None,
    file_chars: Container[str] = frozenset(),
) -> str:
    """The text that replaces ``matched`` (raises :class:`MergeConflict`, :class:`TooDifferent`).

    ``line_start``: the match begins at the start of a line of the file (by
    default: when old_string begins with indentation). ``line_end``: it ends at
    the end of a line. ``style``: how the whole file indents, asked for only when the
    match's own lines do not tell how to indent (see :func:`indent.fit`). ``file_chars``:
    the characters the whole file contains (which marks it uses as they are).
    """
    if match_type == "exact" or matched == old:
        return new
    if match_type == "trailing_newline":
        return new[:-1] if new.endswith(LF) else new
    if line_start is None:
        line_start = old[:1] in (" ", "\t")
    if old.endswith(LF) and not matched.endswith(LF):
        # The file's last line, without its newline: merge as if it had one, and
        # leave the file without it.
        merged = adapt(old, new, matched + LF, match_type, line_start=line_start, style=style,
                       file_chars=file_chars)  # fmt: skip
        return merged[:-1] if merged.endswith(LF) else merged
    return _Merge(old, new, matched, match_type, line_start, line_end, style, file_chars).run()


@dataclass
class Unit:
    """A step of the old_string ↔ file alignment: a pair, or a line on one side only."""

    old: int | None
    file: int | None
    kind: Kind = Kind.DRIFT


@dataclass
class _Merge:
    old_text: str
    new_text: str
    matched: str
    match_type: str
    line_start: bool
    line_end: bool
    style: indent.StyleOf | None
    file_chars: Container[str]
    units: list[Unit] = field(default_factory=list)
    _line_sources: dict[int, list[str | None]] | None = None

    def run(self) -> str:
        self.base = split(self.old_text, self.line_start, self.line_end)
        self.ours = split(self.matched, self.line_start, self.line_end)
        self.theirs = split(self.new_text, self.line_start, self.line_end)
        self.units = self._align()
        self._check_drift()
        self.partner = {u.old: u for u in self.units if u.old is not None}
        # The line diff old_string → new_string: which lines the edit changes.
        self.ops = _line_ops(self.base, self.theirs)
        kept = {i for tag, i1, i2, _, _ in self.ops if tag == "equal" for i in range(i1, i2)}
        # new_string's lines that keep an old_string line: new index → old index.
        self.kept_new = {
            j: i
            for tag, i1, i2, j1, _ in self.ops
            if tag == "equal"
            for i, j in zip(range(i1, i2), range(j1, j1 + i2 - i1), strict=True)
        }
        self._check_sliding()
        self.tokens = TokenMap(
            [(self.base[i].body, self.ours[j].body, i in kept) for i, j in self._trusted_pairs()],
            self.file_chars,
        )
        self.reindent = self._fit_indentation()
        self.extra_trailing = self._trailing_model()
        self.copies = self._copies()
        return LF.join(self._emit())

    # -- alignment ---------------------------------------------------------------

    def _align(self) -> list[Unit]:
        return align(self.base, self.ours, self.line_start)

    def _check_drift(self) -> None:
        if self.match_type not in _FUZZY:
            return
        drifted = sum(1 for u in self.units if u.kind is Kind.DRIFT)
        quoted = [i for i, seg in enumerate(self.base) if not seg.blank]
        if drifted > 1 or (drifted and drifted >= len(quoted)):
            raise TooDifferent(drifted)  # another block, not this one with a changed line
        # The window's edges are where it may have slid: a first or last line that
        # really differs, or that the file lacks, is a neighbour, not a drifted line.
        edges = {quoted[0], quoted[-1]} if quoted else set()
        if any(u.old in edges and u.kind is Kind.DRIFT for u in self.units):
            raise TooDifferent(drifted)

    def _check_sliding(self) -> None:
        """Lines the edit removes or rewrites next to a line it keeps that old_string
        writes alike (``}`` and ``}`` of a flat quote): the line diff could as well
        keep the other one. When the file writes the two otherwise (at two depths),
        which one the edit keeps is a guess."""
        kept = {i for tag, i1, i2, _, _ in self.ops if tag == "equal" for i in range(i1, i2)}
        for tag, i1, i2, _, _ in self.ops:
            if tag == "equal" or i1 == i2:
                continue
            for changed, beside in ((i1, i2), (i2 - 1, i1 - 1)):
                if beside not in kept or self.base[changed].text != self.base[beside].text:
                    continue
                if self._file_text(changed) != self._file_text(beside):
                    raise MergeConflict(
                        changed,
                        self.base[changed].text,
                        "",
                        "old_string writes two lines alike that the file writes otherwise, "
                        "and the edit keeps one of them: which one is a guess",
                    )

    def _file_text(self, i: int) -> str | None:
        unit = self.partner.get(i)
        return None if unit is None or unit.file is None else self.ours[unit.file].text

    def _trusted_pairs(self) -> list[tuple[int, int]]:
        """(old line, file line) of the pairs that are the same line, give or take format."""
        return [
            (u.old, u.file)
            for u in self.units
            if u.old is not None and u.file is not None and u.kind is not Kind.DRIFT
        ]

    # -- models learnt from the pairs ---------------------------------------------

    def _fit_indentation(self) -> indent.Reindent | None:
        pairs = [
            (self.base[i].indent, self.ours[j].indent)
            for i, j in self._trusted_pairs()
            if self.base[i].full_start and not self.base[i].blank
        ]
        agent = [
            [s.indent + s.body for s in text if s.full_start and not s.blank]
            for text in (self.base, self.theirs)
        ]
        return indent.fit(pairs, agent, self.style or indent.Style)

    def _trailing_model(self) -> str:
        """The trailing whitespace the agent adds to every line the file has, if any."""
        pairs = [
            (self.base[i].trail, self.ours[j].trail)
            for i, j in self._trusted_pairs()
            if not self.base[i].blank and self.base[i].trail
        ]
        extra = {b[len(f) :] if b.startswith(f) else None for b, f in pairs}
        every = [i for i, _ in self._trusted_pairs() if not self.base[i].blank]
        if len(extra) == 1 and None not in extra and len(pairs) == len(every):
            return extra.pop() or ""
        return ""

    def _trail(self, t: Seg) -> str:
        """``t``'s trailing whitespace less what the agent adds to every line."""
        extra = self.extra_trailing
        return t.trail[: -len(extra)] if extra and t.trail.endswith(extra) else t.trail

    # -- emission ----------------------------------------------------------------

    def _emit(self) -> list[str]:
        out: list[str] = []
        # Lines only the file has, by the number of old_string lines before them.
        file_only: dict[int, list[int]] = defaultdict(list)
        position = 0
        for unit in self.units:
            if unit.old is not None:
                position = unit.old + 1
            elif unit.file is not None:
                file_only[position].append(unit.file)
        for tag, i1, i2, j1, j2 in self.ops:
            if tag == "equal":
                for i in range(i1, i2):
                    out.extend(self.ours[j].text for j in file_only.pop(i, []))
                    partner = self.partner[i].file
                    if partner is not None:
                        out.append(self.ours[partner].text)
                continue
            self._check_unpaired_beside(i1, i2, j2 - j1)
            # A line only the file has, next to or inside the lines the edit
            # changes: whether the edit covers it is a guess (blank lines aside).
            self._check_file_only(file_only.get(i1, []), i1)
            self._check_file_only(file_only.get(i2, []), i2)
            out.extend(self.ours[j].text for j in file_only.pop(i1, []))
            for i in range(i1 + 1, i2):
                self._check_file_only(file_only.pop(i, []), i)
            out.extend(self._replace(i1, i2, j1, j2))
        out.extend(self.ours[j].text for j in file_only.pop(len(self.base), []))
        return out

    def _check_unpaired_beside(self, i1: int, i2: int, added: int) -> None:
        """Lines the edit writes next to a line of old_string the file does not have:
        where they go, before or after where that line would be, is a guess."""
        if not added:
            return
        for i in (i1 - 1, i2):
            if 0 <= i < len(self.base) and self.partner[i].file is None and not self.base[i].blank:
                raise MergeConflict(
                    i,
                    self.base[i].text,
                    "",
                    "old_string has a line there that the file does not, and the edit "
                    "writes lines next to it",
                )

    def _check_file_only(self, lines: list[int], at: int) -> None:
        for j in lines:
            if not self.ours[j].blank:
                raise MergeConflict(
                    at,
                    "",
                    self.ours[j].text,
                    "the file has a line there that old_string does not, and the edit "
                    "changes the lines around it",
                )

    def _replace(self, i1: int, i2: int, j1: int, j2: int) -> list[str]:
        for i in range(i1, i2):
            unit = self.partner[i]
            if unit.kind is not Kind.DRIFT:
                continue
            if unit.file is None and self.base[i].blank:
                continue
            found = self.ours[unit.file].text if unit.file is not None else ""
            raise MergeConflict(i, self.base[i].text, found)
        pairs = _pair_edited(self.base[i1:i2], self.theirs[j1:j2])
        beside = self._beside(j1, j2)
        reshaped = i2 - i1 != j2 - j1
        # Each line's end, once per region (only a reshaped region asks where ends went).
        old_ends = [_last_token(s.body) for s in self.base[i1:i2]] if reshaped else []
        new_ends = [_last_token(s.body) for s in self.theirs[j1:j2]] if reshaped else []
        out = []
        for k, seg in enumerate(self.theirs[j1:j2]):
            b = pairs.get(k)
            partner = self.partner[i1 + b].file if b is not None else None
            if b is None or partner is None:
                replaces = self._in_place_of(i1, i2, j2 - j1, k)
                out.append(self._insert(seg, j1 + k, replaces, beside))
                continue
            base, ours = self.base[i1 + b], self.ours[partner]
            moved = reshaped and _end_moved(old_ends, b, new_ends, k)
            out.append(self._merge_line(base, ours, seg, i1 + b, reshaped, j1 + k, moved))
        return out

    def _merge_line(
        self,
        b: Seg,
        o: Seg,
        t: Seg,
        line: int,
        reshaped: bool = False,
        at: int | None = None,
        moved: bool = False,
    ) -> str:
        if t.blank:
            return o.text if t.text == b.text else self._blank(t)
        if not t.full_start:
            lead = ""
        elif t.indent == b.indent and not (reshaped and self._no_depth(t.indent)):
            # (Lines reshaped at an indentation the pairs map to no single depth: which
            # old line this one continues says nothing of its depth.)
            lead = o.indent
        else:
            lead = self._map_indent(t, line)
        rewritten = reshaped or (t.body != b.body and ratio(b.body, t.body) < _REWRITE)
        if rewritten and punctuation_slip(b.body, o.body):
            # The agent rewrites a line it quoted with a dropped or doubled mark, or
            # reshapes the lines around it: whether the file's mark belongs in the
            # new text, and where, is a guess.
            raise MergeConflict(line, b.text, o.text)
        if t.body == b.body:
            body = o.body
        else:
            if o.body == b.body:
                body = self.tokens.carry(t.body, line, self._sources(at, t))
            else:
                sources = self._sources(at, t)
                body = merge_tokens(b.body, o.body, t.body, self.tokens, line, sources)
                if body != t.body and _repunctuated(b.body, o.body, t.body):
                    # The merge would add a mark of the file's that the agent left
                    # out to a line whose change adds or removes marks of its own:
                    # whether the agent meant to drop it is a guess.
                    raise MergeConflict(line, b.text, o.text)
        if t.trail == b.trail:
            if moved and o.trail and o.trail != self._trail(b):
                # Lines joined or split: the whitespace ended the quoted line in the
                # file, and the edit's line ends elsewhere (whitespace only the agent
                # wrote, on every line, is another matter: the file's "" is kept).
                raise MergeConflict(
                    line,
                    b.text,
                    o.text,
                    "the file ends this line with whitespace old_string leaves out, and "
                    "the edit joins or splits the line: where that whitespace goes is a guess",
                )
            trail = o.trail
        elif o.trail == b.trail:
            trail = t.trail
        else:
            trail = self._trail(t)
        return lead + body + trail

    def _in_place_of(self, i1: int, i2: int, count: int, k: int) -> tuple[Seg, Seg] | None:
        """The quoted line (and the file's) that new line ``k`` of a region of as many
        lines replaces, line for line."""
        if i2 - i1 != count:
            return None
        partner = self.partner[i1 + k].file
        return None if partner is None else (self.base[i1 + k], self.ours[partner])

    def _beside(self, j1: int, j2: int) -> tuple[str, str] | None:
        """(agent indentation, file indentation) of the kept lines right before and after
        new lines ``j1:j2``, when both exist and agree: the depth of a line inserted
        between them at their indentation, where the pairs map it to no single depth."""
        around = []
        for lines in (range(j1 - 1, -1, -1), range(j2, len(self.theirs))):
            for j in lines:
                if j not in self.kept_new:
                    return None
                if not self.theirs[j].blank:
                    partner = self.partner[self.kept_new[j]].file
                    if partner is None or not self.theirs[j].full_start:
                        return None
                    around.append((self.theirs[j].indent, self.ours[partner].indent))
                    break
            else:
                return None  # nothing on this side says its depth
        before, after = around
        return before if before == after else None

    def _insert(
        self,
        t: Seg,
        line: int,
        replaces: tuple[Seg, Seg] | None = None,
        beside: tuple[str, str] | None = None,
    ) -> str:
        if t.blank:
            return self._blank(t)
        if not t.full_start:
            lead = ""
        elif replaces is not None and t.indent == replaces[0].indent and replaces[1].full_start:
            lead = replaces[1].indent  # rewritten in place at the quoted line's indentation
        else:
            lead = self._map_indent(t, line, beside)
        if replaces is not None and t.trail == replaces[0].trail:
            # A line rewritten in place keeps the file's trailing whitespace there.
            return (
                lead + self.tokens.carry(t.body, line, self._sources(line, t)) + replaces[1].trail
            )
        copied = self.copies.get(t.body)
        if copied is not None and not _marks_unlike(copied.body, t.body):
            # A copy of a line old_string quotes (a duplicated or moved line): the
            # file's text of that line, as the exact request would have copied it —
            # but not the file's typographic marks where the agent typed ASCII ones.
            return lead + copied.body + copied.trail
        return lead + self.tokens.carry(t.body, line, self._sources(line, t)) + self._trail(t)

    def _sources(self, j: int | None, t: Seg) -> list[str | None] | None:
        """Where each token of new_string's line ``j`` (``t``) comes from, in the lines the
        edit changes: None for text the agent adds; for text of old_string it keeps or
        moves (two lines joined), the file's version of a mark there, or "" (see
        :meth:`TokenMap.mapped`). Matched by the token diff of the changed lines, old
        → new. None (every token added) when the line has no mark."""
        toks = TOKEN.findall(t.body)
        if j is None or not any(_mark(tok) for tok in toks):
            return None
        if self._line_sources is None:
            self._line_sources = self._region_sources()
        chars = self._line_sources.get(j)
        if chars is None:
            return None
        start = len(t.indent)
        out = []
        for tok in toks:
            out.append(chars[start])
            start += len(tok)
        return out

    def _region_sources(self) -> dict[int, list[str | None]]:
        """For each character of the lines of new_string the edit changes or adds: None
        where the token diff of its region (old lines → new lines) adds it, else the
        file's version of the mark it is (or "" when it is no mark or the file's
        version is not known)."""
        out: dict[int, list[str | None]] = {}
        for tag, i1, i2, j1, j2 in self.ops:
            if tag == "equal":
                continue
            in_file: dict[int, str] = {}  # offset of a mark in the old lines → the file's
            offset = 0
            for i in range(i1, i2):
                unit = self.partner[i]
                if unit.file is not None and unit.kind is not Kind.DRIFT:
                    for pos, tok in _file_marks(self.base[i].text, self.ours[unit.file].text):
                        in_file[offset + pos] = tok
                offset += len(self.base[i].text) + 1
            old = LF.join(seg.text for seg in self.base[i1:i2])
            chars = _kept_chars(old, LF.join(seg.text for seg in self.theirs[j1:j2]), in_file)
            start = 0
            for j in range(j1, j2):
                width = len(self.theirs[j].text)
                out[j] = chars[start : start + width]
                start += width + 1
        return out

    def _copies(self) -> dict[str, Seg]:
        """The file's version of each quoted line's text, where all agree on it."""
        seen: dict[str, set[tuple[str, str]]] = defaultdict(set)
        for i, j in self._trusted_pairs():
            if not self.base[i].blank and self.base[i].full_start and self.ours[j].full_start:
                seen[self.base[i].body].add((self.ours[j].body, self.ours[j].trail))
        return {
            body: Seg("", *next(iter(files)), True)
            for body, files in seen.items()
            if len(files) == 1
        }

    def _flat_quote(self) -> bool:
        return all(not s.indent for s in self.base if s.full_start and not s.blank)

    def _blank(self, t: Seg) -> str:
        extra = self.extra_trailing
        return t.text[: -len(extra)] if extra and t.text.endswith(extra) else t.text

    def _no_depth(self, agent: str) -> bool:
        return self.reindent is None or self.reindent(agent) is None

    def _map_indent(self, t: Seg, line: int, beside: tuple[str, str] | None = None) -> str:
        mapped = self.reindent(t.indent) if self.reindent is not None else None
        if mapped is None and beside is not None and beside[0] == t.indent:
            mapped = beside[1]  # no single depth from the pairs: the lines around it say
        if t.indent and self._flat_quote():
            # old_string quoted the lines without their indentation, and the agent
            # indented this line itself: it is written as given — unless a shift of
            # the quote says otherwise, and then which one is meant is a guess.
            if mapped is None or mapped == t.indent:
                return t.indent
            raise MergeConflict(
                line,
                t.text,
                "",
                "old_string quotes the lines without their indentation, so whether the "
                "indentation of the lines the edit adds is the file's or relative to the "
                "quote is a guess",
            )
        if mapped is None:
            raise MergeConflict(
                line,
                t.text,
                "",
                "the indentation of old_string does not map onto the file's consistently, so "
                "the lines the edit adds or re-indents cannot be placed",
            )
        return mapped


def align(base: list[Seg], ours: list[Seg], line_start: bool) -> list[Unit]:
    """The lines of old_string (``base``) paired with the file's (``ours``), each pair
    classified (:class:`Kind`); a line on one side only is a unit with one index."""
    n, m = len(base), len(ours)
    head: list[Unit] = []
    lo_old = lo_file = 0
    if not line_start:  # the partial first line is the first line
        head.append(Unit(0, 0))
        lo_old = lo_file = 1
    tail: list[Unit] = []
    hi_old, hi_file = n - 1, m - 1  # the text after the last newline pairs with its twin
    if hi_old >= lo_old and hi_file >= lo_file:
        tail.append(Unit(hi_old, hi_file))
    else:
        hi_old, hi_file = n, m
    middle = _align_lines(
        [_key(s) for s in base[lo_old:hi_old]],
        [_key(s) for s in ours[lo_file:hi_file]],
        lo_old,
        lo_file,
    )
    units = head + middle + tail
    for unit in units:
        if unit.old is not None and unit.file is not None:
            unit.kind = _classify(base[unit.old], ours[unit.file])
        elif (unit.old is not None and base[unit.old].blank) or (
            unit.file is not None and ours[unit.file].blank
        ):
            unit.kind = Kind.FORMAT
    return units


def _line_ops(base: list[Seg], theirs: list[Seg]) -> list[tuple[str, int, int, int, int]]:
    """The line diff old_string → new_string. When both end with a newline, the empty
    text after it stays the last line of both (never the twin of a blank line the
    agent added or dropped at the start, which would lose a newline)."""
    n, m = len(base), len(theirs)
    ends = base[-1].text == theirs[-1].text == ""
    if ends:
        n, m = n - 1, m - 1
    matcher = SequenceMatcher(None, [s.text for s in base[:n]], [s.text for s in theirs[:m]], False)
    ops: list[tuple[str, int, int, int, int]] = list(matcher.get_opcodes())
    return [*ops, ("equal", n, n + 1, m, m + 1)] if ends else ops


def _align_lines(old: list[str], file: list[str], lo_old: int, lo_file: int) -> list[Unit]:
    units: list[Unit] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, old, file, False).get_opcodes():
        if tag == "equal":
            units.extend(
                Unit(lo_old + i, lo_file + j)
                for i, j in zip(range(i1, i2), range(j1, j2), strict=True)
            )
            continue
        pairs = _pair_similar(old[i1:i2], file[j1:j2])
        i, j = i1, j1
        for a, b in [*pairs, (i2 - i1, j2 - j1)]:
            units.extend(Unit(lo_old + x, None) for x in range(i, i1 + a))
            units.extend(Unit(None, lo_file + y) for y in range(j, j1 + b))
            if (a, b) != (i2 - i1, j2 - j1):
                units.append(Unit(lo_old + i1 + a, lo_file + j1 + b))
            i, j = i1 + a + 1, j1 + b + 1
    return units


def _pair_similar(a: Sequence[str], b: Sequence[str]) -> list[tuple[int, int]]:
    """Monotone pairs of similar lines maximising total similarity (small blocks)."""
    if len(a) == len(b) and all(ratio(x, y) >= _PAIRABLE for x, y in zip(a, b, strict=True)):
        return list(zip(range(len(a)), range(len(b)), strict=True))
    if len(a) * len(b) > 40_000:
        return []
    n, m = len(a), len(b)
    score = [[0.0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            best = max(score[i + 1][j], score[i][j + 1])
            sim = ratio(a[i], b[j]) if a[i] or b[j] else 1.0
            if sim >= _PAIRABLE:
                best = max(best, sim + score[i + 1][j + 1])
            score[i][j] = best
    pairs = []
    i = j = 0
    while i < n and j < m:
        sim = ratio(a[i], b[j]) if a[i] or b[j] else 1.0
        if sim >= _PAIRABLE and score[i][j] == sim + score[i + 1][j + 1]:
            pairs.append((i, j))
            i, j = i + 1, j + 1
        elif score[i][j] == score[i + 1][j]:
            i += 1
        else:
            j += 1
    return pairs


def _pair_edited(base: list[Seg], theirs: list[Seg]) -> dict[int, int]:
    """Which line of the changed region of old_string each new line edits: by
    similarity, or line for line where each new line extends its old one."""
    keys_a = [s.body.strip() for s in base]
    keys_b = [s.body.strip() for s in theirs]
    if len(keys_a) == len(keys_b) and all(
        a and (b.startswith(a) or b.endswith(a)) for a, b in zip(keys_a, keys_b, strict=True)
    ):
        return {k: k for k in range(len(keys_a))}
    return {j: i for i, j in _pair_similar(keys_a, keys_b)}


def _mark(tok: str) -> bool:
    return not _WORD.match(tok) and not tok.isspace()


def _offsets(toks: list[str]) -> list[int]:
    starts = [0]
    for tok in toks:
        starts.append(starts[-1] + len(tok))
    return starts


def _file_marks(line: str, file_line: str) -> list[tuple[int, str]]:
    """(offset in ``line``, the file's mark) for each mark of a quoted line that its file
    line writes in the same place, as the same mark or a twin (a curly quote, a dash)."""
    a, b = TOKEN.findall(line), TOKEN.findall(file_line)
    fa, fb = [translate_punctuation(t) for t in a], [translate_punctuation(t) for t in b]
    starts = _offsets(a)
    out = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, fa, fb, False).get_opcodes():
        if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
            for k in range(i2 - i1):
                x, y = a[i1 + k], b[j1 + k]
                if _mark(x) and fa[i1 + k] == fb[j1 + k]:
                    out.append((starts[i1 + k], y))
    return out


def _kept_chars(old: str, new: str, in_file: dict[int, str]) -> list[str | None]:
    """For each character of ``new``: None where ``new`` adds it to ``old`` (everything
    but the runs of tokens the token diff matches, where a run holds a word — a lone
    mark matched to one of ``old``'s says nothing of where it came from); in the runs,
    the file's version of a mark (``in_file``, by its offset in ``old``), else ""."""
    a, b = TOKEN.findall(old), TOKEN.findall(new)
    a_starts, b_starts = _offsets(a), _offsets(b)
    chars: list[str | None] = [None] * len(new)
    for i, j, size in SequenceMatcher(None, a, b, False).get_matching_blocks():
        if not any(_WORD.match(tok) for tok in b[j : j + size]):
            continue
        loose = loose_edges(b[j : j + size])
        for k in range(size):
            if k in loose:
                continue
            source = in_file.get(a_starts[i + k], "") if _mark(b[j + k]) else ""
            chars[b_starts[j + k] : b_starts[j + k + 1]] = [source] * len(b[j + k])
    return chars


def loose_edges(run: Sequence[str]) -> set[int]:
    """The marks at the very edge of a run of tokens that spacing parts from the run's
    words (the ``-`` of ``- the policy``, matched to the ``-`` of ``files - the
    policy``): which text such a mark comes from, kept or typed anew, is a guess.
    Quotes aside: one opens or closes the text next to it, kept with it."""
    words = [k for k, tok in enumerate(run) if _WORD.match(tok)]
    if not words:
        return set()
    loose = set()
    for edge, word, step in ((0, words[0], 1), (len(run) - 1, words[-1], -1)):
        between = run[edge + step : word : step] if edge != word else []
        quote = translate_punctuation(run[edge]) in ("'", '"')
        if _mark(run[edge]) and not quote and any(tok.isspace() for tok in between):
            loose.add(edge)
    return loose


def _marks_unlike(file_text: str, typed: str) -> bool:
    """The file's text has a quote, dash or full-width mark the agent did not type."""
    return any(translate_punctuation(c) != c and c not in typed for c in set(file_text))


def _classify(b: Seg, o: Seg) -> Kind:
    if b.text == o.text:
        return Kind.SAME
    if _key(b) == _key(o):
        return Kind.FORMAT
    if slips_between(b.body, o.body) is not None:
        return Kind.SLIP
    return Kind.DRIFT


def _repunctuated(base: str, ours: str, theirs: str) -> bool:
    """The file has a mark the agent's quote left out, and the agent's change adds
    or removes marks itself."""
    return (
        marks_left_out(base, ours) and marks_changed(base, theirs) and punctuation_slip(base, ours)
    )


def _last_token(body: str) -> str:
    """The last token of a line's text (its end, for a line joined or split)."""
    tokens = TOKEN.findall(body)
    return tokens[-1] if tokens else ""


def _end_moved(old_ends: Sequence[str], b: int, new_ends: Sequence[str], k: int) -> bool:
    """Whether new line ``k`` of a region, paired with old line ``b``, ends elsewhere than
    that line (``*_ends``: each line's :func:`_last_token`): the end of another old line
    was joined onto it, or the old line's end went to another new line (a split)."""
    end, ending = old_ends[b], new_ends[k]
    # Line b itself ends in `end` and line k in `ending`: finding the other is finding
    # it on another line.
    return end != ending and (ending in old_ends or end in new_ends)
