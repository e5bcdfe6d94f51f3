"""Unified diffs: the region-only computation gives the bytes of a whole-file diff."""

from __future__ import annotations

import difflib

from hypothesis import given
from hypothesis import strategies as st

from redline.engine.diff import CONTEXT, _shift, _terminated, unified, unified_spans


def whole_file_unified(path: str, before: str, after: str) -> str:
    """The straightforward version: split both texts whole and trim them line by line."""
    if before == after:
        return ""
    a = before.splitlines(keepends=True)
    b = after.splitlines(keepends=True)
    head = 0
    limit = min(len(a), len(b))
    while head < limit and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < limit - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    lo = max(0, head - CONTEXT)
    a_slice = a[lo : len(a) - max(0, tail - CONTEXT)]
    b_slice = b[lo : len(b) - max(0, tail - CONTEXT)]
    lines = difflib.unified_diff(
        _terminated(a_slice), _terminated(b_slice), f"a/{path}", f"b/{path}", n=CONTEXT
    )
    return "".join(_shift(line, lo) for line in lines)


# Few distinct lines, so that texts repeat lines and share long runs at both ends.
LINES = st.sampled_from(["a\n", "b\n", "a", "\n", "x = 1\n", "  y\n", "ab\n", "b"])
TEXT = st.lists(LINES, max_size=40).map("".join)
ODD_BREAKS = st.sampled_from(["\r", "\r\n", "\x0c", "\x85", "\u2028", "\x1c"])


@st.composite
def edits(draw: st.DrawFn, text: st.SearchStrategy[str] = TEXT) -> tuple[str, str]:
    before = draw(text)
    start = draw(st.integers(0, len(before)))
    end = draw(st.integers(start, len(before)))
    return before, before[:start] + draw(text) + before[end:]


@given(edits())
def test_same_as_the_whole_file_diff(case: tuple[str, str]) -> None:
    before, after = case
    assert unified("f.py", before, after) == whole_file_unified("f.py", before, after)


@given(edits(st.lists(st.one_of(LINES, ODD_BREAKS), max_size=30).map("".join)))
def test_same_with_other_line_boundaries(case: tuple[str, str]) -> None:
    before, after = case
    assert unified("f.py", before, after) == whole_file_unified("f.py", before, after)


@given(st.data())
def test_same_on_long_texts(data: st.DataObject) -> None:
    # Longer than the first comparison step, so that the gallop and the search both run.
    long_text = st.lists(LINES, min_size=100, max_size=400).map("".join)
    before, after = data.draw(edits(long_text))
    assert unified("f.py", before, after) == whole_file_unified("f.py", before, after)


def test_a_changed_line_in_the_middle() -> None:
    before = "".join(f"line {i}\n" for i in range(1, 11))
    after = before.replace("line 5\n", "line five\n")
    assert unified("f.py", before, after) == (
        "--- a/f.py\n+++ b/f.py\n@@ -2,7 +2,7 @@\n line 2\n line 3\n line 4\n"
        "-line 5\n+line five\n line 6\n line 7\n line 8\n"
    )


def test_a_final_line_without_newline() -> None:
    assert unified("f", "a\nb", "a\nc") == (
        "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n"
        "+c\n\\ No newline at end of file\n"
    )


def _applied(before: str, diff: str) -> str:
    """``before`` with a unified diff applied, read strictly (context must agree)."""
    a = before.splitlines(keepends=True)
    out: list[str] = []
    at = 0
    lines = diff.splitlines(keepends=True)[2:]
    for n, line in enumerate(lines):
        if line.startswith("@@"):
            start, _, length = line[4 : line.index(" +")].partition(",")
            first = int(start) - (1 if length != "0" else 0)
            out += a[at:first]
            at = first
            continue
        if line.startswith("\\"):
            continue  # "no newline at end of file": the line before it lacks one
        no_newline = n + 1 < len(lines) and lines[n + 1].startswith("\\")
        text = line[1:][:-1] if no_newline else line[1:]
        if line[0] in " -":
            assert a[at] == text, (a[at], text)
            at += 1
        if line[0] in " +":
            out.append(text)
    return "".join(out + a[at:])


_LINES = st.sampled_from(["a", "b", "def f():", "    return 1", "", "x = 1", "x = 2"])


@st.composite
def _batch_edits(draw: st.DrawFn) -> tuple[str, str, list[tuple[int, int, int]]]:
    text = "".join(line + "\n" for line in draw(st.lists(_LINES, min_size=1, max_size=80)))
    if draw(st.booleans()):
        text = text.rstrip("\n")
    cuts = sorted(draw(st.sets(st.integers(0, len(text)), max_size=10)))
    spans: list[tuple[int, int, int]] = []
    pieces: list[str] = []
    pos = 0
    for start, end in zip(cuts[::2], cuts[1::2], strict=False):
        new = draw(st.sampled_from(["", "Z\n", "q", "new\nmore\n", text[start:end].upper()]))
        pieces += [text[pos:start], new]
        spans.append((start, end, len(new)))
        pos = end
    return text, "".join([*pieces, text[pos:]]), spans


@given(_batch_edits())
def test_a_diff_of_known_spans_turns_the_old_text_into_the_new(
    edit: tuple[str, str, list[tuple[int, int, int]]],
) -> None:
    before, after, spans = edit
    diff = unified_spans("f", before, after, spans)
    assert (diff == "") == (before == after)
    assert _applied(before, diff) == after


def test_a_diff_of_one_span_is_the_diff_of_the_texts() -> None:
    before, after = "a\nb\nc\n", "a\nB\nc\n"
    assert unified_spans("f", before, after, [(2, 3, 1)]) == unified("f", before, after)


@given(_batch_edits())
def test_a_known_span_gives_the_same_diff_as_comparing_the_texts(
    edit: tuple[str, str, list[tuple[int, int, int]]],
) -> None:
    """What the span says the texts share only saves comparing it: the diff is the same."""
    before, after, spans = edit
    if len(spans) == 1:
        assert unified_spans("f", before, after, spans) == unified("f", before, after)


@given(st.data())
def test_a_known_span_with_other_line_boundaries_gives_the_whole_file_diff(
    data: st.DataObject,
) -> None:
    """A boundary other than "\\n" in the shared text or in the replacement alone."""
    text = st.lists(st.one_of(LINES, ODD_BREAKS), max_size=30).map("".join)
    before, new = data.draw(text), data.draw(text)
    start = data.draw(st.integers(0, len(before)))
    end = data.draw(st.integers(start, len(before)))
    after = before[:start] + new + before[end:]
    expected = whole_file_unified("f", before, after)
    assert unified_spans("f", before, after, [(start, end, len(new))]) == expected
