"""The edit tool: old_string → new_string on one file, single or batch.

A single edit runs the match chain and adapts the replacement to a tolerant
match. A batch (``edits``) matches every item exactly against the original
file, refuses overlaps, and writes all items or none.
"""

from __future__ import annotations

import re
from collections import Counter
from difflib import SequenceMatcher
from itertools import pairwise
from typing import TYPE_CHECKING, ClassVar, Literal

from redline.engine import budget, invisible, newlines
from redline.engine.budget import TooLarge
from redline.engine.decode import Decoded, decode
from redline.engine.diff import unified_spans
from redline.engine.errors import FileFormatError, MergeConflict, TooDifferent
from redline.engine.match import (
    CONFIDENCE,
    MIN_FUZZY_CHARS,
    ChainResult,
    FileView,
    Span,
    find_all,
    honest_confidence,
    inside_indentation,
    match_chain,
)
from redline.engine.match_types import SIMILARITY
from redline.engine.records import record, replace
from redline.engine.result import Failure, Match, Result, Status, Tolerance

if TYPE_CHECKING:
    from redline.engine.prefixes import Reading
    from redline.engine.validate import Validation

DEFAULT_THRESHOLD = 0.8
IDENTICAL = "old_string and new_string are identical"
ONLY_INVISIBLE = (
    "new_string differs from old_string only by invisible characters, which are removed "
    "from both ({removed}): nothing would change. ZWNJ and ZWJ are kept between two "
    "letters of a script that writes them (Persian, Arabic, the Indic scripts) and inside "
    "emoji sequences; other invisible characters are never written"
)
ALREADY_APPLIED = (
    "already applied: old_string is not in the file and new_string is, once; nothing was "
    "changed (a retry of an edit that landed is safe)"
)


@record(frozen=True)
class EditItem:
    """One replacement of an edit request: ``old_string`` by ``new_string`` (every exact
    occurrence with ``replace_all``)."""

    old_string: str
    new_string: str
    replace_all: bool = False


@record(frozen=True)
class EditRequest:
    """An ``edit`` request as the engine takes it: the file's ``path`` and its replacements."""

    path: str
    edits: tuple[EditItem, ...]
    batch: bool = False  # given as ``edits`` (exact-only rules) rather than one edit
    threshold: float = DEFAULT_THRESHOLD
    limit: int = budget.LIMIT  # the tolerant tiers' budget (engine.budget)
    validate: bool = False  # the new content must parse (engine.validate)
    tool: ClassVar[str] = "edit"


@record
class EditOutcome:
    """What :func:`apply_edit` made of a request: its result and the file's new bytes."""

    result: Result
    data: bytes | None  # the file's new bytes; None when nothing is to be written
    validation: Validation | None = None  # when the request asked for it


@record(frozen=True)
class _Replacement:
    """One replacement located in the file: the span replaced, the text put there, and how
    it was matched."""

    span: Span
    text: str
    match_type: str
    note: str | None = None  # what was read otherwise than sent, for the result's hint
    # What was accepted beyond the quoted text (escapes, prefixes, a fragment), and the
    # old_string matched against the file line by line (tolerant tiers): engine.tolerated
    accepted: tuple[Tolerance, ...] = ()
    sent: str | None = None


class _AlreadyApplied(Exception):
    pass


Landed = Literal["yes", "no", "unclear", "unless_no_change"]


def _landed(text: str, item: EditItem, chain: ChainResult) -> Landed:
    """old_string is not in the file as sent, new_string is, once, and no tolerant
    match of old_string says the edit is still to be made: the edit has landed.

    new_string must stand where old_string's surroundings place it, never merely
    somewhere in the file. A match of old_string that overlaps new_string's place
    counts for new_string when it lies (but for blank lines) within it, or mostly
    within it, or reads more like new_string than old_string — unless what it
    covers past new_string is a line the edit removes, still in the file (four
    imports quoted with a slip in the last, new_string the first three): then the
    edit is still to be made. A match of old_string elsewhere, fuzzy or not, is
    where the edit would go: whether this is a retry is unclear.
    """
    new = item.new_string
    found = find_all(text, new) if new.strip() else []
    if len(found) != 1 or not _whole_lines(text, found[0], new):
        return "no"
    from redline.engine.similarity import ratio  # only when old_string is not exact

    here = Span(found[0], found[0] + len(new), 1.0)
    verdict: Landed = "yes"
    if chain.match_type == "whitespace" and "".join(item.old_string.split()) == "".join(
        new.split()
    ):
        # An edit of whitespace only, where old_string matches with whitespace
        # tolerance: the file reads the same whether it landed or is still to make,
        # unless making it leaves the file as it is.
        return "unless_no_change"
    removed = _removed_lines(item.old_string, new)
    for span in chain.spans:
        if not span.overlaps(here):
            verdict = "unclear"
            continue
        past = (
            text[span.start : max(span.start, here.start)]
            + text[min(span.end, here.end) : span.end]
        )
        if not past.strip():
            continue
        if all(
            any(ratio(line.strip(), gone) >= 0.8 for gone in removed)
            for line in past.split("\n")
            if line.strip()
        ):
            return "no"  # the text the edit removes is still there, next to new_string
        inside = min(span.end, here.end) - max(span.start, here.start)
        if inside >= 0.8 * (span.end - span.start):
            continue
        matched = text[span.start : span.end]
        if ratio(new, matched) <= ratio(item.old_string, matched):
            return "no"
    return verdict


def _removed_lines(old: str, new: str) -> list[str]:
    """The non-blank lines of old_string the edit removes or rewrites (stripped)."""
    a, b = old.split("\n"), new.split("\n")
    return [
        line.strip()
        for tag, i1, i2, _, _ in SequenceMatcher(None, a, b, False).get_opcodes()
        if tag != "equal"
        for line in a[i1:i2]
        if line.strip()
    ]


def _whole_lines(text: str, pos: int, new: str) -> bool:
    """new_string found at ``pos`` stands as it would have been written: a line-
    terminated or indented new_string starts a line there, never inside one."""
    if not (new.endswith("\n") or new[:1] in (" ", "\t")):
        return True
    return pos == 0 or text[pos - 1] == "\n"


class _Refused(Exception):
    def __init__(self, status: Status, message: str, matches: list[Match] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.matches = matches or []


def apply_edit(data: bytes, request: EditRequest) -> EditOutcome:
    """Apply ``request`` to a file's bytes; nothing here writes anywhere."""
    try:
        decoded = decode(data)
    except FileFormatError as exc:
        return EditOutcome(Result("invalid", path=request.path, error=str(exc)), None)
    lf_text, endings = newlines.split(decoded.text)
    view = FileView(lf_text)
    removed: Counter[str] = Counter()
    items = []
    only_invisible: Counter[str] = Counter()  # what a new_string differs by, if nothing else
    for item in request.edits:
        raw_old, raw_new = newlines.to_lf(item.old_string), newlines.to_lf(item.new_string)
        old, old_removed = invisible.clean(raw_old)
        new, new_removed = invisible.clean(raw_new)
        removed += old_removed + new_removed
        items.append(EditItem(old, new, item.replace_all))
        if old == new and raw_old != raw_new:
            only_invisible = (new_removed - old_removed) + (old_removed - new_removed)
    cleaned = invisible.describe(removed)
    if request.batch:
        result, replacements = _batch(view, items)
    elif only_invisible:
        described = ", ".join(invisible.describe(only_invisible))
        result = Result("invalid", error=ONLY_INVISIBLE.format(removed=described))
        replacements = []
    else:
        result, replacements = _single(view, items[0], request.threshold, request.limit)
    result.path = request.path
    result.cleaned = cleaned
    if not replacements:
        return EditOutcome(result, None)
    outcome = _write(decoded, view, endings, replacements, result, request.path)
    if request.validate and outcome.data is not None:
        return _validated(outcome, data, request.path)
    return outcome


def _validated(outcome: EditOutcome, before: bytes, path: str) -> EditOutcome:
    """The edit, refused (``validation_failed``) when it leaves the file unparseable."""
    from redline.engine.validate import refusal, validate  # the parsers, only when asked

    assert outcome.data is not None
    report = validate(path, before, outcome.data)
    if report.failed:
        return EditOutcome(refusal(report, outcome.result), None, report)
    outcome.result.validation = report.to_json()
    outcome.validation = report
    return outcome


def _single(
    view: FileView, item: EditItem, threshold: float, limit: int
) -> tuple[Result, list[_Replacement]]:
    try:
        _check_item(item)
        if item.old_string == item.new_string:
            raise _Refused("invalid", IDENTICAL)
        if item.replace_all:
            replacements = _replace_all(view, item, threshold, limit)
        else:
            replacements = [_locate(view, item, threshold, limit)]
    except _AlreadyApplied:
        return Result("no_change", hint=ALREADY_APPLIED), []
    except _Refused as refused:
        result = Result(refused.status, error=str(refused), matches=refused.matches)
        if refused.matches:
            result.match_type = refused.matches[0].match_type
        return result, []
    return Result("applied", hint=replacements[0].note), replacements


def _check_item(item: EditItem) -> None:
    if not item.old_string:
        raise _Refused(
            "invalid",
            "old_string is empty; give the text to replace (to create a file, use the write tool)",
        )


def _locate(
    view: FileView, item: EditItem, threshold: float, limit: int, prefixes: bool = True
) -> _Replacement:
    old = item.old_string
    if prefixes and not view.find_all(old):  # kept: the exact tier looks for it again
        prefixed = _prefixed(view, item)
        if prefixed is not None:
            return prefixed
        from redline.engine.prefixes import readings  # old_string is not in the file

        marked = [r for r in readings(old, item.new_string) if r.prefixes.startswith("diff")]
        if marked and any(line.startswith("+") for line in item.new_string.split("\n")):
            # Diff markers that add lines are not the file's text, whatever else matches:
            # as sent, the whitespace tier would take ' ' for indentation and write '+'.
            # (Without a '+' line, old_string may be a list whose items start with '-',
            # and the edit is matched as sent.)
            plain = EditItem(marked[0].old, marked[0].new)
            found = _locate(view, plain, threshold, limit, prefixes=False)
            note = f"old_string and new_string carried {marked[0].prefixes}; they were removed"
            from redline.engine import tolerated

            stripped = tolerated.prefixes(marked[0].prefixes, _lines_of(view, found.span))
            return replace(
                found,
                note=note if found.note is None else f"{note}. {found.note}",
                accepted=(stripped, *found.accepted),
            )
    chain = match_chain(view, old, threshold, new=item.new_string, limit=limit)
    if chain.too_large is not None:
        escaped = _escaped(view.text, item)
        if escaped is not None:
            return escaped
        raise _Refused("no_match", _too_large(view, item, chain.too_large))
    landed = _landed(view.text, item, chain) if chain.match_type != "exact" else "no"
    if landed == "yes":
        # A retry after a lost answer: old_string is gone and new_string is there.
        raise _AlreadyApplied
    if landed == "unclear":
        raise _retry_or_not(view, item, chain)
    if chain.match_type is None or chain.match_type in SIMILARITY:
        escaped = _escaped(view.text, item)
        if escaped is not None:
            return escaped
        fragment = _fragment(view, item)
        if fragment is not None and chain.match_type is None:
            return fragment
        if fragment is not None and chain.match_type is not None:
            # A fragment of a longer line, and a fuzzy match elsewhere: which is meant?
            matches = [_describe(view, s, chain.match_type) for s in chain.spans]
            matches.append(_describe(view, fragment.span, "fragment"))
            raise _Refused("ambiguous", _ambiguous(chain.match_type, matches), matches)
    if chain.match_type is None:
        from redline.engine.diagnose import not_found  # a miss only

        raise _Refused("no_match", not_found(view, old, chain.nearest, limit=limit))
    if len(chain.spans) > 1:
        matches = [_describe(view, s, chain.match_type) for s in chain.spans]
        raise _Refused("ambiguous", _ambiguous(chain.match_type, matches), matches)
    text = view.text
    span = chain.spans[0]
    if chain.match_type not in ("exact", "trailing_newline"):
        span = _from_line_start(text, span, old)
    if chain.match_type in SIMILARITY:
        span = _blank_lines_as_quoted(text, span, old)
    matched = text[span.start : span.end]
    if chain.match_type == "exact" or matched == old:
        return _Replacement(span, item.new_string, chain.match_type)
    # Loaded here: a stream of exact edits starts without the merge machinery.
    from redline.engine import indent
    from redline.engine.analysis import ANALYSES, Characters
    from redline.engine.diagnose import not_found
    from redline.engine.merge import adapt

    try:
        adapted = adapt(
            old,
            item.new_string,
            matched,
            chain.match_type,
            line_start=span.start == 0 or text[span.start - 1] == "\n",
            line_end=span.end == len(text) or text[span.end - 1 : span.end + 1].count("\n") > 0,
            style=lambda: ANALYSES.of(view.text, "style", lambda: indent.style(view.lines)),
            file_chars=Characters(text),
        )
    except TooDifferent:
        # More than one line really differs: the nearest block is another block.
        raise _Refused("no_match", not_found(view, old, span, limit=limit)) from None
    except MergeConflict as conflict:
        # The edit changes text that differs in the file: someone changed it
        # since it was read. Say so instead of guessing.
        raise _Refused(
            "no_match", not_found(view, old, span, conflict=conflict, limit=limit)
        ) from None
    if landed == "unless_no_change" and adapted != matched:
        raise _retry_or_not(view, item, chain)
    return _Replacement(span, adapted, chain.match_type, sent=old)


def _too_large(view: FileView, item: EditItem, over: TooLarge) -> str:
    """The refusal of a request past the tolerant budget (not checked for a retry: that
    needs the tolerant tiers, so the message only points at new_string when it is there)."""
    from redline.engine.diagnose import NOT_FOUND  # a miss only

    message = f"{NOT_FOUND} exactly, and {over.message}"
    found = find_all(view.text, item.new_string) if item.new_string.strip() else []
    if len(found) == 1:
        line = view.line_of(found[0]) + 1
        message += (
            f". new_string is in the file (line {line}): if this is a retry, the edit has "
            "already landed"
        )
    return message


def _retry_or_not(view: FileView, item: EditItem, chain: ChainResult) -> _Refused:
    line = view.line_of(find_all(view.text, item.new_string)[0]) + 1
    where = ", ".join(str(view.line_of(s.start) + 1) for s in chain.spans)
    return _Refused(
        "ambiguous",
        f"old_string is not in the file as sent, and new_string is (line {line}): if this "
        f"is a retry, the edit has landed; but old_string also matches with "
        f"{chain.match_type} tolerance at line {where}. Re-read the file, then send the "
        "edit again with the file's exact text if it is still to be made",
    )


_ESCAPE = re.compile(r"\\([nt'\"\\])")
_UNESCAPED = {"n": "\n", "t": "\t", "'": "'", '"': '"', "\\": "\\"}


def unescape(text: str) -> str:
    """``text`` with the escapes a model writes for real characters (\\n, \\t, \\', \\",
    \\\\) turned into those characters."""
    return _ESCAPE.sub(lambda m: _UNESCAPED[m.group(1)], text)


def _escaped(text: str, item: EditItem) -> _Replacement | None:
    """The edit with its escapes read as the characters they stand for, when old_string
    read so is in the file exactly once (the agent escaped text the file has plain).

    new_string is read in old_string's escaping, and only when it is written in it:
    an escape of a character old_string writes escaped stands for that character; an
    escape of one old_string writes plain (a real newline) is text (``\\n`` in a
    string literal). A character written plain where old_string escapes it, or an
    escape of one old_string does not show, is refused: what it means is a guess.
    """
    from redline.engine.diagnose import NOT_FOUND  # a miss only

    old = unescape(item.old_string)
    if old == item.old_string:
        return None
    found = find_all(text, old)
    if len(found) != 1:
        return None
    span = Span(found[0], found[0] + len(old), CONFIDENCE["escaped"])
    escaped, plain = _escaping(item.old_string)
    out = []
    for m in _ESCAPE_OR_CHAR.finditer(item.new_string):
        char = _UNESCAPED[m.group(1)] if m.group(1) else m.group(2)
        if m.group(1) and char in escaped and char not in plain:
            out.append(char)
        elif m.group(1) and char in plain and char not in escaped:
            out.append(m.group(0))  # an escape in the text: the agent writes the character plain
        elif m.group(1) or (char in _UNESCAPED.values() and char in escaped - plain):
            line = text.count("\n", 0, span.start) + 1
            raise _Refused(
                "no_match",
                f'{NOT_FOUND} as sent; read with its escapes (\\n as a newline, \\" as "), '
                f"it is in the file once (line {line}), but new_string is not written in the "
                f"same escaping ({m.group(0)!r} where old_string writes that character "
                "otherwise), so what new_string means is a guess: send old_string and "
                "new_string with the file's characters, unescaped",
            )
        else:
            out.append(m.group(0))
    from redline.engine import tolerated

    said = tolerated.escapes(item.old_string, _lines_of(FileView(text), span))
    return _Replacement(span, "".join(out), "escaped", accepted=(said,))


_ESCAPE_OR_CHAR = re.compile(r"\\([nt'\"\\])|(.)", re.DOTALL)


def _escaping(text: str) -> tuple[set[str], set[str]]:
    """The characters ``text`` writes as an escape (\\n, \\", ...) and those it writes plain."""
    escaped: set[str] = set()
    plain: set[str] = set()
    for m in _ESCAPE_OR_CHAR.finditer(text):
        if m.group(1):
            escaped.add(_UNESCAPED[m.group(1)])
        elif m.group(2) in _UNESCAPED.values():
            plain.add(m.group(2))
    return escaped, plain


def _prefixed(view: FileView, item: EditItem) -> _Replacement | None:
    """The edit without the display prefixes its lines carry (line numbers, box glyphs,
    diff markers copied from a view), when old_string read so is in the file once."""
    from redline.engine.prefixes import readings

    found: dict[tuple[int, int, str], Reading] = {}
    for reading in readings(item.old_string, item.new_string):
        if not reading.old.strip():
            continue
        spans = find_all(view.text, reading.old)
        new = reading.new
        if not spans and reading.old.endswith("\n") and view.text.endswith(reading.old[:-1]):
            # The file's last line, without its newline.
            spans = [len(view.text) - len(reading.old) + 1]
            new = new[:-1] if new.endswith("\n") else new
        if len(spans) == 1:
            end = min(len(view.text), spans[0] + len(reading.old))
            found[spans[0], end, new] = reading
    if len(found) != 1:
        return None
    ((start, end, new), reading) = found.popitem()
    line = view.line_of(start) + 1
    note = (
        f"old_string and new_string carried {reading.prefixes} on every line, as a view of "
        f"the file shows them; they were removed, and old_string without them is in the file "
        f"once (line {line}). Quote the file's text without them"
    )
    from redline.engine import tolerated

    span = Span(start, end, CONFIDENCE["prefixed"])
    stripped = tolerated.prefixes(reading.prefixes, _lines_of(view, span))
    return _Replacement(span, new, "prefixed", note, accepted=(stripped,))


_WORD_CHAR = re.compile(r"\w")


def _fragment(view: FileView, item: EditItem) -> _Replacement | None:
    """A one-line old_string that is part of one longer line of the file, in the middle of
    its text, replaced inside that line by new_string's line (each without the indentation
    and line end the agent gave it, which must be the same on both)."""
    old, new = item.old_string, item.new_string
    core, new_core = old.strip(), new.strip()
    if "\n" in core or "\n" in new_core or not new_core:
        return None
    if (old[: len(old) - len(old.lstrip())], old[len(old.rstrip()) :]) != (
        new[: len(new) - len(new.lstrip())],
        new[len(new.rstrip()) :],
    ):
        return None
    if len("".join(core.split())) < MIN_FUZZY_CHARS:
        return None
    found = find_all(view.text, core)
    if len(found) != 1:
        return None
    text, start, end = view.text, found[0], found[0] + len(core)
    line_start = text.rfind("\n", 0, start) + 1
    line_end = len(text) if text.find("\n", end) < 0 else text.find("\n", end)
    if not text[line_start:start].strip() or not text[end:line_end].strip():
        return None  # the start or the end of the line's text: the line may have changed
    if (_WORD_CHAR.match(core[0]) and _WORD_CHAR.match(text[start - 1])) or (
        _WORD_CHAR.match(core[-1]) and _WORD_CHAR.match(text[end])
    ):
        return None  # it would cut a word in two
    note = (
        f"old_string is part of line {view.line_of(start) + 1}, not a line of its own: it "
        "was replaced inside that line (without the indentation and line end it was sent with)"
    )
    from redline.engine import tolerated

    part = (tolerated.fragment(view.line_of(start) + 1),)
    return _Replacement(Span(start, end, CONFIDENCE["fragment"]), new_core, "fragment", note, part)


def _from_line_start(text: str, span: Span, old: str) -> Span:
    """A tolerant match of whole lines quoted without their indentation starts at the
    line's start, so that the indentation is mapped rather than left before it."""
    line_start = text.rfind("\n", 0, span.start) + 1
    if old[:1].isspace() or line_start == span.start or text[line_start : span.start].strip():
        return span
    return Span(line_start, span.end, span.score)


def _blank_edges(text: str) -> tuple[int, int]:
    """Blank lines at the start and at the end of ``text`` (before its final newline)."""
    lines = (text[:-1] if text.endswith("\n") else text).split("\n")
    lead = next((k for k, line in enumerate(lines) if line.strip()), len(lines))
    trail = next((k for k, line in enumerate(reversed(lines)) if line.strip()), len(lines))
    return lead, trail


def _blank_lines_as_quoted(text: str, span: Span, old: str) -> Span:
    """A fuzzy window with the blank lines at its edges that old_string has: without
    those it does not have, and over those of the file right outside it that it
    quotes (the edit may remove them: left outside, they would stay)."""
    start, end = span.start, span.end
    old_lead, old_trail = _blank_edges(old)
    lead, trail = _blank_edges(text[start:end])
    if lead == trail == len(text[start:end].split("\n")):
        return span
    for _ in range(max(0, lead - old_lead)):
        start = text.index("\n", start) + 1
    ends_line = text[end - 1 : end] == "\n"
    for _ in range(max(0, trail - old_trail)):
        end = text.rindex("\n", start, end - 1 if ends_line else end) + (1 if ends_line else 0)
    if start >= end:
        return span
    starts_line = start == 0 or text[start - 1] == "\n"
    for _ in range(max(0, old_lead - lead) if starts_line else 0):
        before = text.rfind("\n", 0, start - 1) + 1 if start > 0 else -1
        if before < 0 or text[before : start - 1].strip():
            break
        start = before
    for _ in range(max(0, old_trail - trail) if ends_line else 0):
        after = text.find("\n", end)
        if after < 0 or text[end:after].strip():
            break
        end = after + 1
    return Span(start, end, span.score)


def _ambiguous(match_type: str, matches: list[Match]) -> str:
    lines = ", ".join(
        f"{m.start_line}" if m.start_line == m.end_line else f"{m.start_line}-{m.end_line}"
        for m in matches
    )
    if match_type == "exact":
        head = f"old_string found {len(matches)} times"
    else:
        head = f"old_string matched {len(matches)} places equally well ({match_type})"
    return (
        f"{head} (lines {lines}); add surrounding lines to old_string to make it unique, "
        "or set replace_all to change every occurrence"
    )


def _replace_all(
    view: FileView, item: EditItem, threshold: float, limit: int
) -> list[_Replacement]:
    old = item.old_string
    spans: list[Span] = []
    pos = view.text.find(old)
    while pos != -1:
        spans.append(Span(pos, pos + len(old), 1.0))
        pos = view.text.find(old, pos + len(old))
    if spans:
        return [_Replacement(s, item.new_string, "exact") for s in spans]
    from redline.engine.diagnose import NOT_FOUND, not_found  # a miss only

    chain = match_chain(view, old, threshold, limit=limit)
    if chain.too_large is not None:
        raise _Refused("no_match", f"{NOT_FOUND} exactly, and {chain.too_large.message}")
    if chain.match_type is None:
        raise _Refused("no_match", not_found(view, old, chain.nearest, limit=limit))
    matches = [_describe(view, s, chain.match_type) for s in chain.spans]
    where = ", ".join(str(m.start_line) for m in matches)
    raise _Refused(
        "no_match",
        f"{NOT_FOUND}: replace_all replaces exact occurrences only, and old_string matches "
        f"only with {chain.match_type} tolerance (line {where}); copy the file's text exactly, "
        "or drop replace_all",
        matches,
    )


def _batch(view: FileView, items: list[EditItem]) -> tuple[Result, list[_Replacement]]:
    failures: list[Failure] = []
    skipped: list[int] = []
    replacements: list[tuple[int, _Replacement]] = []
    for index, item in enumerate(items):
        if item.old_string == item.new_string:
            skipped.append(index)
            continue
        try:
            _check_item(item)
            positions = find_all(view.text, item.old_string)
            if not item.replace_all:
                positions = [
                    p for p in positions if not inside_indentation(view.text, p, item.old_string)
                ]
            if not positions:
                from redline.engine.diagnose import NOT_FOUND  # a miss only

                raise _Refused("no_match", f"{NOT_FOUND} (batch edits match exactly)")
            if item.replace_all:
                positions = _non_overlapping(positions, len(item.old_string))
            elif len(positions) > 1:
                raise _Refused(
                    "ambiguous",
                    f"old_string found {len(positions)} times; add context, or set replace_all",
                )
        except _Refused as refused:
            failures.append(Failure(index, refused.status, str(refused)))
            continue
        for pos in positions:
            span = Span(pos, pos + len(item.old_string), 1.0)
            replacements.append((index, _Replacement(span, item.new_string, "exact")))
    replacements.sort(key=lambda pair: pair[1].span.start)
    for (i, a), (j, b) in pairwise(replacements):
        if a.span.overlaps(b.span):
            failures.append(
                Failure(j, "invalid", f"edit {j} overlaps edit {i}; merge them into one edit")
            )
    if failures:
        first = failures[0]
        # A malformed batch (overlaps, empty old_string) is a bad request whatever else failed.
        status = "invalid" if any(f.status == "invalid" for f in failures) else first.status
        count = len(failures)
        error = (
            f"{count} of {len(items)} edits failed, nothing was written; "
            f"first, edit {first.index}: {first.error}"
        )
        return Result(status, error=error, failures=failures, skipped=skipped), []
    if not replacements:
        return Result("no_change", skipped=skipped), []
    return Result("applied", skipped=skipped), [r for _, r in replacements]


def _non_overlapping(positions: list[int], width: int) -> list[int]:
    kept: list[int] = []
    for pos in positions:
        if not kept or pos >= kept[-1] + width:
            kept.append(pos)
    return kept


def _describe(view: FileView, span: Span, match_type: str) -> Match:
    return Match(
        match_type=match_type,
        confidence=honest_confidence(match_type, span.score),
        matched_text=view.text[span.start : span.end],
        start_line=view.line_of(span.start) + 1,
        end_line=view.line_of(max(span.start, span.end - 1)) + 1,
    )


def _lines_of(view: FileView, span: Span) -> tuple[int, ...]:
    first = view.line_of(span.start) + 1
    return tuple(range(first, view.line_of(max(span.start, span.end - 1)) + 2))


def _tolerated(view: FileView, rep: _Replacement) -> list[Tolerance]:
    """What ``rep`` accepted beyond the text it quotes (engine.tolerated)."""
    if rep.match_type == "exact" and not rep.accepted:
        return []
    from redline.engine import tolerated

    out = list(rep.accepted)
    text, span = view.text, rep.span
    first = view.line_of(span.start) + 1
    if rep.match_type == "trailing_newline":
        out.append(tolerated.final_newline(view.line_of(max(span.start, span.end - 1)) + 1))
    elif rep.sent is not None:
        out += tolerated.lines_of(
            rep.sent,
            text[span.start : span.end],
            first,
            line_start=span.start == 0 or text[span.start - 1] == "\n",
            line_end=span.end == len(text) or text[span.end - 1 : span.end + 1].count("\n") > 0,
        )
    return out


def _write(
    decoded: Decoded,
    view: FileView,
    endings: newlines.Endings,
    replacements: list[_Replacement],
    result: Result,
    path: str,
) -> EditOutcome:
    text = view.text
    original = decoded.text
    matches = []
    for rep in replacements:
        described = _describe(view, rep.span, rep.match_type)
        start = endings.original_offset(text, rep.span.start)
        end = endings.original_offset(text, rep.span.end)
        matches.append(
            Match(
                described.match_type,
                described.confidence,
                original[start:end],
                described.start_line,
                described.end_line,
            )
        )
    # The replacements do not overlap: made from the last to the first, each one's
    # endings are read in text the later ones leave as it was; the new text is
    # joined once (not copied whole per replacement).
    new_endings = endings
    pieces: list[str] = []
    kept_to = len(text)
    for rep in sorted(replacements, key=lambda r: r.span.start, reverse=True):
        new_endings = new_endings.replace(text, rep.span.start, rep.span.end, rep.text)
        pieces += (text[rep.span.end : kept_to], rep.text)
        kept_to = rep.span.start
    pieces.append(text[:kept_to])
    new_text = "".join(reversed(pieces))
    try:
        data = decoded.encode(new_endings.restore(new_text))
    except FileFormatError as exc:
        return EditOutcome(Result("invalid", path=path, error=str(exc)), None)
    result.matches = matches
    result.tolerated = [t for rep in replacements for t in _tolerated(view, rep)]
    first = matches[0]
    result.match_type = first.match_type
    result.confidence = min(m.confidence for m in matches)
    result.matched_text = first.matched_text
    if new_text == text:
        result.status = "no_change"
        return EditOutcome(result, None)
    ordered = sorted(replacements, key=lambda r: r.span.start)
    spans = [(r.span.start, r.span.end, len(r.text)) for r in ordered]
    result.diff = unified_spans(path, text, new_text, spans)
    return EditOutcome(result, data)
