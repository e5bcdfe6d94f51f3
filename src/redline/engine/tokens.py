"""The token-level merge of one line, and how the file writes the agent's tokens.

A changed line is merged token by token (words, runs of whitespace, single
marks): base is old_string's line, ours the file's, theirs new_string's. Changes
to different tokens both apply; the same change on both sides applies once; a
token changed two ways is a :class:`~redline.engine.errors.MergeConflict`.
:class:`TokenMap` learns from the block's line pairs how the file writes the
agent's tokens, so the text the agent adds is written the file's way.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Container, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

from redline.engine.errors import MergeConflict
from redline.engine.fold import translate_punctuation

TOKEN = re.compile(r"\w+|\s+|[^\w\s]")
_WORD = re.compile(r"\w")

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


class TokenMap:
    """How the file writes each token of old_string, learnt over the whole block."""

    def __init__(self, pairs: list[tuple[str, str, bool]], file_chars: Container[str]) -> None:
        self.file_chars = file_chars
        # How sure the block is of each renaming of a word: a line the edit keeps
        # counts twice, a line it changes once (the agent may have meant that one).
        self.evidence: Counter[tuple[str, str]] = Counter()
        self.typographic: set[str] = set()  # classes of marks the agent typographised
        self.targets: dict[tuple[str, str], set[str]] = defaultdict(set)
        for base, ours, kept in pairs:  # a line's text in old_string and in the file
            a_toks = TOKEN.findall(base)
            b_toks = TOKEN.findall(ours)
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

    def mapped(
        self, toks: list[str], sources: Sequence[str | None] | None = None
    ) -> list[str | None]:
        """Each token as the file writes it; None where the block writes it several ways.

        An ASCII mark (a quote, a hyphen, a comma) the agent adds is written as it
        typed it, even where the block shows the file writing a typographic or
        full-width twin for it: in text the agent adds, ``"`` is not a guess at ``“``.
        ``sources`` says, token by token, where the token comes from: None, text the
        agent adds (by default, all of it); otherwise old_string's text it keeps or
        moves (two lines joined), which the file writes its way — for a mark, the
        file's own at that place when known (a string), else as the block shows it ("").
        """
        out: list[str | None] = []
        for k, (tok, context) in enumerate(zip(toks, _contexts(toks), strict=True)):
            targets = self.targets.get((tok, context))
            source = None if sources is None else sources[k]
            if _ascii_mark(tok) and source is None:
                out.append(tok)
            elif source and translate_punctuation(source) == translate_punctuation(tok):
                out.append(source)  # a mark of old_string's: the file's own at its place
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

    def carry(self, text: str, line: int, sources: Sequence[str | None] | None = None) -> str:
        """``text`` written the file's way, token by token (raises on a mixed mapping);
        ``sources``: see :meth:`mapped`."""
        toks = TOKEN.findall(text)
        return _joined(toks, self.mapped(toks, sources), line, text)


def _ascii_mark(tok: str) -> bool:
    return tok.isascii() and len(tok) == 1 and not _WORD.match(tok) and not tok.isspace()


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

    def run(self, base: list[str]) -> tuple[int, int]:
        """The run of equal base tokens a pure hunk drops or doubles a copy of
        (empty when it is not pure, or its tokens are not such a copy)."""
        if not self.pure:
            return self.start, self.start
        kinds = set(base[self.start : self.end]) | set(self.tokens)
        if len(kinds) != 1:
            return self.start, self.start
        (token,) = kinds
        lo, hi = self.start, self.end
        while lo > 0 and base[lo - 1] == token:
            lo -= 1
        while hi < len(base) and base[hi] == token:
            hi += 1
        return lo, hi

    def _beside(self, other: _Hunk, base: list[str]) -> bool:
        """Side by side, or with only spacing between them."""
        first, second = (self, other) if self.end <= other.start else (other, self)
        if first.end > second.start:
            return False
        return all(not tok.strip() for tok in base[first.end : second.start])

    def clashes(self, other: _Hunk, base: list[str]) -> bool:
        if self.start < other.end and other.start < self.end:
            return True
        if self.end == other.start or other.end == self.start:
            touch = self.end if self.end == other.start else self.start
            if 0 < touch < len(base) and base[touch - 1] == base[touch]:
                # Side by side inside a run of equal tokens (``))``, ``::``): which
                # copy each side changed is a guess.
                return True
        for fix, rival in ((self, other), (other, self)):
            added_mark = (
                fix.start == fix.end
                and not fix.theirs
                and rival.theirs
                and not _format_only(base, fix)
            )
            rewritten = base[rival.start : rival.end]
            if (
                added_mark
                and fix.start in (rival.start, rival.end)
                and any(_WORD.match(t) for t in rewritten)
            ):
                # The file adds a mark right at a word the agent rewrites (``]g``
                # read ``]:g``, and the agent's ``g`` made ``)``): whether the
                # mark belongs to the word the agent took away is a guess.
                return True
        for pure, rival in ((self, other), (other, self)):
            lo, hi = pure.run(base)
            inside = (rival.start < hi and lo < rival.end) or lo < rival.start < hi
            if hi - lo > 1 and inside and not _format_only(base, rival):
                # One side drops or doubles a copy in a run of equal tokens
                # (``:::``), the other changes another copy into another token:
                # which copies each meant is a guess.
                return True
        beside = self._beside(other, base) and (self.pure or other.pure)
        if beside and not (self.one_for_one or other.one_for_one):
            # An insertion next to another insertion or a rewrite (nothing but
            # spacing between them): where one ends and the other begins, and
            # which words a mark such as a comma belongs to, is a guess.
            return True
        if self.start == self.end == other.start == other.end:
            return True
        insert, span = (self, other) if self.start == self.end else (other, self)
        return insert.start == insert.end and span.start < insert.start < span.end


def _aligned(a: list[str], b: list[str]) -> list[tuple[str, int, int, int, int]]:
    """Token opcodes with quotes, dashes and full-width marks folded, so that curly
    quotes line up with straight ones mark for mark (a "replace" of equal length)."""
    ka = [translate_punctuation(tok) for tok in a]
    kb = [translate_punctuation(tok) for tok in b]
    out: list[tuple[str, int, int, int, int]] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, ka, kb, False).get_opcodes():
        if tag == "equal" and a[i1:i2] != b[j1:j2]:
            tag = "replace"
        out.append((tag, i1, i2, j1, j2))
    return out


def _hunks(a: list[str], b: list[str], theirs: bool) -> list[_Hunk]:
    out: list[_Hunk] = []
    for tag, i1, i2, j1, j2 in _aligned(a, b):
        if tag == "equal":
            continue
        if tag == "replace" and i2 - i1 == j2 - j1:  # token for token: one hunk each
            out.extend(
                _Hunk(i1 + k, i1 + k + 1, j1 + k, j1 + k + 1, (b[j1 + k],), theirs)
                for k in range(i2 - i1)
                if a[i1 + k] != b[j1 + k]
            )
        else:
            out.append(_Hunk(i1, i2, j1, j2, tuple(b[j1:j2]), theirs))
    return [_slid_clear(a, hunk, out) for hunk in out]


def _slid_clear(a: list[str], hunk: _Hunk, side: list[_Hunk]) -> _Hunk:
    """The hunk slid left (see :func:`_slid`), unless it would run into another hunk
    of the same side."""
    slid = _slid(a, hunk)
    if slid == hunk:
        return hunk
    others = [h for h in side if h is not hunk]
    lo, hi = slid.start, hunk.end
    if any((h.start < hi and lo < h.end) or lo <= h.start < hi for h in others):
        return hunk
    return slid


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


def _subsumes(big: _Hunk, small: _Hunk, base: list[str]) -> bool:
    """``big`` already makes ``small``'s change: it writes ``small``'s tokens at the
    same edge of the same place (the agent fixed the slip the file fixed, and more).
    A change of exactly those tokens counts only where it rewrites another token
    (``]`` made ``:``, next to the file's added ``:``), never where it adds them or
    only writes a token another way (``–`` made ``-``, next to an added ``-``)."""
    if not small.tokens:
        return False
    if big.tokens == small.tokens and (big.start == big.end or _format_only(base, big)):
        return False
    same_text = (small.start, small.end) == (big.start, big.end)
    if not big.theirs and small.start != small.end and same_text:
        # The agent rewrites the text the file rewrites, into fewer tokens (``countb``
        # made ``count(`` where the file has ``count(b``): it leaves out part of the
        # file's version, which is no fix the file made beside the agent's.
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


def merge_tokens(
    base: str,
    ours: str,
    theirs: str,
    tokens: TokenMap,
    line: int,
    sources: Sequence[str | None] | None = None,
) -> str:
    """Token-level three-way merge of one line's text; a token changed two ways conflicts.

    ``theirs`` is the agent's new line as sent: its tokens are first written the
    file's way where the whole block says how (a word the agent misspells the
    same way everywhere takes the file's spelling), so a slip the agent copied
    into the new line merges with the file's fix of it. ``sources``: where the tokens
    of ``theirs`` come from (see :meth:`TokenMap.mapped`).
    """
    a = TOKEN.findall(base)
    sent = TOKEN.findall(theirs)
    mapped = tokens.mapped(sent, sources)
    t = [m if m is not None else tok for tok, m in zip(sent, mapped, strict=True)]
    hunks = sorted(
        _typed_marks_stand(a, t, sources, _hunks(a, TOKEN.findall(ours), False))
        + _hunks(a, t, True),
        key=lambda h: (h.start, h.end),
    )
    chosen: list[_Hunk] = []
    shared: set[tuple[int, int, tuple[str, ...]]] = set()  # changes both sides make
    for hunk in hunks:
        key = (hunk.start, hunk.end, hunk.tokens)
        if any(c.theirs != hunk.theirs and (c.start, c.end, c.tokens) == key for c in chosen):
            shared.add(key)
            continue  # the same change on both sides
        twin = next((c for c in chosen if c.theirs != hunk.theirs and _subsumes(c, hunk, a)), None)
        if twin is not None:
            continue  # both sides make this insertion; the other side's hunk carries it
        twin = next((c for c in chosen if c.theirs != hunk.theirs and _subsumes(hunk, c, a)), None)
        if twin is not None:
            chosen[chosen.index(twin)] = hunk
            continue
        clashes = [c for c in chosen if c.theirs != hunk.theirs and c.clashes(hunk, a)]
        if not clashes:
            chosen.append(hunk)
            continue
        group = [*clashes, hunk]
        ours_hunks = [h for h in group if not h.theirs]
        theirs_hunks = [h for h in group if h.theirs]
        if len(theirs_hunks) == 1 and all(_format_only(a, h) for h in ours_hunks):
            # The file only writes those tokens another way (spacing, a quote
            # style): the agent's change to them wins, once. The file's way stays
            # for tokens beside it, and where the agent made the same change.
            mine = theirs_hunks[0]
            covered = [
                h
                for h in ours_hunks
                if ((h.start < mine.end and mine.start < h.end) or h.start < mine.start < h.end)
                and (h.start, h.end, h.tokens) not in shared
            ]
            chosen = [c for c in chosen if c not in covered]
            chosen += [h for h in group if h not in covered and h not in chosen]
            continue
        raise MergeConflict(line, base, ours)
    merged = _emit_tokens(a, t, mapped, chosen, line, theirs)
    if _balance(ours) == _balance(theirs) == 0 != _balance(merged):
        # Both the file's line and the agent's new line close what they open;
        # a merge that does not is a slip applied where the agent had fixed it.
        raise MergeConflict(line, base, ours)
    return merged


def _typed_marks_stand(
    a: list[str], t: list[str], sources: Sequence[str | None] | None, ours: list[_Hunk]
) -> list[_Hunk]:
    """The file's hunks, less those that would write the file's twin of a mark over a
    mark the agent adds: a lone mark the token alignment pairs with one of old_string's
    (a hyphen the agent types, lined up with a hyphen the file writes as a dash)."""
    if sources is None:
        return ours
    paired: dict[int, int] = {}
    for tag, i1, i2, j1, j2 in _aligned(a, t):
        if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
            paired.update(zip(range(i1, i2), range(j1, j2), strict=True))
    return [
        h
        for h in ours
        if not (
            h.one_for_one
            and _ascii_mark(a[h.start])
            and h.start in paired
            and sources[paired[h.start]] is None
            and _format_only(a, h)
        )
    ]


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
