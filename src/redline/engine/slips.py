"""Slips of the pen: two versions of a line that differ by a misspelt word or a
dropped or doubled mark, not by what they say."""

from __future__ import annotations

import re
from difflib import SequenceMatcher

from redline.engine.fold import compact_key, translate_punctuation

_WORDS = re.compile(r"\w+|[^\w\s]")
_MARKS = "(),:;[]"
_MAX_SLIP_PUNCTUATION = 2  # dropped or doubled ( ) , : on one line


def slips_between(expected: str, found: str) -> list[tuple[str, str]] | None:
    """The misspelt words of two versions of a line, or None if they really differ.

    Whitespace and punctuation style are tolerated; so is a word with a slip of
    one or two characters, and up to two dropped or doubled punctuation marks.
    """
    if "".join(expected.split()) == "".join(found.split()):
        return []
    text_a, text_b = translate_punctuation(expected), translate_punctuation(found)
    spans_a, spans_b = list(_WORDS.finditer(text_a)), list(_WORDS.finditer(text_b))
    a = [m.group() for m in spans_a]
    b = [m.group() for m in spans_b]
    slips: list[tuple[str, str]] = []
    punctuation = 0
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, a, b, False).get_opcodes():
        if tag == "equal":
            continue
        if tag == "replace" and i2 - i1 == j2 - j1:
            for x, y in zip(a[i1:i2], b[j1:j2], strict=True):
                if not _typo(x, y):
                    return None
                slips.append((x, y))
            continue
        if tag == "replace":
            glued = _glued_marks(text_a, spans_a[i1:i2], text_b, spans_b[j1:j2])
            if glued is None:
                return None
            punctuation += glued
            continue
        changed = a[i1:i2] + b[j1:j2]
        if not all(_is_mark(tok) for tok in changed):
            return None
        punctuation += len(changed)
    if punctuation > _MAX_SLIP_PUNCTUATION:
        return None
    return slips


def punctuation_slip(expected: str, found: str) -> bool:
    """The line differs by a dropped or doubled mark, not only by misspelt words."""
    slips = slips_between(expected, found)
    if slips is None:
        return False
    fixed = expected
    for wrong, right in slips:
        fixed = re.sub(rf"\b{re.escape(wrong)}\b", right, fixed)
    return compact_key(fixed) != compact_key(found)


def marks_left_out(expected: str, found: str) -> bool:
    """``found`` has a mark ( ) , : ; [ ] more often than ``expected``: the agent's
    version of the line left out one the file has."""
    a, b = translate_punctuation(expected), translate_punctuation(found)
    return any(b.count(mark) > a.count(mark) for mark in _MARKS)


def marks_changed(before: str, after: str) -> bool:
    """The change from ``before`` to ``after`` adds or removes a mark ( ) , : ; [ ]."""
    a, b = translate_punctuation(before), translate_punctuation(after)
    return any(b.count(mark) != a.count(mark) for mark in _MARKS)


def _glued_marks(
    text_a: str, a: list[re.Match[str]], text_b: str, b: list[re.Match[str]]
) -> int | None:
    """Marks dropped (or doubled) between words on one side only, the words the same
    once joined and nothing else between them (``str(note`` written ``strnote``):
    how many; else None."""
    sides = []
    for text, matches in ((text_a, a), (text_b, b)):
        if any(c.isspace() for c in text[matches[0].start() : matches[-1].end()]):
            return None
        tokens = [m.group() for m in matches]
        sides.append((
            [tok for tok in tokens if _is_mark(tok)],
            "".join(tok for tok in tokens if not _is_mark(tok)),
        ))  # fmt: skip
    (marks_a, words_a), (marks_b, words_b) = sides
    if bool(marks_a) == bool(marks_b) or words_a != words_b:
        return None
    return len(marks_a) + len(marks_b)


def _letter_dropped(a: str, b: str) -> bool:
    """A short word with one letter dropped or doubled (``KY`` for ``KEY``): a letter
    changed in a word this short may be another word, a letter left out is a slip."""
    short, long = sorted((a, b), key=len)
    if len(short) < 2 or len(long) != len(short) + 1:
        return False
    return any(long[:i] + long[i + 1 :] == short for i in range(len(long)))


def _is_mark(token: str) -> bool:
    return token in _MARKS


def _typo(a: str, b: str) -> bool:
    """A slip of one or two letters in a word; never a changed number or digit."""
    if not (a.isidentifier() and b.isidentifier()):
        return False
    if [c for c in a if c.isdigit()] != [c for c in b if c.isdigit()]:
        return False
    if min(len(a), len(b)) < 4:
        return _letter_dropped(a, b)
    from rapidfuzz.distance import OSA  # only tolerant matches get here

    limit = 1 if max(len(a), len(b)) <= 8 else 2
    return bool(OSA.distance(a, b) <= limit)
