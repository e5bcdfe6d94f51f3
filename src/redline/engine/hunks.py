"""Applying the hunks of one ``*** Update File`` to a file's text.

Hunks apply in order, each searching from after the previous one (a pure
addition with no anchor found goes at the end of the file, as in Codex, and
does not move that point). The passes: exact, trailing whitespace ignored,
surrounding whitespace ignored and punctuation/space folding; in each the hunk
must match exactly one place (several are refused, never the first, where Codex
takes the first). An ``@@`` anchor found bounds the search to its section: from
the anchor line to the next line that is the anchor again. Context
lines keep the file's bytes; only '-' lines are removed and '+' lines added —
adapted to the file's format (indentation by depth, marks) when the hunk was
placed with tolerance, as an edit's are, or refused where that is a guess.
Added lines take the file's newline style; in a mixed file a line that
replaces a removed line takes that line's ending, and a pure addition the
ending of the line that follows it (at the end of the file, of the line before
it). The updated file always ends with a newline.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from difflib import SequenceMatcher
from functools import cached_property
from itertools import pairwise
from operator import itemgetter

from redline.engine import budget, invisible
from redline.engine.analysis import Characters
from redline.engine.budget import TooLarge
from redline.engine.errors import MergeConflict, RedlineError, TooDifferent
from redline.engine.fold import punctuation_key
from redline.engine.indent import Style, indentation, style
from redline.engine.match_types import confidences
from redline.engine.merge import adapt
from redline.engine.patch_parse import Hunk, HunkLine

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
# The passes in order, with their confidences (engine.match_types: one table of every tier).
CONFIDENCE = confidences("apply_patch")
TOLERANT = tuple(name for name in CONFIDENCE if name != "exact")  # each must fit one place
TOLERATES = {
    "rstrip": "trailing whitespace",
    "strip": "whitespace",
    "punctuation": "punctuation/space",
}


def _folded(line: str) -> str:
    return "".join(punctuation_key(line).split())


@dataclass(frozen=True)
class HunkEvidence:
    """How one hunk was placed. Lines are 1-based in the file before the patch."""

    hunk: int  # 1-based position of the hunk in its Update
    match_type: str  # exact | rstrip | strip | punctuation
    confidence: float
    start_line: int
    end_line: int  # start_line - 1 for a hunk that removes and keeps nothing
    other_matches: int  # other places this hunk's lines also match
    anchor_found: bool | None  # None when the hunk has no '@@' anchor
    matched_text: str
    sent_text: str = ""  # the hunk's context and '-' lines, as the patch gives them


class HunkError(RedlineError):
    """A hunk could not be placed; the message says which and why."""

    def __init__(self, message: str, hunk: int) -> None:
        self.hunk = hunk
        super().__init__(message)


@dataclass
class _Line:
    text: str
    ending: str | None  # None: an added line whose ending is decided at the end


def split_lines(text: str) -> list[tuple[str, str]]:
    """``(content, ending)`` for every line of ``text``; the last ending may be ''."""
    if "\r" not in text:  # LF only: split in C (a 100,000-line file in milliseconds)
        contents = text.split("\n")
        last = contents.pop()
        endings = ["\n"] * len(contents)
        if last:  # the last line has no newline
            contents.append(last)
            endings.append("")
        return list(zip(contents, endings, strict=True))
    out = []
    for raw in _LINE.findall(text):
        content = raw.rstrip("\r\n")
        out.append((content, raw[len(content) :]))
    return out


def apply_hunks(
    text: str, hunks: Sequence[Hunk], path: str, limit: int = budget.LIMIT
) -> tuple[str, list[HunkEvidence], Counter[str]]:
    """The updated text, the evidence per hunk and the invisible characters removed.

    The tolerant passes run only when the hunks' lines against this file fit in
    ``limit`` (see :mod:`redline.engine.budget`); past it, hunks are placed exactly.
    """
    lines = split_lines(text)
    keyed = _Keyed(list(map(itemgetter(0), lines)))
    keyed.too_large = budget.check(
        "".join(h.text + "\n" for hunk in hunks for h in hunk.lines if h.kind != "+"),
        text,
        new="".join(h.text + "\n" for hunk in hunks for h in hunk.lines if h.kind != "-"),
        limit=limit,
    )
    cursor = 0
    placed: list[tuple[int, int, Hunk]] = []  # (start index, old length, hunk)
    evidence: list[HunkEvidence] = []
    for number, given in enumerate(hunks, start=1):
        hunk = given
        try:
            start, ev = _place(keyed, hunk, cursor, number, len(hunks), path)
        except HunkError:
            # A blank line a model leaves after a hunk parses as empty context;
            # when it does not match, the hunk without it may.
            if not (hunk.lines and hunk.lines[-1] == HunkLine(" ", "")):
                raise
            hunk = replace(hunk, lines=hunk.lines[:-1])
            start, ev = _place(keyed, hunk, cursor, number, len(hunks), path)
        old_len = sum(1 for h in hunk.lines if h.kind != "+")
        if ev.match_type != "exact" and any(h.kind == "+" for h in hunk.lines):
            file_lines = [c for c, _ in lines[start : start + old_len]]
            hunk = _adapted(hunk, file_lines, ev.match_type, keyed, number, len(hunks), path)
        placed.append((start, old_len, hunk))
        evidence.append(ev)
        if old_len or ev.anchor_found:
            cursor = start + old_len
        # else: a pure addition appended at the end of the file, as Codex does;
        # the hunks after it still search from the cursor.
    placed.sort(key=lambda p: p[0])  # stable: insertions at one place keep the patch's order
    styles = Counter(map(itemgetter(1), lines))
    del styles[""]  # the unterminated last line's
    removed: Counter[str] = Counter()
    out: list[_Line] = []
    pos = 0
    for start, old_len, hunk in placed:
        out += _kept(lines, pos, start)
        k = start
        replaced: list[str] = []  # endings of this change's removed lines not yet replaced
        for hline in hunk.lines:
            if hline.kind == " ":
                out.append(_Line(*lines[k]))
                k += 1
                replaced.clear()
            elif hline.kind == "-":
                replaced.append(lines[k][1])
                k += 1
            else:
                cleaned, gone = invisible.clean(hline.text)
                removed += gone
                ending = _replacement_ending(replaced.pop(0), styles) if replaced else None
                out.append(_Line(cleaned, ending))
        pos = start + old_len
    out += _kept(lines, pos, len(lines))
    return _join(out, styles), evidence, removed


def _kept(lines: list[tuple[str, str]], start: int, end: int) -> list[_Line]:
    """The file's lines ``start``..``end``, which the patch keeps as they are: their
    first and last lines as lines (whose endings :func:`_join` may read or settle), and
    the lines between as one, joined in C. No ending in between can change: each of
    them is a newline the file has, between two lines of the file."""
    if end - start <= 2:
        return [_Line(c, e) for c, e in lines[start:end]]
    inner_content, inner_ending = lines[end - 2]
    inner = "".join(map("".join, lines[start + 1 : end - 2])) + inner_content
    return [_Line(*lines[start]), _Line(inner, inner_ending), _Line(*lines[end - 1])]


def _adapted(
    hunk: Hunk,
    file_lines: list[str],
    match_type: str,
    keyed: _Keyed,
    number: int,
    total: int,
    path: str,
) -> Hunk:
    """The hunk with its '+' lines written the file's way (see :mod:`redline.engine.merge`).

    A hunk placed with whitespace or punctuation tolerance quotes the file in
    another format; its added lines are adapted to the file's format as an edit
    is, so a format-only difference never writes a third text.
    """
    if match_type == "strip" and _only_context_stripped(hunk, file_lines):
        return hunk  # written as given, as Codex writes it
    old = [h.text for h in hunk.lines if h.kind != "+"]
    new = [h.text for h in hunk.lines if h.kind != "-"]
    tier = "punctuation" if match_type == "punctuation" else "whitespace"
    try:
        text = adapt(
            _joined(old),
            _joined(new),
            _joined(file_lines),
            tier,
            line_start=True,
            line_end=True,
            style=lambda: keyed.style,
            file_chars=keyed.chars,
        )
    except (MergeConflict, TooDifferent) as refused:
        raise HunkError(
            f"hunk not found ({number}/{total}) in {path}: its lines match only with "
            f"{match_type} differences, and {refused}; re-read the file and copy the "
            "hunk's context and '-' lines from it",
            number,
        ) from None
    adapted = text.split("\n")[:-1]
    lines: list[HunkLine] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, file_lines, adapted, False).get_opcodes():
        if tag == "equal":
            lines.extend(HunkLine(" ", line) for line in file_lines[i1:i2])
            continue
        lines.extend(HunkLine("-", line) for line in file_lines[i1:i2])
        lines.extend(HunkLine("+", line) for line in adapted[j1:j2])
    return replace(hunk, lines=tuple(lines))


def _only_context_stripped(hunk: Hunk, file_lines: list[str]) -> bool:
    """The hunk's context lines lost their indentation, and its '-' lines are the
    file's exactly — some of them indented, so the agent wrote the lines it changes
    at the file's columns: its '+' lines are at the file's columns too."""
    removed = stripped = indented = False
    for line, file_line in zip((h for h in hunk.lines if h.kind != "+"), file_lines, strict=True):
        if line.kind == "-":
            if line.text != file_line:
                return False
            removed = True
            indented = indented or bool(file_line.strip() and indentation(file_line))
        elif line.text != file_line:
            if line.text[:1] in (" ", "\t") or line.text.rstrip() != file_line.strip():
                return False
            stripped = True
    return removed and stripped and indented


def _joined(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


def _replacement_ending(ending: str, styles: Counter[str]) -> str | None:
    """The ending a line replacing a line that ended with ``ending`` keeps, if any.

    In a mixed file the replacement keeps the replaced line's ending, unless that
    ending is the file's only one of its kind (a stray, as in Codex's scenario
    024): then, like an added line, it follows its neighbours. None: decided
    with the added lines.
    """
    if len(styles) < 2 or not ending or styles[ending] < 2:
        return None
    return ending


def _join(out: list[_Line], styles: Counter[str]) -> str:
    default = styles.most_common(1)[0][0] if styles else "\n"
    mixed = len(styles) > 1
    for line in out[:-1]:
        if line.ending == "":
            # The file's unterminated last line, now followed by added lines.
            line.ending = None
    following: str | None = None
    # Walk backwards so each added line knows the ending of the line after it.
    for line in reversed(out):
        if line.ending is None:
            line.ending = following if (mixed and following) else None
        elif line.ending:
            following = line.ending
    previous: str | None = None
    for line in out:
        if line.ending is None:
            line.ending = (previous if mixed and previous else None) or default
        if line.ending:
            previous = line.ending
    if out and not out[-1].ending:
        out[-1].ending = default
    for before, line in pairwise(out):
        if before.ending == "\r" and not line.text and line.ending == "\n":
            # CR then LF would read back as one CRLF newline: end the empty
            # line like the line before it.
            line.ending = "\r"
    return "".join(line.text + (line.ending or "") for line in out)


class _Keyed:
    """A file's lines under each pass's key, indexed by line, built on first use."""

    def __init__(self, contents: list[str]) -> None:
        self.contents = contents
        self.too_large: TooLarge | None = None  # past the budget: exact placement only
        self._views: dict[str, list[str]] = {}
        self._index: dict[str, dict[str, list[int]]] = {}
        self._scans: Counter[str] = Counter()  # look-ups made without the index, per key

    @cached_property
    def style(self) -> Style:
        return style(self.contents)

    @cached_property
    def chars(self) -> Characters:
        return Characters("".join(self.contents))

    def view(self, name: str) -> list[str]:
        if name not in self._views:
            key = KEYS[name]
            self._views[name] = self.contents if name == "exact" else list(map(key, self.contents))
        return self._views[name]

    def all(self, name: str, old: list[str], start: int) -> list[int]:
        """Every index >= ``start`` where ``old`` matches under ``name``'s key."""
        view = self.view(name)
        key = KEYS[name]
        target = [key(line) for line in old]
        n = len(target)
        found = self._index.get(name)
        distinct = set(target)
        if found is None and len(distinct) <= _SCAN_LINES and self._scans[name] < _SCANS:
            # The first look-ups of a few lines scan the file in C; an index of every
            # line (a dict built line by line) pays off for a patch of many hunks or
            # of many lines.
            self._scans[name] += 1
            counts = {line: view.count(line) for line in distinct}
            # Look where old's rarest line is (a blank first line would be everywhere).
            k = min(range(n), key=lambda k: counts[target[k]])
            return [
                p - k
                for p in _positions(view, target[k], start + k)
                if view[p - k : p - k + n] == target
            ]
        if found is None:
            found = self._index[name] = {}
            for i, line in enumerate(view):
                found.setdefault(line, []).append(i)
        k = min(range(n), key=lambda k: len(found.get(target[k], ())))
        at = found.get(target[k], [])
        return [
            p - k for p in at[bisect_left(at, start + k) :] if view[p - k : p - k + n] == target
        ]

    def seek(self, name: str, old: list[str], start: int) -> int | None:
        found = self.all(name, old, start)
        return found[0] if found else None


_SCANS = 8  # look-ups per key answered by scanning before the index is built
_SCAN_LINES = 8  # distinct lines of a look-up answered by scanning (a count of the file each)


def _positions(lines: list[str], line: str, start: int) -> list[int]:
    """Every index >= ``start`` of ``line`` in ``lines``, found by ``list.index`` (in C)."""
    out: list[int] = []
    at = start
    while True:
        try:
            at = lines.index(line, at)
        except ValueError:
            return out
        out.append(at)
        at += 1


KEYS: dict[str, Callable[[str], str]] = {
    "exact": lambda s: s,
    "rstrip": str.rstrip,
    "strip": str.strip,
    "punctuation": _folded,
}


def _place(
    lines: _Keyed, hunk: Hunk, cursor: int, number: int, total: int, path: str
) -> tuple[int, HunkEvidence]:
    """Where the hunk's old lines are, trying after each ``@@`` anchor line first.

    The anchor is soft: when no anchor line is followed by the hunk's lines (or
    none is found), the lines alone are matched from the cursor.
    """
    contents = lines.contents
    old = [h.text for h in hunk.lines if h.kind != "+"]
    anchors = _anchors(lines, hunk.anchor, cursor) if hunk.anchor and hunk.anchor.strip() else []
    has_anchor = bool(hunk.anchor and hunk.anchor.strip())
    if not old:
        # Pure addition: after the anchor line when found, else at the end of the file.
        index = anchors[0] + 1 if anchors else len(contents)
        evidence = HunkEvidence(
            number, "exact", 1.0, index + 1, index, 0, bool(anchors) if has_anchor else None, ""
        )
        return index, evidence
    for i, at in enumerate(anchors):
        until = anchors[i + 1] if i + 1 < len(anchors) else len(contents)
        try:
            placed = _place_body(lines, hunk, old, at + 1, until, cursor, number, total, path, True)
        except HunkError:
            continue
        if placed is not None:
            return placed
    placed = _place_body(
        lines,
        hunk,
        old,
        cursor,
        len(contents),
        cursor,
        number,
        total,
        path,
        False if has_anchor else None,
    )
    if placed is not None:
        return placed
    message = _not_found(contents, old, cursor, number, total, path, hunk)
    if lines.too_large is not None:
        message += f". Only an exact match was tried: {lines.too_large.message}"
    raise HunkError(message, number)


def _place_body(
    lines: _Keyed,
    hunk: Hunk,
    old: list[str],
    start_at: int,
    until: int,
    cursor: int,
    number: int,
    total: int,
    path: str,
    anchor_found: bool | None,
) -> tuple[int, HunkEvidence] | None:
    """Where the hunk's lines start in ``start_at``..``until`` (a place may run past
    ``until``), under the first pass that finds any; None: no pass does. Several places
    under one pass are refused (HunkError), naming them."""
    contents = lines.contents
    if hunk.end_of_file:
        found = _at_end(contents, old, tolerant=lines.too_large is None)
        if found is not None and found[1] >= max(start_at, cursor):
            name, at = found  # not over the previous hunk's lines, nor before the anchor
            return at, _evidence(contents, number, name, at, old, 0, anchor_found)
        return None
    passes = ("exact",) if lines.too_large is not None else ("exact", *TOLERANT)
    for name in passes:
        candidates = [c for c in lines.all(name, old, start_at) if c < until]
        if len(candidates) == 1:
            others = len(lines.all(name, old, 0)) - 1
            return candidates[0], _evidence(
                contents, number, name, candidates[0], old, others, anchor_found
            )
        if len(candidates) > 1:
            where = ", ".join(str(c + 1) for c in candidates)
            how = "exactly" if name == "exact" else f"only with {TOLERATES[name]} differences"
            raise HunkError(
                f"hunk not found ({number}/{total}) in {path}: its lines match {how}, at "
                f"{len(candidates)} places (lines {where}); add context lines or an '@@' "
                "anchor so that one place fits",
                number,
            )
    return None


def _at_end(contents: list[str], old: list[str], tolerant: bool) -> tuple[str, int] | None:
    """Match ``old`` at the end of the file (trailing blank lines allowed)."""
    end = len(contents)
    while end > 0 and not contents[end - 1].strip() and old[-1].strip():
        end -= 1
    index = end - len(old)
    if index < 0:
        return None
    window = contents[index:end]
    for name in CONFIDENCE if tolerant else ("exact",):
        key = KEYS[name]
        if [key(line) for line in window] == [key(line) for line in old]:
            return name, index
    return None


def _anchors(lines: _Keyed, anchor: str, cursor: int) -> list[int]:
    """Every line from the cursor on that is the anchor, ignoring surrounding whitespace."""
    return lines.all("strip", [anchor], cursor)


def _evidence(
    contents: list[str],
    number: int,
    name: str,
    index: int,
    old: list[str],
    others: int,
    anchor_found: bool | None,
) -> HunkEvidence:
    matched = "\n".join(contents[index : index + len(old)])
    return HunkEvidence(
        number,
        name,
        CONFIDENCE[name],
        index + 1,
        index + len(old),
        max(0, others),
        anchor_found,
        matched,
        "\n".join(old),
    )


def _not_found(
    contents: list[str], old: list[str], cursor: int, number: int, total: int, path: str, hunk: Hunk
) -> str:
    first = next((line for line in old if line.strip()), old[0])
    head = f"hunk not found ({number}/{total}) in {path}: expected line {first!r}"
    stripped = first.strip()
    whole = [i for i, c in enumerate(contents) if c.strip() == stripped]
    if hunk.end_of_file:
        return (
            f"{head} at the end of the file (the hunk has *** End of File); "
            "re-read the file's last lines"
        )
    if whole and all(i < cursor for i in whole):
        return (
            f"{head}: it is at line {whole[0] + 1}, before the previous hunk (which ends at "
            f"line {cursor}); hunks must follow the order of the file"
        )
    if whole:
        return (
            f"{head}: that line is at line {whole[0] + 1}, but the hunk's other lines do not "
            "follow it there; re-read the file and copy the context lines exactly"
        )
    partial = [i for i, c in enumerate(contents) if stripped and stripped in c]
    if partial:
        return (
            f"{head}: it is only a fragment of the longer line {partial[0] + 1} "
            f"({contents[partial[0]].strip()!r}); hunk lines must be whole lines"
        )
    return f"{head}, which is not in the file; re-read the file and copy the context lines exactly"
