"""Fuzzy categories: one line of old_string differs in characters from the file.

A typo (one character of an identifier of length ≥ 5 missing or doubled) or a
stale line (a number or name someone changed after the agent read the file).
Every case is screened so that no other window of the file comes near
old_string, and old_string matches nowhere under whitespace/punctuation folding.
"""

from __future__ import annotations

import random

from casekit import (
    Case,
    block_case,
    case_name,
    clean_changed,
    echo,
    refusal_case,
    same_touch,
    single_request,
)
from mutations import Delete, Mod, Retext, choose_mod, drift, other_number, touched, typo
from sources import Source, absent_from, blocks, nearest_other
from textmodel import Doc

ALL_KINDS = ("rename", "insert", "retext", "delete")
LINE_KINDS = ("rename", "retext")  # edits that rewrite existing lines
COMPETITOR = 0.7  # no other window may score this high against old_string


def _fair(src: Source, span: tuple[int, int], old: list[str]) -> bool:
    return absent_from(src.doc, "\n".join(old)) and nearest_other(src.doc, old, span) < COMPETITOR


def _swap(line: str, word: str, wrong: str) -> str:
    return line.replace(word, wrong, 1)


def typo_unchanged_line(
    src: Source, rng: random.Random, k_range: tuple[int, int] = (4, 10)
) -> Case | None:
    """A typo on a line the edit leaves alone: the file's spelling must survive."""
    for i, j in blocks(rng, src.doc, *k_range):
        lines = src.doc.lines[i:j]
        mod = choose_mod(rng, lines, ALL_KINDS)
        if mod is None:
            continue
        hit = touched(mod, lines)
        free = [k for k in range(len(lines)) if k not in hit and lines[k].strip()]
        rng.shuffle(free)
        for m in free:
            found = typo(rng, lines[m])
            if found is None:
                continue
            old = list(lines)
            old[m] = _swap(lines[m], *found)
            if not same_touch(mod, old, lines) or not _fair(src, (i, j), old):
                break
            note = f"line {m} {found[0]}->{found[1]} {mod.describe()}"
            return block_case(
                "typo_unchanged_line",
                src,
                src.doc,
                (i, j),
                old,
                echo(mod, old),
                mod.apply(lines),
                note,
            )
    return None


def _typo_on_changed(src: Source, rng: random.Random, category: str, echoed: bool) -> Case | None:
    for i, j in blocks(rng, src.doc, 4, 10):
        lines = src.doc.lines[i:j]
        mod = choose_mod(rng, lines, LINE_KINDS)
        if mod is None:
            continue
        after = mod.apply(lines)
        for m in sorted(touched(mod, lines)):
            found = typo(rng, lines[m])
            if found is None:
                continue
            word, wrong = found
            if after[m].count(word) != 1:  # the edit itself rewrites the misspelt word
                continue
            old = list(lines)
            old[m] = _swap(lines[m], word, wrong)
            if not same_touch(mod, old, lines) or not _fair(src, (i, j), old):
                break
            new = echo(mod, old) if echoed else clean_changed(mod, old, lines)
            if echoed and new[m] != _swap(after[m], word, wrong):
                continue
            note = f"line {m} {word}->{wrong} {mod.describe()}"
            return block_case(category, src, src.doc, (i, j), old, new, after, note)
    return None


def typo_changed_line(src: Source, rng: random.Random) -> Case | None:
    """A typo in old_string on a line the edit rewrites; new_string spells it right."""
    return _typo_on_changed(src, rng, "typo_changed_line", echoed=False)


def typo_echoed(src: Source, rng: random.Random) -> Case | None:
    """As typo_changed_line, but new_string repeats the typo (the agent retyped the line).

    Strict merge principle: the typo is not part of the change, so the file's
    spelling is kept (needs a character-level merge of the changed line)."""
    return _typo_on_changed(src, rng, "typo_echoed", echoed=True)


def stale_other_line(src: Source, rng: random.Random) -> Case | None:
    """One line drifted since the agent read it; the edit changes another line.

    Expected: applied, with the drifted line kept as the file has it."""
    for i, j in blocks(rng, src.doc, 4, 10):
        lines = src.doc.lines[i:j]
        mod = choose_mod(rng, lines, ALL_KINDS)
        if mod is None:
            continue
        hit = touched(mod, lines)
        filled = [k for k in range(len(lines)) if lines[k].strip()]
        # The first and last lines of a block are never the drifted one (DESIGN.md):
        # there a window may have slid onto a neighbour, so such a block is refused.
        free = [k for k in filled[1:-1] if k not in hit]
        rng.shuffle(free)
        for m in free:
            found = drift(rng, lines[m])
            if found is None:
                continue
            current, stale = found
            old = list(lines)
            old[m] = _swap(lines[m], current, stale)
            if not same_touch(mod, old, lines) or not _fair(src, (i, j), old):
                break
            note = f"line {m} file:{current.strip()} agent:{stale.strip()} {mod.describe()}"
            return block_case(
                "stale_other_line",
                src,
                src.doc,
                (i, j),
                old,
                echo(mod, old),
                mod.apply(lines),
                note,
            )
    return None


def stale_same_line(src: Source, rng: random.Random) -> Case | None:
    """The edit changes (or deletes) exactly the line that drifted: a conflict.

    The drifted number, the agent's stale number and the number it writes share
    no digit, so the change and the drift overlap at any merge granularity.
    Expected: not applied (any refusal status); nothing written."""
    delete = rng.random() < 0.25
    for i, j in blocks(rng, src.doc, 4, 10):
        lines = src.doc.lines[i:j]
        rows = [k for k in range(1, len(lines) - 1) if lines[k].strip()]
        if delete:
            rows = [k for k in rows if not lines[k].rstrip().endswith((":", ",", "(", "\\"))]
        rng.shuffle(rows)
        for m in rows:
            found = drift(rng, lines[m], numbers_only=not delete)
            if found is None:
                continue
            current, stale = found
            old = list(lines)
            old[m] = _swap(lines[m], current, stale)
            mod: Mod = Delete(m) if delete else Retext(m, stale, _third_value(rng, stale, current))
            if mod.apply(old) == lines:  # the agent's change is what the file already says
                continue
            if not _fair(src, (i, j), old):
                break
            note = f"line {m} file:{current.strip()} agent:{stale.strip()} {mod.describe()}"
            request = single_request(src.path, "\n".join(old), "\n".join(mod.apply(old)))
            name = case_name("stale_same_line", src, (i, j), note)
            return refusal_case("stale_same_line", name, src, src.doc, request, frozenset(), note)
    return None


def _third_value(rng: random.Random, stale: str, current: str) -> str:
    """The number the agent writes: no digit shared with its stale number, and
    (digits permitting) none with the file's current number."""
    head = stale.rstrip("0123456789")
    return head + other_number(rng, stale[len(head) :], current[len(head) :])


def big_file(sources: list[Source], size: int = 10_000) -> Source:
    """Standard-library files concatenated and cut to ``size`` lines."""
    lines: list[str] = []
    for src in sorted(sources, key=lambda s: s.path):
        lines.extend(src.doc.lines)
        if len(lines) >= size:
            break
    lines = lines[:size]
    return Source("Lib/stdlib_10k.py", Doc(lines, ["\n"] * len(lines)))


def big_file_case(sources: list[Source], seed: str) -> Case:
    """The timing case: a 12-line block with a one-character typo on a line the edit
    does not change, in the middle half of a 10,000-line file."""
    src = big_file(sources)
    rng = random.Random(seed)
    n = len(src.doc.lines)
    for _ in range(200):
        case = typo_unchanged_line(src, rng, k_range=(12, 12))
        if case is not None and case.span and n // 4 < case.span[0] < 3 * n // 4:
            return case
    raise RuntimeError("no timing case found in the 10,000-line file")
