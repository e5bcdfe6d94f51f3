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
    cjk_to_ascii,
    crlf,
)
"""The perturbations the tolerant tiers claim to absorb."""

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
