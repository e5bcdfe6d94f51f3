"""Categories where old_string is exact up to newlines or invisible characters:
exact blocks, CRLF files, mixed-ending files, zero-width characters, replace_all."""

from __future__ import annotations

import random
import re
import zlib

from casekit import Case, block_case, case_name, single_request
from mutations import INVISIBLES, NOT_NAMES, choose_mod, code_mask, new_name, sprinkle
from sources import Source, blocks, string_rows
from textmodel import CRLF, LF, Doc, with_endings

ALL_KINDS = ("rename", "insert", "retext", "delete")


def exact(src: Source, rng: random.Random) -> Case | None:
    for i, j in blocks(rng, src.doc, 1, 12):
        lines = src.doc.lines[i:j]
        mod = choose_mod(rng, lines, ALL_KINDS)
        if mod is not None:
            after = mod.apply(lines)
            return block_case("exact", src, src.doc, (i, j), lines, after, after, mod.describe())
    return None


_CRLF_DOCS: dict[str, Doc] = {}


def crlf_doc(src: Source) -> Doc:
    if src.path not in _CRLF_DOCS:
        _CRLF_DOCS[src.path] = with_endings(src.doc, CRLF)
    return _CRLF_DOCS[src.path]


def crlf(src: Source, rng: random.Random) -> Case | None:
    """A CRLF file, old/new with LF: replacement lines are written with CRLF."""
    file = crlf_doc(src)
    for i, j in blocks(rng, src.doc, 2, 10):
        lines = file.lines[i:j]
        mod = choose_mod(rng, lines, ALL_KINDS)
        if mod is not None:
            after = mod.apply(lines)
            return block_case("crlf", src, file, (i, j), lines, after, after, mod.describe())
    return None


_MIXED_DOCS: dict[tuple[str, bool], Doc] = {}


def mixed_doc(src: Source, per_line: bool) -> Doc:
    """Endings chosen per line at random, or in runs of 20–80 lines of one style."""
    key = (src.path, per_line)
    if key not in _MIXED_DOCS:
        rng = random.Random(zlib.crc32(src.path.encode()) + per_line)
        ends: list[str] = []
        style = CRLF
        while len(ends) < len(src.doc.lines):
            if per_line:
                ends.append(rng.choice((LF, CRLF)))
            else:
                ends.extend([style] * rng.randint(20, 80))
                style = LF if style == CRLF else CRLF
        ends = ends[: len(src.doc.lines)]
        ends = [e if old else "" for e, old in zip(ends, src.doc.ends, strict=True)]
        _MIXED_DOCS[key] = Doc(list(src.doc.lines), ends)
    return _MIXED_DOCS[key]


def mixed_endings(src: Source, rng: random.Random) -> Case | None:
    """Some lines CRLF, some LF. Edits that keep the line count run through blocks
    whose lines end differently (each line keeps its ending); edits that add or
    remove lines run inside a run of one style (new lines take that style)."""
    per_line = rng.random() < 0.5
    file = mixed_doc(src, per_line)
    kinds = ("rename", "retext") if per_line else ALL_KINDS
    for i, j in blocks(rng, src.doc, 3, 10):
        if per_line and len(set(file.ends[i : j - 1])) < 2:
            continue
        if not per_line and not file.uniform_ends(i, j):
            continue
        lines = file.lines[i:j]
        mod = choose_mod(rng, lines, kinds)
        if mod is not None:
            after = mod.apply(lines)
            note = ("per-line " if per_line else "runs ") + mod.describe()
            return block_case("mixed_endings", src, file, (i, j), lines, after, after, note)
    return None


def zero_width(src: Source, rng: random.Random) -> Case | None:
    """Zero-width space, word joiner, soft hyphen (and BOM, ZWNJ) leaked into old/new."""
    for i, j in blocks(rng, src.doc, 2, 8):
        lines = src.doc.lines[i:j]
        mod = choose_mod(rng, lines, ALL_KINDS)
        if mod is None:
            continue
        after = mod.apply(lines)
        old, new = "\n".join(lines), "\n".join(after)
        where = rng.choice(("old", "new", "both"))
        chars = INVISIBLES[:3] if rng.random() < 0.7 else INVISIBLES
        if where in ("old", "both"):
            old = sprinkle(rng, old, rng.randint(1, 3), chars)
        if where in ("new", "both"):
            new = sprinkle(rng, new, rng.randint(1, 3), chars)
        case = block_case(
            "zero_width",
            src,
            src.doc,
            (i, j),
            old.split(LF),
            new.split(LF),
            after,
            f"{where} {mod.describe()}",
        )
        return case
    return None


_WORD = re.compile(r"(?<![\w.])(?:self\.)?[A-Za-z_]\w{3,}\b")


def replace_all(src: Source, rng: random.Random) -> Case | None:
    """Rename every occurrence of a name (or ``self.attr``) that occurs in code only
    (never inside a string, comment or longer name); expected = str.replace."""
    file = crlf_doc(src) if rng.random() < 0.2 else src.doc
    text = file.text()
    strings = string_rows(src.doc)
    counts: dict[str, int] = {}
    for row, line in enumerate(src.doc.lines):
        if row not in strings:
            for m in _WORD.finditer(code_mask(line)):
                counts[m.group(0)] = counts.get(m.group(0), 0) + 1
    want_single = rng.random() < 0.1
    choices = [
        w
        for w, c in sorted(counts.items())
        if (c == 1) == want_single
        and c <= 40
        and w.split(".")[-1] not in NOT_NAMES
        and text.count(w) == c
    ]
    if not choices:
        return None
    old = rng.choice(choices)
    head, _, last = old.rpartition(".")
    new = (head + "." if head else "") + new_name(rng, last)
    if new in text:
        return None
    style = "crlf " if file is not src.doc else ""
    name = case_name("replace_all", src, None, f"{style}{old}->{new} x{counts[old]}")
    return Case(
        name=name,
        category="replace_all",
        data=file.encode(),
        request=single_request(src.path, old, new, replace_all=True),
        expected=text.replace(old, new).encode(),
        note=f"{counts[old]} occurrences",
    )
