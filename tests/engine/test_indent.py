"""engine.indent.style: a file's usual indentation step, learnt in one pass over its lines."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from redline.engine.indent import Style, _usual, indentation, style, width


def one_line_at_a_time(lines: list[str]) -> tuple[Style, list[int]]:
    """The rule as it reads, a line at a time: the style and the steps in the order met."""
    steps: Counter[int] = Counter()
    tabbed = spaced = 0
    previous: int | None = None
    for line in lines:
        if not line.strip():
            continue
        indent = indentation(line)
        tabbed += indent.startswith("\t")
        spaced += indent.startswith(" ")
        current = width(indent)
        if previous is not None and current > previous:
            steps[current - previous] += 1
        previous = current
    return Style(_usual(steps), tabbed > spaced, frozenset(steps)), list(steps)


PIECES = st.sampled_from([" ", "  ", "    ", "\t", "x", "\r", "\x0c", "\u3000", "y"])
LINES = st.lists(st.lists(PIECES, max_size=8).map("".join), max_size=20)


@settings(max_examples=500)
@given(LINES)
def test_style_is_the_rule_applied_a_line_at_a_time(lines: list[str]) -> None:
    assert style(lines) == one_line_at_a_time(lines)[0]


def test_ties_go_to_the_step_met_first() -> None:
    # Two steps of 2 and two of 4: the usual step is neither (not most of the rises);
    # with one more 4 it is 4, and with the 2s first and one more 2, 2.
    assert style(["a", "  b", "a", "    b", "a", "  b", "a", "    b"]).step is None
    assert style(["a", "    b", "a", "  b", "a", "    b", "a", "  b", "a", "    b"]).step == 4
    assert style(["a", "\tb", "\t\tc", "d"]) == Style(4, True, frozenset({4}))
