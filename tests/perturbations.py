"""How a model mistypes text it quotes: format-only perturbations of an edit request.

Each perturbation maps a text to the text a model might send instead, or to
None when it does not apply to that text (nothing to perturb, or the result
would not be a pure format change). The same perturbation is applied to
old_string and new_string, as a model that re-indents, re-quotes or re-spaces
what it read does so on both sides of its edit.

Used by the invariant tests (``tests/engine/test_invariants.py``) and the
replay bench (``bench/replay.py``): a format-only perturbation of a request
must give the exact request's bytes or a refusal, never a third text.
"""

from __future__ import annotations

import difflib
import random
import re
from collections.abc import Callable

Perturbation = Callable[[str], "str | None"]

_LEADING = re.compile(r"^[ \t]*", re.MULTILINE)


def _lines(text: str) -> list[str]:
    return text.split("\n")


def _map_indents(text: str, change: Callable[[str], str | None]) -> str | None:
    out = []
    for line in _lines(text):
        if not line.strip():
            out.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip(" \t"))]
        mapped = change(indent)
        if mapped is None:
            return None
        out.append(mapped + line[len(indent) :])
    result = "\n".join(out)
    return result if result != text else None


def reindent(delta: int) -> Perturbation:
    """Every non-blank line moved by ``delta`` columns (spaces only)."""

    def perturb(text: str) -> str | None:
        def change(indent: str) -> str | None:
            if "\t" in indent:
                return None
            width = len(indent) + delta
            return " " * width if width >= 0 else None

        return _map_indents(text, change)

    perturb.__name__ = f"reindent{delta:+d}"
    return perturb


def indent_step(factor: float) -> Perturbation:
    """Indentation widths multiplied by ``factor`` (2 → 4 is 2.0, 4 → 2 is 0.5)."""

    def perturb(text: str) -> str | None:
        def change(indent: str) -> str | None:
            if "\t" in indent:
                return None
            width = len(indent) * factor
            return " " * int(width) if width == int(width) else None

        return _map_indents(text, change)

    perturb.__name__ = f"indent_step_x{factor:g}"
    return perturb


def tabs_for_spaces(unit: int = 4) -> Perturbation:
    """Leading spaces written as tabs (``unit`` spaces a tab, the rest kept)."""

    def perturb(text: str) -> str | None:
        def change(indent: str) -> str | None:
            if "\t" in indent:
                return None
            return "\t" * (len(indent) // unit) + " " * (len(indent) % unit)

        return _map_indents(text, change)

    perturb.__name__ = f"tabs_for_spaces{unit}"
    return perturb


def spaces_for_tabs(unit: int = 4) -> Perturbation:
    """Leading tabs written as ``unit`` spaces each."""

    def perturb(text: str) -> str | None:
        return _map_indents(text, lambda indent: indent.replace("\t", " " * unit))

    perturb.__name__ = f"spaces_for_tabs{unit}"
    return perturb


def trailing_whitespace(text: str) -> str | None:
    """Two spaces added at the end of every line that ends with a newline."""
    if "\n" not in text:
        return None
    return text.replace("\n", "  \n")


def strip_trailing_whitespace(text: str) -> str | None:
    """Trailing whitespace dropped from every line."""
    out = re.sub(r"[ \t]+(?=\n|$)", "", text)
    return out if out != text else None


def curly_quotes(text: str) -> str | None:
    """Straight quotes written as typographic ones: “…” and ’."""
    if '"' not in text and "'" not in text:
        return None
    out = []
    for line in _lines(text):
        opened = False
        chars = []
        for char in line:
            if char == '"':
                chars.append("”" if opened else "“")
                opened = not opened
            elif char == "'":
                chars.append("’")
            else:
                chars.append(char)
        out.append("".join(chars))
    return "\n".join(out)


def straight_quotes(text: str) -> str | None:
    """Typographic quotes written as straight ones."""
    out = text.translate(str.maketrans({"“": '"', "”": '"', "‘": "'", "’": "'"}))
    return out if out != text else None


def dashes(text: str) -> str | None:
    """Hyphen-minus written as an en dash."""
    return text.replace("-", "–") if "-" in text else None


def straight_dashes(text: str) -> str | None:
    """En and em dashes written as hyphen-minus (the agent types ASCII)."""
    out = text.replace("–", "-").replace("—", "-")
    return out if out != text else None


_CJK_TO_ASCII = str.maketrans(
    {"，": ",", "。": ".", "：": ":", "；": ";", "（": "(", "）": ")", "！": "!", "？": "?"}
)


def cjk_to_ascii(text: str) -> str | None:
    """Full-width and CJK punctuation written half-width (，→, 。→. （→( …)."""
    out = text.translate(_CJK_TO_ASCII)
    return out if out != text else None


def flatten(text: str) -> str | None:
    """Every line's indentation dropped, as when a model quotes lines without their
    depth. Not among :data:`FORMAT_PERTURBATIONS`: where the lines sit at several
    depths it erases them, so the request may no longer say where a line goes."""
    out = _LEADING.sub("", text)
    return out if out != text else None


def crlf(text: str) -> str | None:
    """Windows line endings."""
    return text.replace("\n", "\r\n") if "\n" in text else None


FORMAT_PERTURBATIONS: tuple[Perturbation, ...] = (
    reindent(4),
    reindent(-4),
    reindent(2),
    indent_step(2.0),
    indent_step(0.5),
    tabs_for_spaces(4),
    spaces_for_tabs(4),
    trailing_whitespace,
    strip_trailing_whitespace,
    curly_quotes,
    straight_quotes,
    dashes,
    straight_dashes,
    cjk_to_ascii,
    crlf,
)
"""The perturbations the tolerant tiers claim to absorb."""

REVERSE_MARKS: tuple[Perturbation, ...] = (straight_quotes, straight_dashes, cjk_to_ascii)
"""Perturbations that write ASCII for the file's typographic marks. Where one rewrites
text the edit adds, the request says something else: a mark the agent types in a line
it adds or changes is written as typed."""

# Perturbations that can be combined, by the kind of difference they make; a
# combination takes at most one of each kind, in this order (line endings last).
_GROUPS: tuple[tuple[Perturbation, ...], ...] = (
    FORMAT_PERTURBATIONS[:7],  # indentation
    (trailing_whitespace, strip_trailing_whitespace),
    (curly_quotes, straight_quotes, dashes, straight_dashes, cjk_to_ascii),
    (crlf,),
)


def combinations(
    rng: random.Random, size: int, among: tuple[Perturbation, ...] = FORMAT_PERTURBATIONS
) -> tuple[Perturbation, ...]:
    """``size`` perturbations of different kinds drawn with ``rng`` from ``among``, in
    the order they are applied; fewer when ``among`` has fewer kinds."""
    groups = [[f for f in group if f in among] for group in _GROUPS]
    kinds = [k for k, group in enumerate(groups) if group]
    chosen = sorted(rng.sample(kinds, min(size, len(kinds))))
    return tuple(rng.choice(groups[k]) for k in chosen)


def name_of(chain: tuple[Perturbation, ...]) -> str:
    return "+".join(f.__name__ for f in chain)


def perturb_pair(f: Perturbation, old: str, new: str) -> tuple[str, str] | None:
    """old and new perturbed alike; None when ``f`` does not apply to old_string, or
    cannot apply to new_string the same way. new_string goes unchanged only when it
    has nothing to perturb (``f`` applies to both together)."""
    p_old = f(old)
    if p_old is None:
        return None
    p_new = f(new)
    if p_new is None:
        if f(old + "\n" + new) is None:
            return None
        p_new = new
    return p_old, p_new


def perturb_chain(chain: tuple[Perturbation, ...], old: str, new: str) -> tuple[str, str] | None:
    """old and new through every perturbation of ``chain`` in turn (see :func:`perturb_pair`);
    None when one of them does not apply."""
    for f in chain:
        pair = perturb_pair(f, old, new)
        if pair is None:
            return None
        old, new = pair
    return old, new


_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")


def rewrites_added_text(chain: tuple[Perturbation, ...], old: str, new: str) -> bool:
    """A perturbation of ``chain`` that writes ASCII for typographic marks
    (:data:`REVERSE_MARKS`) changes text new_string adds to old_string: the agent
    then types other marks than the exact request has, and those are written as
    typed — the request is no longer a format change of the exact one."""
    reverse = [f for f in chain if f in REVERSE_MARKS]
    if not reverse:
        return False
    added = []
    old_lines, new_lines = old.split("\n"), new.split("\n")
    lines = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in lines.get_opcodes():
        if tag == "equal":
            continue
        # In the lines the edit changes, the tokens it adds (text moved from one of
        # those lines to another, two lines joined, is not added).
        # A lone mark matched to one of old_string's says nothing of where it came from.
        a = _TOKEN.findall("\n".join(old_lines[i1:i2]))
        b = _TOKEN.findall("\n".join(new_lines[j1:j2]))
        tokens = difflib.SequenceMatcher(None, a, b, autojunk=False)
        kept = [False] * len(b)
        for _, k, size in tokens.get_matching_blocks():
            if any(re.match(r"\w", tok) for tok in b[k : k + size]):
                kept[k : k + size] = [True] * size
                for edge in _loose_edges(b[k : k + size]):
                    kept[k + edge] = False
        added += [tok for tok, old_text in zip(b, kept, strict=True) if not old_text]
    return any(f(text) is not None for f in reverse for text in added)


def _loose_edges(run: list[str]) -> list[int]:
    """Marks at the very edge of a matched run of tokens with spacing between them and
    the run's words (the ``-`` of ``- item`` matched to the ``-`` of ``a - item``):
    nothing says they are kept rather than typed anew. Quotes aside: one opens or
    closes the text next to it."""
    words = [k for k, tok in enumerate(run) if re.match(r"\w", tok)]
    if not words:
        return []
    edges = ((0, run[1 : words[0]]), (len(run) - 1, run[words[-1] + 1 : -1]))
    return [
        edge
        for edge, between in edges
        if run[edge].strip()
        and not re.match(r"\w", run[edge])
        and run[edge] not in "\"'“”‘’"
        and any(not tok.strip() for tok in between)
    ]


# Marks a perturbation writes that a real edit rarely has: when the edit has them
# already, the perturbed request cannot say which ones were there before.
_WRITES = {"curly_quotes": "“”’", "dashes": "–"}


def ambiguous_marks(function: Callable[[str], str | None], text: str) -> bool:
    """The perturbation writes marks the exact request already has (an en dash in a
    range, where it turns hyphens into en dashes): no engine can tell them apart."""
    return any(mark in text for mark in _WRITES.get(function.__name__, ""))


def erases_trailing_whitespace(chain: tuple[Perturbation, ...], old: str, new: str) -> bool:
    """``chain`` strips trailing whitespace, and the edit changes a line that has some:
    the request then cannot say whether the edit keeps it (two lines joined, say)."""
    if strip_trailing_whitespace not in chain:
        return False
    a, b = old.split("\n"), new.split("\n")
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return any(
        line != line.rstrip(" \t")
        for tag, i1, i2, _, _ in matcher.get_opcodes()
        if tag != "equal"
        for line in a[i1:i2]
    )


def typographic(text: str) -> str | None:
    """Text as a word processor or a careful writer types it: “double” and ‘single’
    curly quotes, an apostrophe ’, and `` - `` between words as an em dash — each a
    mark for a mark, as the punctuation tier folds them. None when there is nothing
    to change. (The file side of the reverse marks: the file has typographic marks,
    the agent types ASCII.)"""
    out = []
    for line in text.split("\n"):
        line = line.replace(" - ", " — ")
        chars = []
        opened = {'"': False, "'": False}
        for k, char in enumerate(line):
            if char not in opened:
                chars.append(char)
                continue
            before, after = line[k - 1 : k], line[k + 1 : k + 2]
            if char == "'" and before.isalnum() and after.isalnum():
                chars.append("’")  # an apostrophe
                continue
            pair = "“”" if char == '"' else "‘’"
            chars.append(pair[opened[char]])
            opened[char] = not opened[char]
        out.append("".join(chars))
    result = "\n".join(out)
    return result if result != text else None


_SLIP_CHARS = re.compile(r"[(),:]")


def typo_variants(line: str) -> list[str]:
    """Slips of the pen on one line: a dropped or doubled ``( ) , :``, two swapped letters."""
    variants = []
    for match in _SLIP_CHARS.finditer(line):
        i = match.start()
        variants.append(line[:i] + line[i + 1 :])
        variants.append(line[:i] + line[i] + line[i:])
    for word in re.finditer(r"[A-Za-z_]{5,}", line):
        i = word.start() + 2
        swapped = line[:i] + line[i + 1] + line[i] + line[i + 2 :]
        if swapped != line:
            variants.append(swapped)
    return variants


def code(lines: int, start: int = 0) -> str:
    """Code-like lines, each one different (for large tolerant requests)."""
    return "".join(
        f"    value_{i} = compute(alpha_{i}, beta_{i % 7}, gamma={i})\n"
        for i in range(start, start + lines)
    )


def with_slip(text: str) -> str:
    """:func:`code` text with one character dropped in its middle: only the fuzzy tier finds it."""
    middle = text.index("compute", len(text) // 2)
    return text[:middle] + text[middle + 1 :]
