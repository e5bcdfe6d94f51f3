"""Invisible characters that models leak into text, and their removal.

Removed: zero-width space, word joiner, in-stream BOM, soft hyphen, a
zero-width non-joiner or joiner that is not part of the text, and combining
marks with no visible base (at the start of the text, or after whitespace or
another removed character). Combining marks on a visible base — Vietnamese
tones, Arabic harakat, Devanagari vowel signs, U+0305 over a digit — are kept,
and so are ZWNJ and ZWJ between two letters of a script that writes them
(Persian ``می‌روم``, Arabic, the Indic scripts: ``क्‍ष``) and a ZWJ inside an
emoji sequence (``👨‍👩‍👧``).
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
ALWAYS_INVISIBLE = frozenset((ZWSP, WORD_JOINER, BOM, SOFT_HYPHEN))
JOINERS = frozenset((ZWNJ, ZWJ))
# Scripts whose words are written with ZWNJ and ZWJ between their letters: Arabic
# (Persian, Urdu, ...), Syriac, Thaana, N'Ko, the Indic scripts from Devanagari to
# Sinhala, Myanmar, Khmer and Mongolian.
_JOINING_SCRIPTS = (
    (0x0600, 0x06FF),
    (0x0700, 0x07FF),
    (0x0860, 0x08FF),
    (0x0900, 0x0DFF),
    (0x1000, 0x109F),
    (0x1780, 0x18AF),
    (0xA8E0, 0xA8FF),
    (0xFB50, 0xFDFF),
    (0xFE70, 0xFEFC),
)
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


def _in_joining_script(char: str) -> bool:
    """A letter or mark of a script that writes ZWNJ and ZWJ inside its words."""
    cp = ord(char)
    return any(lo <= cp <= hi for lo, hi in _JOINING_SCRIPTS) and unicodedata.category(
        char
    ).startswith(("L", "M"))


def _part_of_text(text: str, i: int, before: str) -> bool:
    """Whether the ZWNJ or ZWJ at ``text[i]`` is part of the text: between two letters of a
    script that writes it (``before``: the character kept before it), or (ZWJ) inside an
    emoji sequence."""
    following = text[i + 1] if i + 1 < len(text) else ""
    if before and following and _in_joining_script(before) and _in_joining_script(following):
        return True
    return text[i] == ZWJ and _joins_emoji(text, i)


def _joins_emoji(text: str, i: int) -> bool:
    """Whether the ZWJ at ``text[i]`` sits between two emoji (modifiers allowed)."""
    j = i - 1
    while j >= 0 and text[j] in _EMOJI_MODIFIERS:
        j -= 1
    return j >= 0 and is_emoji(text[j]) and i + 1 < len(text) and is_emoji(text[i + 1])


def clean(text: str) -> tuple[str, Counter[str]]:
    """Remove invisible characters; return the text and a count per character.

    A removal can leave another character without what kept it (a ZWNJ kept before a
    mark that goes for want of a visible base), so the walk is repeated until nothing
    more goes: cleaning cleaned text changes nothing."""
    cleaned, removed = _clean_once(text)
    while removed:
        again, more = _clean_once(cleaned)
        if not more:
            break
        cleaned = again
        removed += more
    return cleaned, removed


def _clean_once(text: str) -> tuple[str, Counter[str]]:
    if text.isascii() or not any(
        char in ALWAYS_INVISIBLE or char in JOINERS or is_combining(char)
        for char in set(text)
        if not char.isascii()
    ):
        return text, Counter()  # nothing to remove: skip the walk over every character
    removed: Counter[str] = Counter()
    out: list[str] = []
    has_base = False  # whether the previous character is a kept one that can carry a mark
    for i, char in enumerate(text):
        if char in JOINERS and _part_of_text(text, i, out[-1] if out else ""):
            out.append(char)  # kept, and transparent: a mark after it has the letter before
            continue
        if char in ALWAYS_INVISIBLE or char in JOINERS:
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
