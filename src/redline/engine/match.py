"""The match chain: where old_string sits in a file, strictest tier first.

The first tier that finds any candidate decides. One candidate is a match;
several are ambiguous (never "pick the first"). The fuzzy tiers accept a
candidate only when no other non-overlapping candidate comes within
:data:`CLEAR_MARGIN` of it.

All positions are offsets into the LF view of the file.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cached_property
from itertools import islice
from typing import TYPE_CHECKING, Any

from redline.engine import budget
from redline.engine.budget import TooLarge
from redline.engine.match_types import SIMILARITY, MatchType, chain, confidences
from redline.engine.records import record

if TYPE_CHECKING:
    from redline.engine import similarity
    from redline.engine.fold import Folded

# The tolerant tiers' modules (engine.fold, engine.similarity, engine.analysis) are
# imported where those tiers run: an exact edit never loads them.

# The edit tool's fixed confidences (engine.match_types: one table of every tier).
CONFIDENCE = confidences("edit")
# A match that tolerated anything reports at most this: never 1.0, whatever its
# similarity rounds to (a 300-line block with one typo is 0.99996 similar).
TOLERANT_CEILING = 0.9999
# The chain's tiers, strictest first (the recoveries beside it are engine.edit's).
TIERS = chain("edit")
CLEAR_MARGIN = 0.03
# Fuzzy tiers need this much non-whitespace text: shorter snippets are too
# easily similar to unrelated code.
MIN_FUZZY_CHARS = 10
_MAX_FUZZY_CANDIDATES = 40
_PREFILTER_SLACK = 0.2
_WORD = re.compile(r"\w")
_NOT_SPACE = re.compile(r"\S")  # what the whitespace fold keeps
_NEAR_PLACES = 64  # runs of lines the punctuation tier folds alone, at most
# From this size on, the punctuation and whitespace tiers work by line (with numpy's
# help); a smaller text is folded and mapped whole, cheaply and without numpy.
_BY_LINE = 1 << 14


def honest_confidence(match_type: str, score: float) -> float:
    """The confidence a match records: 1.0 for ``exact`` only; any other match its
    similarity, unrounded, and below 1 (at most :data:`TOLERANT_CEILING`), so that
    a policy's ``min_confidence = 1.0`` always refuses a tolerant match."""
    if match_type == "exact":
        return CONFIDENCE["exact"]
    return min(score, TOLERANT_CEILING)


@record(frozen=True)
class Span:
    """A matched stretch of the file's text: ``start`` and ``end`` offsets, and its ``score``."""

    start: int
    end: int
    score: float

    def overlaps(self, other: Span) -> bool:
        return self.start < other.end and other.start < self.end


@record(frozen=True)
class ChainResult:
    """The deciding tier and its candidates; ``nearest`` is the best miss.

    ``too_large``: the exact tiers found nothing and the tolerant ones did not run
    (the request is past the budget, see :mod:`redline.engine.budget`).
    """

    match_type: str | None
    spans: tuple[Span, ...] = ()
    nearest: Span | None = None
    too_large: TooLarge | None = None


class FileView:
    """The LF view of a file; lines, offsets and folds are computed when first needed."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._folds: dict[str, Folded] = {}
        self._found: dict[str, tuple[int, ...]] = {}
        self._counted = (0, 0)  # the last offset line_of counted up to, and its line

    def find_all(self, needle: str) -> tuple[int, ...]:
        """:func:`find_all` in the text, kept for the view: a request looks for
        old_string more than once (is it there at all, then where)."""
        found = self._found.get(needle)
        if found is None:
            found = self._found[needle] = tuple(find_all(self.text, needle))
        return found

    @cached_property
    def lines(self) -> list[str]:
        return self.text.split("\n")

    @cached_property
    def offsets(self) -> Any:
        """Start offset of every line, plus one past the end (a numpy array: an ASCII
        text's newlines found byte-wise, another's from its lines' lengths, in C;
        :meth:`offset` reads one as an int)."""
        import numpy as np  # a view's offsets serve the tolerant tiers, which load numpy

        if self.text.isascii():
            codes = np.frombuffer(self.text.encode("ascii"), dtype=np.uint8)
            return _after(np.flatnonzero(codes == ord("\n")), len(self.text) + 1)
        starts = np.zeros(len(self.lines) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, self.lines), np.int64, len(self.lines)), out=starts[1:])
        starts[1:] += np.arange(1, len(self.lines) + 1)  # each line's newline
        return starts

    def offset(self, line: int) -> int:
        """Start offset of line ``line`` (``len(lines)``: one past the end)."""
        return int(self.offsets[line])

    @cached_property
    def compact(self) -> str | None:
        """Each line's compact key, its newlines kept (:func:`compact_lines`, kept per
        content); None for a text with invisible characters or combining marks."""
        from redline.engine.analysis import ANALYSES
        from redline.engine.fold import compact_lines

        return ANALYSES.of(self.text, "compact_lines", lambda: compact_lines(self.text))

    @cached_property
    def skeleton(self) -> str | None:
        """The punctuation fold of the text without its whitespace, when made cheaply
        (from the whitespace fold, or the compact lines); else None."""
        from redline.engine.analysis import ANALYSES

        if self.text.isascii():  # its punctuation fold only deletes spaces
            return self.fold("whitespace").text
        compact = self.compact
        if compact is None:
            return None
        return ANALYSES.of(self.text, "skeleton", lambda: compact.replace("\n", ""))

    def fold(self, kind: str) -> Folded:
        if kind not in self._folds:
            from redline.engine.analysis import ANALYSES
            from redline.engine.fold import Folded

            # The strings of the fold are kept per content (engine.analysis); this
            # view's Folded, whose maps fill in as it is used, is its own.
            kept = ANALYSES.of(self.text, f"fold:{kind}", lambda: _fold_parts(self._made(kind)))
            self._folds[kind] = Folded(self.text, kept[0], kept[1], kept[2], kept[3])
        return self._folds[kind]

    def kept_origin(self, j: int) -> int:
        """The offset in the text of its ``j``-th character that is not whitespace
        (position ``j`` of the whitespace fold), found by line: in the line whose key
        holds it, the character it is among the line's own (needs the compact lines,
        whose keys are as long as each line's text without its whitespace)."""
        starts = self.skeleton_line_starts
        line = int(starts.searchsorted(j, side="right")) - 1
        begin, end = self.offset(line), self.offset(line + 1) - 1
        column = j - int(starts[line])
        kept = _NOT_SPACE.finditer(self.text, begin, end)
        return next(islice(kept, column, None)).start()

    @cached_property
    def skeleton_line_starts(self) -> Any:
        """Where each line's key starts in :attr:`skeleton` (a numpy array; a line
        with an empty key starts where the next one does). Needs the compact lines."""
        from redline.engine.analysis import ANALYSES

        assert self.compact is not None
        compact = self.compact
        return ANALYSES.of(self.text, "skeleton_lines", lambda: _key_starts(compact))

    def _made(self, kind: str) -> Folded:
        from redline.engine.fold import fold_punctuation, fold_whitespace

        if kind == "punctuation":
            return fold_punctuation(self.text)
        # An ASCII text's from its compact lines, which _twins needs as well.
        return fold_whitespace(self.text, self.compact if self.text.isascii() else None)

    def line_of(self, pos: int) -> int:
        """0-based line index of offset ``pos``."""
        if "offsets" in self.__dict__:  # made already: a search, not a count up to pos
            return int(self.offsets.searchsorted(pos, side="right")) - 1
        # Counted on from the last offset asked for when it is not past pos: the
        # matches of a replace_all are described in order, each in one short count.
        last, line = self._counted
        if last > pos:
            last = line = 0
        line += self.text.count("\n", last, pos)
        self._counted = (pos, line)
        return line

    def block_end(self, last_line: int, with_newline: bool) -> int:
        """Offset just past line ``last_line`` (and its newline when asked and present)."""
        end = self.offset(last_line + 1) - 1
        if with_newline and last_line < len(self.lines) - 1:
            end += 1
        return end


def _key_starts(compact: str) -> Any:
    import numpy as np

    if compact.isascii():
        codes = np.frombuffer(compact.encode("ascii"), dtype=np.uint8)
    else:
        codes = np.frombuffer(compact.encode("utf-32-le"), dtype="<u4")
    newlines = np.flatnonzero(codes == ord("\n"))
    # Line k starts after the k-th newline of the compact lines, which the skeleton
    # does not have: k characters earlier there.
    return _after(newlines - np.arange(1, len(newlines) + 1))


def _after(newlines: Any, end: int | None = None) -> Any:
    """Line starts from the offsets of the newlines (each line starts one past the
    newline before it), then ``end`` if given; read-only, as they may be kept (in
    4 bytes each where they fit)."""
    import numpy as np

    top = end if end is not None else int(newlines[-1]) + 1 if len(newlines) else 0
    wide = np.int64 if top >= 2**31 else np.int32
    starts = np.zeros(len(newlines) + 1 + (end is not None), dtype=wide)
    starts[1 : len(newlines) + 1] = newlines + 1
    if end is not None:
        starts[-1] = end
    starts.flags.writeable = False
    return starts


def _fold_parts(folded: Folded) -> tuple[str, str, tuple[re.Pattern[str], ...], str]:
    return folded.source, folded.text, folded._stages, folded.kind


def find_all(text: str, needle: str) -> list[int]:
    """Every start of ``needle`` in ``text``, overlapping occurrences included."""
    found: list[int] = []
    pos = text.find(needle)
    while pos != -1:
        found.append(pos)
        pos = text.find(needle, pos + 1)
    return found


def match_chain(
    view: FileView, old: str, threshold: float, new: str = "", limit: int = budget.LIMIT
) -> ChainResult:
    """Run the tiers in order; see the module docstring.

    The tolerant tiers (from ``punctuation`` on) run only within ``limit``, the
    budget of character comparisons for ``old`` (and ``new``, adapted to the
    match) against this file.
    """
    for name in _UNBUDGETED:
        spans = _FIND[name](view, old)
        if spans:
            return ChainResult(name, tuple(spans))
    fuzzy_too = len("".join(old.split())) >= MIN_FUZZY_CHARS
    lines = view.lines if "\n" not in old and fuzzy_too else None
    over = budget.check(old, view.text, new=new, lines=lines, fuzzy=fuzzy_too, limit=limit)
    if over is not None:
        return ChainResult(None, too_large=over)
    for name in _BUDGETED:
        spans = _FIND[name](view, old)
        if spans:
            return ChainResult(name, tuple(spans))
    if not fuzzy_too:
        return ChainResult(None)
    fuzzy = _Fuzzy(view, old)
    best_miss: Span | None = None
    for name, candidates in zip(SIMILARITY, (fuzzy.windows, fuzzy.blocks), strict=True):
        found = candidates()
        accepted = [s for s in found if s.score >= threshold]
        if accepted:
            winners = _clear_winner(accepted)
            if len(winners) == 1:
                winners += _twins(view, winners[0])
            return ChainResult(name, tuple(winners))
        if found:
            top = max(found, key=lambda s: s.score)
            if best_miss is None or top.score > best_miss.score:
                best_miss = top
    return ChainResult(None, nearest=best_miss)


def inside_indentation(text: str, pos: int, old: str) -> bool:
    """``old`` begins with indentation and is found at ``pos`` after part of a line's
    indentation: the line is deeper than old_string says, which is a whitespace
    difference (mapped by depth), not the exact text."""
    if old[:1] not in (" ", "\t"):
        return False
    line_start = text.rfind("\n", 0, pos) + 1
    return line_start < pos and not text[line_start:pos].strip(" \t")


def _exact(view: FileView, old: str) -> list[Span]:
    return [
        Span(p, p + len(old), CONFIDENCE["exact"])
        for p in view.find_all(old)
        if not inside_indentation(view.text, p, old)
    ]


def _trailing_newline(view: FileView, old: str) -> list[Span]:
    body = old[:-1]
    if old.endswith("\n") and body and view.text.endswith(body):
        start = len(view.text) - len(body)
        if not inside_indentation(view.text, start, old):
            return [Span(start, len(view.text), CONFIDENCE["trailing_newline"])]
    return []


def _punctuation(view: FileView, old: str) -> list[Span]:
    # A line-starting old_string never matches after part of a line's indentation
    # (it would leave the rest of the indentation in front of the replacement), and a
    # line-terminated one never matches part of a longer line.
    from redline.engine.fold import fold_punctuation, without_spaces

    needle = fold_punctuation(old)
    skeleton = view.skeleton
    key = without_spaces(needle.text)
    if skeleton is not None and key not in skeleton:
        # A needle the file's punctuation fold holds is in it with every space removed
        # too. The whole fold (a regex pass over the text) is not made for nothing.
        return []
    near = None
    if skeleton is not None and key and len(view.text) > _BY_LINE:
        near = _punctuation_near(view, skeleton, needle, key)
    spans = _folded_tier(view, old, "punctuation", needle) if near is None else near
    return [s for s in spans if _whole_lines(view.text, s, old)]


def _punctuation_near(view: FileView, skeleton: str, needle: Folded, key: str) -> list[Span] | None:
    """:func:`_folded_tier`'s punctuation spans, found by folding only the lines around
    each place the needle's ``key`` (its text without spaces) is in the skeleton; None
    when the key is in more than :data:`_NEAR_PLACES` places (the whole fold, kept
    per content, is cheaper than that many small ones).

    The fold of such a text deletes spaces within a line only, so a run of whole
    lines folds alone as it does in the whole text. A match's first character that
    is not a space is where the key is, and the match spans as many newlines as the
    needle: it lies within that many lines of that place on either side."""
    from redline.engine.fold import fold_punctuation

    starts = view.skeleton_line_starts
    reach = needle.text.count("\n")
    last_line = len(starts) - 1
    ranges: list[list[int]] = []
    for at in find_all(skeleton, key):
        line = int(starts.searchsorted(at, side="right")) - 1
        first, last = max(0, line - reach), min(last_line, line + reach)
        if ranges and first <= ranges[-1][1]:  # overlapping: searched once
            ranges[-1][1] = max(ranges[-1][1], last)
        elif len(ranges) == _NEAR_PLACES:
            return None
        else:
            ranges.append([first, last])
    text, spans = view.text, []
    for first, last in ranges:
        base = view.offset(first)
        local = fold_punctuation(text[base : view.offset(last + 1) - 1])
        for pos in find_all(local.text, needle.text):
            start, end = local.span(pos, pos + len(needle.text))
            if _clean_edges(text, base + start, base + end, needle.text):
                spans.append(Span(base + start, base + end, CONFIDENCE["punctuation"]))
    return spans


def _whitespace(view: FileView, old: str) -> list[Span]:
    from redline.engine.fold import fold_whitespace

    spans = _folded_tier(view, old, "whitespace", fold_whitespace(old))
    wide = [_extend_whitespace(view.text, s, old) for s in spans]
    return [s for s in wide if s is not None and _whole_lines(view.text, s, old)]


def _whole_lines(text: str, span: Span, old: str) -> bool:
    """A line-terminated old_string matches whole lines only, never part of a longer one."""
    if old.endswith("\n") and not (span.end == len(text) or text[span.end - 1] == "\n"):
        return False
    starts_line = old.startswith("\n") or old[:1] in (" ", "\t")
    return not starts_line or span.start == 0 or text[span.start - 1] == "\n"


def _folded_tier(view: FileView, old: str, kind: str, needle: Folded) -> list[Span]:
    if not needle.text:
        return []
    folded = view.fold(kind)
    # The whitespace fold of a large text with compact lines is mapped back by line,
    # not by an index of every character the fold keeps.
    by_line = kind == "whitespace" and len(view.text) > _BY_LINE and view.compact is not None
    spans = []
    for pos in find_all(folded.text, needle.text):
        if by_line:
            last = pos + len(needle.text) - 1
            start, end = view.kept_origin(pos), view.kept_origin(last) + 1
        else:
            start, end = folded.span(pos, pos + len(needle.text))
        if _clean_edges(view.text, start, end, needle.text):
            spans.append(Span(start, end, CONFIDENCE[kind]))
    return spans


def _clean_edges(text: str, start: int, end: int, needle: str) -> bool:
    """A tolerant match must not begin or end inside a word the needle does not."""
    if _WORD.match(needle[0]) and start > 0 and _WORD.match(text[start - 1]):
        return False
    return not (_WORD.match(needle[-1]) and end < len(text) and _WORD.match(text[end]))


def _extend_whitespace(text: str, span: Span, old: str) -> Span | None:
    """Widen a whitespace-tier span over the whitespace old_string has around its text:
    the indentation, the line end, and its blank lines — which must be whole blank
    lines of the file too (None otherwise: a blank line old_string has where the file
    has text is not a difference in whitespace)."""
    start, end = span.start, span.end
    body = old.strip()
    lead = old[: old.index(body)] if body else ""
    trail = old[len(lead) + len(body) :]
    blank = " \t"
    if lead:
        while start > 0 and text[start - 1] in blank:
            start -= 1
        for _ in range(lead.count("\n")):
            if start == 0 or text[start - 1] != "\n":
                return None
            start -= 1
            while start > 0 and text[start - 1] in blank:
                start -= 1
        if "\n" in lead and start > 0 and text[start - 1] != "\n":
            return None
    if trail:
        while end < len(text) and text[end] in blank:
            end += 1
        newlines = trail.count("\n")
        for n in range(newlines):
            if end == len(text) and n == newlines - 1:
                break  # the file's last line, without its newline
            if end == len(text) or text[end] != "\n":
                return None
            end += 1
            if n + 1 < newlines or trail[-1] != "\n":
                while end < len(text) and text[end] in blank:
                    end += 1
    return Span(start, end, span.score)


def _clear_winner(spans: list[Span]) -> list[Span]:
    """The best span alone, or every non-overlapping rival within the margin."""
    ranked = sorted(spans, key=lambda s: (-s.score, s.start))
    chosen: list[Span] = []
    for span in ranked:
        if not any(span.overlaps(c) for c in chosen):
            chosen.append(span)
    best = chosen[0]
    rivals = [s for s in chosen[1:] if s.score >= best.score - CLEAR_MARGIN]
    return [best, *rivals]


def _twins(view: FileView, best: Span) -> list[Span]:
    """Other blocks of whole lines that read as ``best`` does once spacing and
    punctuation are folded away (the same lines indented or spaced otherwise): the
    fuzzy score tells them apart only by their layout, which says nothing of which
    one old_string quotes."""
    first, last = view.line_of(best.start), view.line_of(max(best.start, best.end - 1))
    if view.offset(first) != best.start:
        return []  # part of a line: its twins are not whole lines
    lines = _FoldedLines(view)
    if lines.count != len(view.lines):
        return []
    key = lines.key
    quoted = [key(i) for i in range(first, last + 1) if key(i)]
    if not quoted:
        return []
    piece = max(
        lines.line(first + next(k for k in range(last - first + 1) if key(first + k))).split(),
        key=len,
    )
    ends_line = view.text[best.end - 1 : best.end] == "\n"
    twins: list[Span] = []
    for i in lines.keyed(quoted[0], piece):
        if first <= i <= last:
            continue
        j, n = i, 0
        while j < lines.count and n < len(quoted):
            if key(j):
                if key(j) != quoted[n]:
                    break
                n += 1
            j += 1
        if n == len(quoted):
            span = Span(view.offset(i), view.block_end(j - 1, ends_line), best.score)
            if not span.overlaps(best) and not any(span.overlaps(t) for t in twins):
                twins.append(span)
    return twins


class _FoldedLines:
    """The punctuation-folded lines of a file, and each one's compact key (its folded
    text without spaces), for :func:`_twins`.

    A file without invisible characters or combining marks is not folded whole: its
    fold only translates marks 1:1 and deletes spaces, so a line's key is the line
    without its whitespace, translated, and the lines with a given key are found in
    one pass over the file's compact lines; a line is folded when it is looked at.
    Any other file is folded whole (the fold is kept per content).
    """

    def __init__(self, view: FileView) -> None:
        from redline.engine.fold import punctuation_key

        self._lines = view.lines
        self._key = punctuation_key
        self._compact = view.compact  # the keys, a line each, or None
        self._folded: list[str] | None = None
        if self._compact is None:
            self._folded = view.fold("punctuation").text.split("\n")
            self.count = len(self._folded)
        else:  # the compact lines keep every newline: one key a line
            self.count = len(self._lines)
        self._keys: dict[int, str] = {}

    def line(self, i: int) -> str:
        if self._folded is not None:
            return self._folded[i]
        return self._key(self._lines[i])

    def key(self, i: int) -> str:
        if i not in self._keys:
            self._keys[i] = "".join(self.line(i).split())
        return self._keys[i]

    def keyed(self, wanted: str, piece: str) -> list[int]:
        """The lines whose key is ``wanted`` and whose folded text holds ``piece``, in order."""
        if self._folded is not None:
            return [
                i for i, line in enumerate(self._folded) if piece in line and self.key(i) == wanted
            ]
        assert self._compact is not None
        found: list[int] = []
        # In "\n" + keys + "\n", the k-th newline comes before line k.
        text, needle = f"\n{self._compact}\n", f"\n{wanted}\n"
        line = counted = 0
        at = text.find(needle)
        while at >= 0:
            line += text.count("\n", counted, at)
            counted = at
            if piece in self.line(line):
                found.append(line)
            at = text.find(needle, at + 1)
        return found


class _Fuzzy:
    """Candidates of the two fuzzy tiers, sharing one computation of line similarities."""

    def __init__(self, view: FileView, old: str) -> None:
        self.view = view
        self.old = old
        self.with_newline = old.endswith("\n")
        body = old[:-1] if self.with_newline else old
        self.old_lines = body.split("\n")
        self._scores: similarity.LineScores | None = None

    @property
    def scores(self) -> similarity.LineScores:
        from redline.engine import similarity

        if self._scores is None:
            tabs = None if "\t" in self.view.text else False  # no tab: none to look for
            self._scores = similarity.line_scores(self.old_lines, self.view.lines, tabs)
        return self._scores

    def windows(self) -> list[Span]:
        """``fuzzy``: character similarity of windows around old_string's length."""
        from redline.engine import similarity

        if len(self.old_lines) == 1 and not self.with_newline:
            return self._fragment_windows()
        n = len(self.old_lines)
        total = len(self.view.lines)
        estimate = similarity.window_means(self.scores.best, min(n, total))
        floor = 0.0 if len(estimate) == 0 else float(estimate.max()) - _PREFILTER_SLACK
        starts = [i for i in _best_first(estimate) if estimate[i] >= floor]
        windows: list[tuple[int, int, int]] = []  # (start line, start, end)
        for i in starts:
            for size in (n - 1, n, n + 1):
                if size < 1 or i + size > total:
                    continue
                start = self.view.offset(i)
                windows.append((i, start, self.view.block_end(i + size - 1, self.with_newline)))
        if not windows:
            return []
        # All windows at once: one call, which lets the other threads run meanwhile.
        scores = similarity.ratios(self.old, [self.view.text[a:b] for _, a, b in windows])
        best: dict[int, Span] = {}
        for (i, start, end), score in zip(windows, scores, strict=True):
            if i not in best or float(score) > best[i].score:
                best[i] = Span(start, end, float(score))
        return [best[i] for i in starts if i in best]

    def _fragment_windows(self) -> list[Span]:
        from redline.engine import similarity

        lines = self.view.lines
        scores = similarity.partial_scores(self.old, lines)
        spans: list[Span] = []
        for j in _best_first(scores):
            if scores[j] <= 0:
                break
            refined = _refine(self.old, lines[j])
            if refined is None:
                continue
            start, end = refined
            base = self.view.offset(j)
            spans.append(
                Span(base + start, base + end, similarity.ratio(self.old, lines[j][start:end]))
            )
        return spans

    def blocks(self) -> list[Span]:
        """``line_fuzzy``: mean per-line similarity of blocks with old_string's line count."""
        n = len(self.old_lines)
        if n < 2:
            return []
        means = self.scores.means
        if len(means) == 0:
            return []
        return [
            Span(
                self.view.offset(i),
                self.view.block_end(i + n - 1, self.with_newline),
                float(means[i]),
            )
            for i in _best_first(means)
        ]


def _best_first(scores: Any) -> list[int]:
    """The indices of the :data:`_MAX_FUZZY_CANDIDATES` highest ``scores`` (a numpy
    array), highest first, equal ones in index order (as a stable sort of all gives)."""
    import numpy as np

    values = np.asarray(scores, dtype=np.float64)
    top = _MAX_FUZZY_CANDIDATES
    if len(values) > top and not np.isnan(values).any():
        # Only the entries at least as high as the top-th highest can be among the
        # first: they are ranked, not the whole file's lines (a partition is linear).
        kth = np.partition(values, len(values) - top)[len(values) - top]
        chosen = np.flatnonzero(values >= kth)  # in index order
        order = chosen[np.argsort(-values[chosen], kind="stable")]
    else:
        order = np.argsort(-values, kind="stable")
    return [int(i) for i in order[:top]]


def _cuts_a_word(line: str, at: int) -> bool:
    return 0 < at < len(line) and bool(_WORD.match(line[at - 1]) and _WORD.match(line[at]))


def _refine(needle: str, line: str) -> tuple[int, int] | None:
    """The span of ``line`` most similar to ``needle`` that starts and ends at word edges
    (a span cutting a word in two would rewrite half of it), or None."""
    from redline.engine import similarity

    start, end, _ = similarity.partial_alignment(needle, line)
    best: tuple[int, int] | None = None
    best_score = -1.0
    for s in range(max(0, start - 3), min(len(line), start + 4)):
        for e in range(max(s + 1, end - 3), min(len(line), end + 3) + 1):
            if _cuts_a_word(line, s) or _cuts_a_word(line, e):
                continue
            score = round(similarity.ratio(needle, line[s:e]), 6)
            if score > best_score:
                best, best_score = (s, e), score
    return best


# How each tier of the chain with a fixed confidence finds its candidates; the order is
# engine.match_types's, and from the first budgeted tier on they run within the budget.
_FIND: dict[MatchType, Callable[[FileView, str], list[Span]]] = {
    "exact": _exact,
    "trailing_newline": _trailing_newline,
    "punctuation": _punctuation,
    "whitespace": _whitespace,
}
_FIXED = [name for name in TIERS if name not in SIMILARITY]
_UNBUDGETED = tuple(_FIXED[: _FIXED.index("punctuation")])
_BUDGETED = tuple(_FIXED[_FIXED.index("punctuation") :])
