"""What a tolerant match accepted, in words a person reads, with the lines concerned.

Every applied answer, every hunk and every note carries these (``tolerated``):
the one place that says how the text the agent sent differed from the text
redline found, kind by kind — indentation, marks (quotes, dashes, full-width
punctuation), spacing, trailing whitespace, blank lines, a slip of the pen, a
line changed since the agent read it, a final newline, escapes, display
prefixes, a fragment of a longer line, a patch anchor not found. An exact match
tolerated nothing: the list is empty. ``redline review``, ``redline log``, the
guard's CI output and ``redline demo`` all show these words.

Lines are 1-based, in the file before the edit.
"""

from __future__ import annotations

import re

from redline.engine.fold import translate_punctuation
from redline.engine.merge import Kind, Seg, align, split
from redline.engine.result import Tolerance
from redline.engine.slips import slips_between

_QUOTES = frozenset("“”‘’„‚«»「」『』")


def where(lines: tuple[int, ...] | list[int]) -> str:
    """``line 9``, ``lines 9-11`` or ``lines 9, 12``."""
    shown = sorted(set(lines))
    if not shown:
        return "no line"
    if len(shown) == 1:
        return f"line {shown[0]}"
    if shown == list(range(shown[0], shown[-1] + 1)):
        return f"lines {shown[0]}-{shown[-1]}"
    return "lines " + ", ".join(map(str, shown))


def count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def spelt(indent: str) -> str:
    """An indentation in words: ``4 spaces``, ``a tab``, ``no indentation``."""
    if not indent:
        return "no indentation"
    if set(indent) == {" "}:
        return count(len(indent), "space", "spaces")
    if set(indent) == {"\t"}:
        return "a tab" if len(indent) == 1 else f"{len(indent)} tabs"
    return repr(indent)


def lines_of(
    sent: str, found: str, first_line: int, *, line_start: bool = True, line_end: bool = True
) -> list[Tolerance]:
    """The differences between the text the agent quoted (``sent``) and the text of the
    file it matched (``found``, starting on line ``first_line``), line by line."""
    if sent == found:
        return []
    base, ours = split(sent, line_start, line_end), split(found, line_start, line_end)
    indents: list[tuple[int, str, str]] = []
    marks: dict[int, tuple[set[str], set[str]]] = {}
    spacing: list[int] = []
    other: list[int] = []
    trailing: list[int] = []
    blank_sent: list[int] = []
    blank_file: list[int] = []
    slips: list[tuple[int, list[tuple[str, str]]]] = []
    drift: list[int] = []
    missing: list[int] = []  # after this file line, a line of old_string the file lacks
    extra: list[int] = []
    last = first_line - 1
    for unit in align(base, ours, line_start):
        if unit.file is None:
            assert unit.old is not None
            b = base[unit.old]
            (blank_sent if b.blank else missing).append(max(first_line, last))
            continue
        line = first_line + unit.file
        last = line
        o = ours[unit.file]
        if unit.old is None:
            (blank_file if o.blank else extra).append(line)
            continue
        b = base[unit.old]
        if unit.kind is Kind.SAME:
            continue
        if unit.kind is Kind.DRIFT:
            drift.append(line)
            continue
        if b.blank or o.blank:
            if b.text != o.text:
                trailing.append(line)
            continue
        if b.indent != o.indent and b.full_start:
            indents.append((line, b.indent, o.indent))
        if b.trail != o.trail:
            trailing.append(line)
        if b.body == o.body:
            continue
        if unit.kind is Kind.SLIP:
            slips.append((line, slips_between(b.body, o.body) or []))
            continue
        _body(line, b, o, marks, spacing, other)
    out: list[Tolerance] = []
    if indents:
        at = tuple(n for n, _, _ in indents)
        _, a, f = indents[0]
        out.append(
            Tolerance(
                "indentation",
                at,
                f"indentation differed on {count(len(at), 'line', 'lines')} ({where(at)}): "
                f"{spelt(a)} sent where the file has {spelt(f)}; the file's indentation kept",
            )
        )
    if marks:
        at = tuple(marks)
        typed = set().union(*(s for s, _ in marks.values()))
        theirs = set().union(*(f for _, f in marks.values()))
        if theirs and theirs <= _QUOTES and typed <= set("\"'"):
            said = f"straight quotes sent where the file has {' '.join(sorted(theirs))}"
        else:
            said = (
                f"{' '.join(sorted(typed)) or 'other marks'} sent where the file has "
                f"{' '.join(sorted(theirs)) or 'none'}"
            )
        out.append(
            Tolerance(
                "marks",
                at,
                f"marks differed on {where(at)}: {said}; the "
                "file's marks kept where the edit leaves the text alone",
            )
        )
    if spacing:
        out.append(
            Tolerance(
                "spacing",
                tuple(spacing),
                f"spacing inside the line differed on {where(spacing)}; the file's spacing kept",
            )
        )
    if other:
        out.append(
            Tolerance(
                "punctuation",
                tuple(other),
                f"punctuation differed on {where(other)}; the file's kept",
            )
        )
    if trailing:
        out.append(
            Tolerance(
                "trailing_whitespace",
                tuple(trailing),
                f"trailing whitespace differed on {where(trailing)}; the file's kept",
            )
        )
    if blank_sent or blank_file:
        parts = []
        if blank_sent:
            parts.append(
                f"old_string has {count(len(blank_sent), 'blank line', 'blank lines')} "
                "the file lacks"
            )
        if blank_file:
            parts.append(
                f"the file has {count(len(blank_file), 'blank line', 'blank lines')} "
                f"old_string lacks ({where(blank_file)}), kept"
            )
        out.append(
            Tolerance(
                "blank_lines",
                tuple(blank_sent + blank_file),
                "blank lines differed: " + "; ".join(parts),
            )
        )
    for line, words in slips:
        said = ", ".join(f"{a!r} sent where the file has {f!r}" for a, f in words[:3])
        out.append(
            Tolerance(
                "slip",
                (line,),
                f"a slip of the pen on line {line}"
                + (f": {said}" if said else "")
                + "; merged with the file's text",
            )
        )
    for line in drift:
        out.append(
            Tolerance(
                "drift",
                (line,),
                f"line {line} changed since the agent read it "
                "(old_string quotes another version): kept as the file has it",
            )
        )
    for line in extra:
        out.append(
            Tolerance(
                "drift",
                (line,),
                f"line {line} of the file is not in old_string: kept as the file has it",
            )
        )
    for line in missing:
        out.append(
            Tolerance(
                "drift",
                (line,),
                f"old_string has a line the file lacks (after line {line}): not written back",
            )
        )
    return out


def _body(
    line: int,
    b: Seg,
    o: Seg,
    marks: dict[int, tuple[set[str], set[str]]],
    spacing: list[int],
    other: list[int],
) -> None:
    """Sort one line's text difference: marks folded, spacing, or other punctuation."""
    theirs = {c for c in o.body if translate_punctuation(c) != c and c not in b.body}
    typed = {translate_punctuation(c) for c in theirs} & set(b.body)
    if theirs:
        marks[line] = (typed, theirs)
    if translate_punctuation(b.body).split() != translate_punctuation(o.body).split():
        spacing.append(line)
    elif not theirs:
        other.append(line)


def final_newline(line: int) -> Tolerance:
    return Tolerance(
        "final_newline",
        (line,),
        f"old_string ends with a newline the file's last line (line {line}) lacks; the file "
        "still ends without one",
    )


_ESCAPE = re.compile(r"\\[nt'\"\\]")


def escapes(sent: str, lines: tuple[int, ...]) -> Tolerance:
    seen = sorted(set(_ESCAPE.findall(sent)))
    return Tolerance(
        "escapes",
        lines,
        f"old_string was written with escapes ({', '.join(seen)}) for characters the file has "
        f"plain ({where(lines)}): read as those characters, new_string in the same escaping",
    )


def prefixes(what: str, lines: tuple[int, ...]) -> Tolerance:
    return Tolerance(
        "prefixes",
        lines,
        f"old_string and new_string carried {what} on every line, as a view of the file shows "
        f"them ({where(lines)}): stripped",
    )


def fragment(line: int) -> Tolerance:
    return Tolerance(
        "fragment",
        (line,),
        f"old_string is part of line {line}, not a whole line: replaced inside that line",
    )


def anchor_missing(lines: tuple[int, ...]) -> Tolerance:
    return Tolerance(
        "anchor",
        lines,
        f"the hunk's @@ anchor line was not found; its lines alone placed it ({where(lines)})",
    )


def one_line(items: list[Tolerance] | list[dict[str, object]]) -> str:
    """Every tolerance in one line (``redline log``): their words joined."""
    said = [t.text if isinstance(t, Tolerance) else str(t.get("text", "")) for t in items]
    return "; ".join(s for s in said if s) or "nothing (exact)"
