"""Adapting the replacement to a tolerant match: a three-way merge by lines.

Base is old_string, "ours" is the matched text of the file, "theirs" is
new_string. The rule: **where new_string leaves old_string unchanged, the file's
text is kept; only what the edit changes is written**, and nothing is guessed.

1. The lines of old_string are paired with the lines of the file (by their
   text with whitespace and punctuation folded away). Each pair is the same
   line with another format, the same line with a slip of the pen, or a line
   that drifted (really differs). The fuzzy tiers absorb at most one drifted
   line: more real difference means the match is another block.
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
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from enum import Enum

from redline.engine import indent
from redline.engine.fold import punctuation_key, translate_punctuation
from redline.engine.newlines import LF
from redline.engine.similarity import ratio

_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")
_WORDS = re.compile(r"\w+|[^\w\s]")
_WORD = re.compile(r"\w")
_PAIRABLE = 0.5  # lines less similar than this are not the same line edited
_REWRITE = 0.75  # a changed line less similar than this to its old version is rewritten
_MAX_SLIP_PUNCTUATION = 2  # dropped or doubled ( ) , : on one line
_FUZZY = ("fuzzy", "line_fuzzy")


class MergeConflict(Exception):
    """The edit changes text that differs in the file; nothing can be merged safely."""

    def __init__(self, line: int, expected: str, found: str, reason: str = "") -> None:
        super().__init__(reason or f"line {line + 1} of old_string differs in the file")
        self.line = line  # 0-based line within old_string
        self.expected = expected
        self.found = found
        self.reason = reason


class TooDifferent(Exception):
    """The block differs from old_string in more than one real line: it is another block."""

    def __init__(self, drifted: int) -> None:
        super().__init__(f"{drifted} lines differ in content")
        self.drifted = drifted


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
    return _fold(seg.body)


def adapt(
    old: str,
    new: str,
    matched: str,
    match_type: str,
    *,
    line_start: bool | None = None,
    line_end: bool = True,
    style: indent.Style | None = None,
    file_chars: frozenset[str] = frozenset(),
) -> str:
    """The text that replaces ``matched`` (raises :class:`MergeConflict`, :class:`TooDifferent`).

    ``line_start``: the match begins at the start of a line of the file (by
    default: when old_string begins with indentation). ``line_end``: it ends at
    the end of a line. ``style``: how the whole file indents. ``file_chars``:
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
class _Unit:
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
    style: indent.Style | None
    file_chars: frozenset[str]
    units: list[_Unit] = field(default_factory=list)

    def run(self) -> str:
        self.base = split(self.old_text, self.line_start, self.line_end)
        self.ours = split(self.matched, self.line_start, self.line_end)
        self.theirs = split(self.new_text, self.line_start, self.line_end)
        self.units = self._align()
        self._check_drift()
        self.partner = {u.old: u for u in self.units if u.old is not None}
        kept = self._kept_lines()
        self.tokens = _TokenMap(
            [(self.base[i], self.ours[j], i in kept) for i, j in self._trusted_pairs()],
            self.file_chars,
        )
        self.reindent = self._fit_indentation()
        self.extra_trailing = self._trailing_model()
        return LF.join(self._emit())

    # -- alignment ---------------------------------------------------------------

    def _align(self) -> list[_Unit]:
        n, m = len(self.base), len(self.ours)
        head: list[_Unit] = []
        lo_old = lo_file = 0
        if not self.line_start:  # the partial first line is the first line
            head.append(_Unit(0, 0))
            lo_old = lo_file = 1
        tail: list[_Unit] = []
        hi_old, hi_file = n - 1, m - 1  # the text after the last newline pairs with its twin
        if hi_old >= lo_old and hi_file >= lo_file:
            tail.append(_Unit(hi_old, hi_file))
        else:
            hi_old, hi_file = n, m
        middle = _align_lines(
            [_key(s) for s in self.base[lo_old:hi_old]],
            [_key(s) for s in self.ours[lo_file:hi_file]],
            lo_old,
            lo_file,
        )
        units = head + middle + tail
        for unit in units:
            if unit.old is not None and unit.file is not None:
                unit.kind = _classify(self.base[unit.old], self.ours[unit.file])
            elif (unit.old is not None and self.base[unit.old].blank) or (
                unit.file is not None and self.ours[unit.file].blank
            ):
                unit.kind = Kind.FORMAT
        return units

    def _check_drift(self) -> None:
        if self.match_type not in _FUZZY:
            return
        drifted = sum(1 for u in self.units if u.kind is Kind.DRIFT)
        quoted = sum(1 for seg in self.base if not seg.blank)
        if drifted > 1 or (drifted and drifted >= quoted):
            raise TooDifferent(drifted)  # another block, not this one with a changed line

    def _kept_lines(self) -> set[int]:
        """Lines of old_string that new_string keeps as they are."""
        matcher = SequenceMatcher(
            None, [s.text for s in self.base], [s.text for s in self.theirs], False
        )
        return {i for tag, i1, i2, _, _ in matcher.get_opcodes() if tag == "equal"
                for i in range(i1, i2)}  # fmt: skip

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
        agent = [s.indent for s in (*self.base, *self.theirs) if s.full_start and not s.blank]
        return indent.fit(pairs, agent, self.style or indent.Style())

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
        base_texts = [s.text for s in self.base]
        their_texts = [s.text for s in self.theirs]
        ops = SequenceMatcher(None, base_texts, their_texts, False).get_opcodes()
        out: list[str] = []
        # Lines only the file has, by the number of old_string lines before them.
        file_only: dict[int, list[int]] = defaultdict(list)
        position = 0
        for unit in self.units:
            if unit.old is not None:
                position = unit.old + 1
            elif unit.file is not None:
                file_only[position].append(unit.file)
        for tag, i1, i2, j1, j2 in ops:
            if tag == "equal":
                for i in range(i1, i2):
                    out.extend(self.ours[j].text for j in file_only.pop(i, []))
                    partner = self.partner[i].file
                    if partner is not None:
                        out.append(self.ours[partner].text)
                continue
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
        out = []
        for k, seg in enumerate(self.theirs[j1:j2]):
            b = pairs.get(k)
            partner = self.partner[i1 + b].file if b is not None else None
            if b is None or partner is None:
                out.append(self._insert(seg, j1 + k))
                continue
            out.append(self._merge_line(self.base[i1 + b], self.ours[partner], seg, i1 + b))
        return out

    def _merge_line(self, b: Seg, o: Seg, t: Seg, line: int) -> str:
        if t.blank:
            return o.text if t.text == b.text else self._blank(t)
        if not t.full_start:
            lead = ""
        elif t.indent == b.indent:
            lead = o.indent
        else:
            lead = self._map_indent(t, line)
        if t.body == b.body:
            body = o.body
        elif ratio(b.body, t.body) < _REWRITE and _punctuation_slip(b.body, o.body):
            # The agent rewrites a line it quoted with a dropped or doubled mark:
            # where the file's mark goes in the new line is a guess.
            raise MergeConflict(line, b.text, o.text)
        else:
            if o.body == b.body:
                body = self.tokens.carry(t.body, line)
            else:
                body = _merge_tokens(b.body, o.body, t.body, self.tokens, line)
        if t.trail == b.trail:
            trail = o.trail
        elif o.trail == b.trail:
            trail = t.trail
        else:
            trail = self._trail(t)
        return lead + body + trail

    def _insert(self, t: Seg, line: int) -> str:
        if t.blank:
            return self._blank(t)
        lead = self._map_indent(t, line) if t.full_start else ""
        return lead + self.tokens.carry(t.body, line) + self._trail(t)

    def _flat_quote(self) -> bool:
        return all(not s.indent for s in self.base if s.full_start and not s.blank)

    def _blank(self, t: Seg) -> str:
        extra = self.extra_trailing
        return t.text[: -len(extra)] if extra and t.text.endswith(extra) else t.text

    def _map_indent(self, t: Seg, line: int) -> str:
        mapped = self.reindent(t.indent) if self.reindent is not None else None
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


def _align_lines(old: list[str], file: list[str], lo_old: int, lo_file: int) -> list[_Unit]:
    units: list[_Unit] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, old, file, False).get_opcodes():
        if tag == "equal":
            units.extend(
                _Unit(lo_old + i, lo_file + j)
                for i, j in zip(range(i1, i2), range(j1, j2), strict=True)
            )
            continue
        pairs = _pair_similar(old[i1:i2], file[j1:j2])
        i, j = i1, j1
        for a, b in [*pairs, (i2 - i1, j2 - j1)]:
            units.extend(_Unit(lo_old + x, None) for x in range(i, i1 + a))
            units.extend(_Unit(None, lo_file + y) for y in range(j, j1 + b))
            if (a, b) != (i2 - i1, j2 - j1):
                units.append(_Unit(lo_old + i1 + a, lo_file + j1 + b))
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
    """Which line of the changed region of old_string each new line edits (by position)."""
    keys_a = [s.body.strip() for s in base]
    keys_b = [s.body.strip() for s in theirs]
    return {j: i for i, j in _pair_similar(keys_a, keys_b)}


def _classify(b: Seg, o: Seg) -> Kind:
    if b.text == o.text:
        return Kind.SAME
    if _key(b) == _key(o):
        return Kind.FORMAT
    if slips_between(b.body, o.body) is not None:
        return Kind.SLIP
    return Kind.DRIFT


def slips_between(expected: str, found: str) -> list[tuple[str, str]] | None:
    """The misspelt words of two versions of a line, or None if they really differ.

    Whitespace and punctuation style are tolerated; so is a word with a slip of
    one or two characters, and up to two dropped or doubled punctuation marks.
    """
    if "".join(expected.split()) == "".join(found.split()):
        return []
    a = _WORDS.findall(translate_punctuation(expected))
    b = _WORDS.findall(translate_punctuation(found))
    slips: list[tuple[str, str]] = []
    punctuation = 0
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, a, b, False).get_opcodes():
        if tag == "equal":
            continue
        if tag == "replace" and i2 - i1 == j2 - j1:
            for x, y in zip(a[i1:i2], b[j1:j2], strict=True):
                if not _typo(x, y):
                    return None
                slips.append((x, y))
            continue
        if tag == "replace":
            return None
        changed = a[i1:i2] + b[j1:j2]
        if not all(_is_mark(tok) for tok in changed):
            return None
        punctuation += len(changed)
    if punctuation > _MAX_SLIP_PUNCTUATION:
        return None
    return slips


def _punctuation_slip(expected: str, found: str) -> bool:
    """The line differs by a dropped or doubled mark, not only by misspelt words."""
    slips = slips_between(expected, found)
    if slips is None:
        return False
    fixed = expected
    for wrong, right in slips:
        fixed = re.sub(rf"\b{re.escape(wrong)}\b", right, fixed)
    return _fold(fixed) != _fold(found)


def _is_mark(token: str) -> bool:
    return token in "(),:;[]"


def _typo(a: str, b: str) -> bool:
    """A slip of one or two letters in a word; never a changed number or digit."""
    if not (a.isidentifier() and b.isidentifier()):
        return False
    if [c for c in a if c.isdigit()] != [c for c in b if c.isdigit()]:
        return False
    if min(len(a), len(b)) < 4:
        return False
    from rapidfuzz.distance import OSA  # only tolerant matches get here

    limit = 1 if max(len(a), len(b)) <= 8 else 2
    return bool(OSA.distance(a, b) <= limit)


_HALF_WIDTH = frozenset(",.:;!?()[]\"'")  # marks with a full-width twin
_QUOTE_FAMILIES = {**dict.fromkeys("‘’‚‛", "single"), **dict.fromkeys("“”„‟", "double")}


def _mark_class(mark: str) -> str:
    """Typographic quotes go by family (an agent that curls one ’ curls every ‘ and ’);
    other marks (an en dash, a full-width comma, a corner bracket) each alone."""
    return _QUOTE_FAMILIES.get(mark, mark)


def _contexts(toks: list[str]) -> list[str]:
    """For each token, the context its mapping depends on.

    A quote opens or closes (the file may write “ and ” for one "); other
    punctuation next to CJK text is often written full-width while the code
    beside it is not. A mark is mapped within its context, not alone.
    """
    wide = [any(ord(c) >= 0x2E80 for c in tok) for tok in toks]
    solid = [k for k, tok in enumerate(toks) if not tok.isspace()]
    out = [""] * len(toks)
    seen = {"'": 0, '"': 0}  # quotes of each kind so far on the line: they alternate
    for n, k in enumerate(solid):
        kind = translate_punctuation(toks[k])
        if kind in seen:
            before = toks[k - 1][-1:] if k > 0 else ""
            after = toks[k + 1][:1] if k + 1 < len(toks) else ""
            if kind == "'" and before.isalnum() and after.isalnum():
                out[k] = "apostrophe"
            else:
                out[k] = "close" if seen[kind] % 2 else "open"
                seen[kind] += 1
        elif (n > 0 and wide[solid[n - 1]]) or (n + 1 < len(solid) and wide[solid[n + 1]]):
            out[k] = "wide"
    return out


class _TokenMap:
    """How the file writes each token of old_string, learnt over the whole block."""

    def __init__(self, pairs: list[tuple[Seg, Seg, bool]], file_chars: frozenset[str]) -> None:
        self.file_chars = file_chars
        # How sure the block is of each renaming of a word: a line the edit keeps
        # counts twice, a line it changes once (the agent may have meant that one).
        self.evidence: Counter[tuple[str, str]] = Counter()
        self.typographic: set[str] = set()  # classes of marks the agent typographised
        self.half_width = False
        self.targets: dict[tuple[str, str], set[str]] = defaultdict(set)
        for b, o, kept in pairs:
            a_toks = _TOKEN.findall(b.body)
            b_toks = _TOKEN.findall(o.body)
            context = _contexts(a_toks)
            for tag, i1, i2, j1, j2 in SequenceMatcher(None, a_toks, b_toks, False).get_opcodes():
                # Only 1:1 correspondences say how the file writes a token; a token
                # the agent added or dropped by a slip says nothing.
                if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
                    for k in range(i2 - i1):
                        x, y = a_toks[i1 + k], b_toks[j1 + k]
                        if not x.isspace():
                            self.targets[x, context[i1 + k]].add(y)
                        if x != y and _WORD.match(x):
                            self.evidence[x, context[i1 + k]] += 2 if kept else 1
                        if x != y and not x.isascii() and translate_punctuation(x) == y:
                            self.typographic.add(_mark_class(x))  # “ for the file's "
                        if x != y and x.isascii() and translate_punctuation(y) == x:
                            self.half_width = True  # , for the file's ，

    def mapped(self, toks: list[str]) -> list[str | None]:
        """Each token as the file writes it; None where the block writes it several ways."""
        out: list[str | None] = []
        for tok, context in zip(toks, _contexts(toks), strict=True):
            targets = self.targets.get((tok, context))
            if not targets and context == "wide" and self.half_width and tok in _HALF_WIDTH:
                # The agent wrote half-width marks for the file's full-width ones, and
                # adds this one beside CJK text: which width it means is a guess.
                out.append(None)
            elif not targets or tok.isspace():
                out.append(self._unseen(tok))
            elif len(targets) == 1:
                target = next(iter(targets))
                if target != tok and _WORD.match(tok) and self.evidence[tok, context] < 2:
                    out.append(tok)  # one misspelling, on a line the edit rewrites: not enough
                else:
                    out.append(None if self._also_meant(tok, target) else target)
            else:
                # Written two ways in the block: a name someone renamed in one line,
                # or a mark the file mixes (a hyphen and a dash) — which one is meant
                # is a guess.
                out.append(None)
        return out

    def _unseen(self, tok: str) -> str | None:
        """A typographic mark the block does not show: its ASCII twin when the agent
        wrote marks of its kind for the file's ASCII ones in this block."""
        if tok.isascii() or len(tok) != 1:
            return tok
        twin = translate_punctuation(tok)
        if twin == tok:
            return tok
        family = _mark_class(tok)
        if family not in self.typographic:
            # The agent curled the other family of quotes: whether it curled this
            # one too, or means it, is a guess.
            return (
                None
                if family in _QUOTE_FAMILIES.values()
                and self.typographic
                & {
                    "single",
                    "double",
                }
                else tok
            )
        return None if self._also_meant(tok, twin) else twin

    def _also_meant(self, mark: str, twin: str) -> bool:
        """The agent writes ``mark`` for the file's ``twin``, yet the file also uses
        ``mark`` itself: whether an added one is a twin or meant is a guess."""
        return mark != twin and not mark.isascii() and mark in self.file_chars

    def carry(self, text: str, line: int) -> str:
        """``text`` written the file's way, token by token (raises on a mixed mapping)."""
        toks = _TOKEN.findall(text)
        return _joined(toks, self.mapped(toks), line, text)


def _joined(toks: list[str], mapped: list[str | None], line: int, text: str) -> str:
    out = []
    for tok, m in zip(toks, mapped, strict=True):
        if m is None:
            raise MergeConflict(
                line,
                text,
                "",
                f"the file writes {tok!r} in more than one way in this block, and the edit adds it",
            )
        out.append(m)
    return "".join(out)


@dataclass(frozen=True)
class _Hunk:
    """Base tokens ``[start, end)`` become the other side's tokens ``[src, src_end)``."""

    start: int
    end: int
    src: int
    src_end: int
    tokens: tuple[str, ...]
    theirs: bool

    @property
    def pure(self) -> bool:
        """Only inserts or only deletes."""
        return self.start == self.end or not self.tokens

    @property
    def one_for_one(self) -> bool:
        return self.end - self.start == len(self.tokens) == 1

    def clashes(self, other: _Hunk, base: list[str]) -> bool:
        if self.start < other.end and other.start < self.end:
            return True
        if self.end == other.start or other.end == self.start:
            touch = self.end if self.end == other.start else self.start
            if 0 < touch < len(base) and base[touch - 1] == base[touch]:
                # Side by side inside a run of equal tokens (``))``, ``::``): which
                # copy each side changed is a guess.
                return True
            if (self.pure or other.pure) and not (self.one_for_one or other.one_for_one):
                # An insertion next to another insertion or a rewrite: where one
                # ends and the other begins is a guess of the alignment.
                return True
        if self.start == self.end == other.start == other.end:
            return True
        insert, span = (self, other) if self.start == self.end else (other, self)
        return insert.start == insert.end and span.start < insert.start < span.end


def _hunks(a: list[str], b: list[str], theirs: bool) -> list[_Hunk]:
    out: list[_Hunk] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, a, b, False).get_opcodes():
        if tag == "equal":
            continue
        if tag == "replace" and i2 - i1 == j2 - j1:  # token for token: one hunk each
            out.extend(
                _Hunk(i1 + k, i1 + k + 1, j1 + k, j1 + k + 1, (b[j1 + k],), theirs)
                for k in range(i2 - i1)
                if a[i1 + k] != b[j1 + k]
            )
        else:
            out.append(_slid(a, _Hunk(i1, i2, j1, j2, tuple(b[j1:j2]), theirs)))
    return out


def _slid(a: list[str], hunk: _Hunk) -> _Hunk:
    """A pure insertion or deletion moved as far left as it can go, so that both
    sides dropping (or doubling) one of two equal tokens make the same hunk."""
    start, end, src, src_end, tokens = hunk.start, hunk.end, hunk.src, hunk.src_end, hunk.tokens
    if start != end and not tokens:
        while start > 0 and a[start - 1] == a[end - 1]:
            start, end = start - 1, end - 1
    elif start == end and tokens:
        while start > 0 and src > 0 and a[start - 1] == tokens[-1]:
            tokens = (a[start - 1], *tokens[:-1])
            start, end, src, src_end = start - 1, end - 1, src - 1, src_end - 1
    return _Hunk(start, end, src, src_end, tokens, hunk.theirs)


def _subsumes(big: _Hunk, small: _Hunk) -> bool:
    """``big`` already makes ``small``'s change: it writes ``small``'s tokens at the
    same edge of the same place (the agent fixed the slip the file fixed, and more)."""
    if not small.tokens or big.tokens == small.tokens:
        return False
    n = len(small.tokens)
    if small.start == small.end:  # an insertion just before or after big
        if big.end == small.start:
            return big.tokens[-n:] == small.tokens
        if big.start == small.start:
            return big.tokens[:n] == small.tokens
        return False
    if big.start == small.start and small.end <= big.end:
        return big.tokens[:n] == small.tokens
    if big.end == small.end and small.start >= big.start:
        return big.tokens[-n:] == small.tokens
    return False


def _format_only(a: list[str], hunk: _Hunk) -> bool:
    """The hunk changes only how tokens are written, never which tokens there are."""
    return _spelling("".join(a[hunk.start : hunk.end])) == _spelling("".join(hunk.tokens))


_JOINING_SPACE = re.compile(r"(?<=\w)\s+(?=\w)")


def _spelling(text: str) -> str:
    """``text`` with marks folded and whitespace gone, except that a space between two
    words stays: ``return item`` and ``returnitem`` are different tokens."""
    marked = _JOINING_SPACE.sub("\x00", translate_punctuation(text))
    return "".join(marked.split())


def _fold(text: str) -> str:
    return "".join(punctuation_key(text).split())


def _merge_tokens(base: str, ours: str, theirs: str, tokens: _TokenMap, line: int) -> str:
    """Token-level three-way merge of one line's text; a token changed two ways conflicts.

    ``theirs`` is the agent's new line as sent: its tokens are first written the
    file's way where the whole block says how (a word the agent misspells the
    same way everywhere takes the file's spelling), so a slip the agent copied
    into the new line merges with the file's fix of it.
    """
    a = _TOKEN.findall(base)
    sent = _TOKEN.findall(theirs)
    mapped = tokens.mapped(sent)
    t = [m if m is not None else tok for tok, m in zip(sent, mapped, strict=True)]
    hunks = sorted(
        _hunks(a, _TOKEN.findall(ours), False) + _hunks(a, t, True),
        key=lambda h: (h.start, h.end),
    )
    chosen: list[_Hunk] = []
    for hunk in hunks:
        key = (hunk.start, hunk.end, hunk.tokens)
        if any(c.theirs != hunk.theirs and (c.start, c.end, c.tokens) == key for c in chosen):
            continue  # the same change on both sides
        twin = next((c for c in chosen if c.theirs != hunk.theirs and _subsumes(c, hunk)), None)
        if twin is not None:
            continue  # both sides make this insertion; the other side's hunk carries it
        twin = next((c for c in chosen if c.theirs != hunk.theirs and _subsumes(hunk, c)), None)
        if twin is not None:
            chosen[chosen.index(twin)] = hunk
            continue
        clash = next((c for c in chosen if c.theirs != hunk.theirs and c.clashes(hunk, a)), None)
        if clash is None:
            chosen.append(hunk)
            continue
        if (clash.start, clash.end, clash.tokens) == (hunk.start, hunk.end, hunk.tokens):
            continue  # the same change on both sides
        ours_hunk, theirs_hunk = (clash, hunk) if hunk.theirs else (hunk, clash)
        if _format_only(a, ours_hunk):
            # The file only writes those tokens another way (spacing, a quote
            # style): the agent's change to them wins.
            chosen[chosen.index(clash)] = theirs_hunk
            continue
        raise MergeConflict(line, base, ours)
    merged = _emit_tokens(a, t, mapped, chosen, line, theirs)
    if _balance(ours) == _balance(theirs) == 0 != _balance(merged):
        # Both the file's line and the agent's new line close what they open;
        # a merge that does not is a slip applied where the agent had fixed it.
        raise MergeConflict(line, base, ours)
    return merged


def _balance(text: str) -> int:
    return sum(text.count(c) for c in "([{") - sum(text.count(c) for c in ")]}")


def _emit_tokens(
    a: list[str],
    t: list[str],
    mapped: list[str | None],
    chosen: list[_Hunk],
    line: int,
    theirs: str,
) -> str:
    out: list[str] = []
    position = 0
    for hunk in sorted(chosen, key=lambda h: (h.start, h.end)):
        out.extend(a[position : hunk.start])
        if hunk.theirs:
            written = t[hunk.src : hunk.src_end]
            out.append(_joined(written, mapped[hunk.src : hunk.src_end], line, theirs))
        else:
            out.extend(hunk.tokens)
        position = hunk.end
    out.extend(a[position:])
    return "".join(out)
