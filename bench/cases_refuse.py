"""Categories a careful tool refuses: duplicated blocks (``ambiguous``) and text
that is not in the file (``no_match``)."""

from __future__ import annotations

import random
from functools import partial

from casekit import Attempt, Case, case_name, refusal_case, same_touch, single_request
from mutations import choose_mod, typo
from sources import Source, absent_from, blocks, nearest_other, plain_block, string_rows
from textmodel import Doc, indent_of, reindent

ALL_KINDS = ("rename", "insert", "retext", "delete")
AMBIGUOUS = frozenset({"ambiguous"})
NO_MATCH = frozenset({"no_match"})
FAR = 0.6  # an absent old_string scores below this against every window of the file
_CONTINUES = ("(", "[", "{", ",", "\\")
_OPENERS = ("else", "elif", "except", "finally", ")", "]", "}")


def duplicate(src: Source, rng: random.Random) -> Case | None:
    """A block that occurs twice: planted copy (old exact, re-indented or with a typo —
    every tier sees two candidates) or a repetition the stdlib file already has."""
    if rng.random() < 0.3:
        return _natural_duplicate(src, rng)
    return _planted_duplicate(src, rng)


def _copy_spots(doc: Doc, i: int, j: int, indent: str) -> list[int]:
    out: list[int] = []
    strings = string_rows(doc)
    for p in range(1, len(doc.lines)):
        line, prev = doc.lines[p], doc.lines[p - 1]
        if p in strings or p - 1 in strings or min(abs(p - i), abs(p - j)) <= 40:
            continue
        if indent_of(line) != indent:
            continue
        if not line.strip() or not prev.strip() or prev.rstrip().endswith(_CONTINUES):
            continue
        if not line.strip().startswith(_OPENERS):
            out.append(p)
    return out


def _planted_duplicate(src: Source, rng: random.Random) -> Case | None:
    for i, j in blocks(rng, src.doc, 2, 6):
        lines = src.doc.lines[i:j]
        spots = _copy_spots(src.doc, i, j, indent_of(lines[0]))
        mod = choose_mod(rng, lines, ALL_KINDS)
        if not spots or mod is None:
            continue
        p = rng.choice(spots)
        file = src.doc.insert_lines(p, lines)
        variant = rng.choice(("exact", "indented", "typo"))
        old = list(lines)
        if variant == "indented":
            old = [reindent(s, 4) for s in lines]
        elif variant == "typo":
            rows = [k for k, s in enumerate(lines) if typo(rng, s)]
            if not rows:
                continue
            k = rng.choice(rows)
            found = typo(rng, lines[k])
            assert found is not None
            old[k] = lines[k].replace(found[0], found[1], 1)
        if variant != "exact" and "\n".join(old) in file.text():
            continue
        if not same_touch(mod, old, lines):
            continue
        at = p if p < i else p - len(lines)  # copy position in the original numbering
        note = f"{variant} copy-at:{at + 1} {mod.describe()}"
        request = single_request(src.path, "\n".join(old), "\n".join(mod.apply(old)))
        name = case_name("duplicate", src, (i, j), note)
        return refusal_case("duplicate", name, src, file, request, AMBIGUOUS, note)
    return None


_NATURAL: dict[tuple[str, int], list[tuple[str, int]]] = {}


def _repeats(src: Source, k: int) -> list[tuple[str, int]]:
    """Windows of ``k`` lines that occur at least twice without overlapping."""
    key = (src.path, k)
    if key not in _NATURAL:
        seen: dict[str, list[int]] = {}
        lines = src.doc.lines
        strings = string_rows(src.doc)
        for s in range(len(lines) - k + 1):
            window = lines[s : s + k]
            if plain_block(window, min_chars=40) and not strings.intersection(range(s, s + k)):
                seen.setdefault("\n".join(window), []).append(s)
        _NATURAL[key] = [
            (text, pos[0]) for text, pos in seen.items() if len(pos) >= 2 and pos[1] - pos[0] >= k
        ]
    return _NATURAL[key]


def _natural_duplicate(src: Source, rng: random.Random) -> Case | None:
    k = rng.randint(2, 4)
    repeats = _repeats(src, k)
    if not repeats:
        return None
    text, first = rng.choice(repeats)
    lines = text.split("\n")
    mod = choose_mod(rng, lines, ALL_KINDS)
    if mod is None:
        return None
    note = f"natural x{src.doc.text().count(text)} {mod.describe()}"
    request = single_request(src.path, text, "\n".join(mod.apply(lines)))
    name = case_name("duplicate", src, (first, first + k), note)
    return refusal_case("duplicate", name, src, src.doc, request, AMBIGUOUS, note)


def absent(pool: list[Source], src: Source, rng: random.Random) -> Case | None:
    """Text already deleted, copied from another file, or mostly hallucinated."""
    kind = rng.choice(("deleted", "foreign", "hallucinated"))
    other = rng.choice([s for s in pool if s.path != src.path])
    for i, j in blocks(rng, (other if kind == "foreign" else src).doc, 3, 8):
        lines = (other if kind == "foreign" else src).doc.lines[i:j]
        file = src.doc
        if kind == "deleted":
            file = src.doc.delete_lines(i, j)
        elif kind == "hallucinated":
            lines = _hallucinate(rng, lines, other.doc)
        mod = choose_mod(rng, lines, ALL_KINDS)
        if mod is None:
            continue
        new = "" if kind == "deleted" and rng.random() < 0.5 else "\n".join(mod.apply(lines))
        old = "\n".join(lines)
        if not absent_from(file, old) or nearest_other(file, lines, None) >= FAR:
            continue
        origin = f" from {other.path.rsplit('/', 1)[-1]}" if kind == "foreign" else ""
        note = f"{kind}{origin} " + ("delete-block" if not new else mod.describe())
        name = case_name("absent", src, (i, j), note)
        request = single_request(src.path, old, new)
        return refusal_case("absent", name, src, file, request, NO_MATCH, note)
    return None


def _hallucinate(rng: random.Random, lines: list[str], donor: Doc) -> list[str]:
    """Most lines replaced by lines from another file, at the original indentation."""
    pool = [s.strip() for s in donor.lines if len(s.strip()) > 12 and "\t" not in s]
    out = list(lines)
    rows = [k for k, s in enumerate(lines) if s.strip()]
    for k in rng.sample(rows, max(1, (len(rows) * 2 + 2) // 3)):
        out[k] = indent_of(lines[k]) + rng.choice(pool)
    return out


def absent_attempt(pool: list[Source]) -> Attempt:
    return partial(absent, pool)
