"""Slips of the pen: a misspelt word or a dropped or doubled mark, not a real change."""

from __future__ import annotations

import pytest

from redline.engine.slips import punctuation_slip, slips_between


@pytest.mark.parametrize(
    ("expected", "found", "slips"),
    [
        ("x = 1", "x  =  1", []),
        ("call(“a”)", 'call("a")', []),
        ("value = compute_total()", "value = compute_totl()", [("compute_total", "compute_totl")]),
        ("x = 1", "x = 2", None),
        ("timeout = 30", "timeout = 60", None),
        ("run(a)", "run(b)", None),
        ("value = compute()", "value = compute() + 1", None),
        ("edit = str(note)", "edit = strnote)", []),  # a dropped mark glues two words
        ("f(a, b)", "f(ab)", None),  # a space and a comma: not only a mark
        ("x = a(b)", "x = ab)", []),
        ("x = ab", "x = ba", None),
        ("id INTEGER PRIMARY KEY,", "id INTEGER PRIMARY KY,", [("KEY", "KY")]),
        ("if a in b:", "if a is b:", None),  # a letter changed in a short word
        ("x = a", "x = an", None),  # a one-letter word
    ],
)
def test_slips_between(expected: str, found: str, slips: list[tuple[str, str]] | None) -> None:
    assert slips_between(expected, found) == slips


@pytest.mark.parametrize(
    ("expected", "found", "mark"),
    [
        ("def f(a, b:", "def f(a, b):", True),
        ("class Node::", "class Node:", True),
        ("return self._cahce[key]", "return self._cache[key]", False),
        ("x = 1", "x  =  1", False),
    ],
)
def test_punctuation_slip_tells_a_dropped_mark_from_a_misspelt_word(
    expected: str, found: str, mark: bool
) -> None:
    assert punctuation_slip(expected, found) is mark
