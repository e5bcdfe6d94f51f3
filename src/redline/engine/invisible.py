"""Invisible characters that models leak into text, and their removal.

Removed: zero-width space, zero-width non-joiner, word joiner, in-stream BOM,
soft hyphen, a zero-width joiner that does not join two emoji, and combining
marks with no visible base (at the start of the text, or after whitespace or
another removed character). Combining marks on a visible base — Vietnamese
tones, Arabic harakat, Devanagari vowel signs, U+0305 over a digit — are kept.
"""

from __future__ import annotations

import unicodedata
from collections import Counter

ZWSP, ZWNJ, ZWJ, WORD_JOINER, BOM, SOFT_HYPHEN = (
    "\u200b",
    "\u200c",
    "\u200d",
    "\u2060",
    "\ufeff",
    "\u00ad",
)
ALWAYS_INVISIBLE = frozenset((ZWSP, ZWNJ, WORD_JOINER, BOM, SOFT_HYPHEN))
_EMOJI_MODIFIERS = frozenset(("\ufe0f", "\ufe0e")) | {chr(c) for c in range(0x1F3FB, 0x1F400)}


def is_emoji(char: str) -> bool:
    """Extended-pictographic characters that take part in ZWJ sequences."""
    cp = ord(char)
    return (
        0x1F000 <= cp <= 0x1FAFF
        or 0x2600 <= cp <= 0x27BF
        or 0x2300 <= cp <= 0x23FF
        or 0x2B00 <= cp <= 0x2BFF
        or cp in (0x00A9, 0x00AE, 0x203C, 0x2049, 0x2122, 0x2139, 0x3030, 0x303D)
    )


def is_combining(char: str) -> bool:
    return unicodedata.category(char) in ("Mn", "Me")


def _joins_emoji(text: str, i: int) -> bool:
    """Whether the ZWJ at ``text[i]`` sits between two emoji (modifiers allowed)."""
    j = i - 1
    while j >= 0 and text[j] in _EMOJI_MODIFIERS:
        j -= 1
    return j >= 0 and is_emoji(text[j]) and i + 1 < len(text) and is_emoji(text[i + 1])


def clean(text: str) -> tuple[str, Counter[str]]:
    """Remove invisible characters; return the text and a count per character."""
    if text.isascii() or not any(
        char in ALWAYS_INVISIBLE or char == ZWJ or is_combining(char)
        for char in set(text)
        if not char.isascii()
    ):
        return text, Counter()  # nothing to remove: skip the walk over every character
    removed: Counter[str] = Counter()
    out: list[str] = []
    has_base = False  # whether the previous character is a kept one that can carry a mark
    for i, char in enumerate(text):
        if char in ALWAYS_INVISIBLE or (char == ZWJ and not _joins_emoji(text, i)):
            removed[char] += 1
            has_base = False  # a mark right after it has no visible base
            continue
        if is_combining(char):
            if not has_base:
                removed[char] += 1
                continue
        else:
            has_base = not char.isspace() and unicodedata.category(char) not in ("Cc", "Cf")
        out.append(char)
    return "".join(out), removed


def describe(removed: Counter[str]) -> list[str]:
    """``["U+200B×2", ...]``, ordered by code point."""
    return [f"U+{ord(c):04X}×{n}" for c, n in sorted(removed.items())]
