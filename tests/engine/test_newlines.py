"""Line endings: the LF view, restoring the file's own endings, and edits to them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from redline.engine.newlines import CR, CRLF, LF, Endings, split, to_lf
from support.endings import suffix_after_edit

# Texts built from these pieces cover every newline convention and their mixtures
# ("\r" followed by "\n" pieces join into one CRLF, as in a real file).
PIECES = st.lists(st.sampled_from(["a", "b", "\n", "\r", "\r\n"]), max_size=40)
TEXTS = PIECES.map("".join)


def _replaced_restored(original: str, start: int, end: int, new: str) -> str:
    """Split ``original``, replace LF-view ``[start, end)`` by ``new``, restore."""
    lf_text, endings = split(original)
    edited = lf_text[:start] + new + lf_text[end:]
    return endings.replace(lf_text, start, end, new).restore(edited)


# --- to_lf ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", ""),
        ("abc", "abc"),
        ("a\nb\n", "a\nb\n"),
        ("a\r\nb\r\n", "a\nb\n"),
        ("a\rb\r", "a\nb\n"),
        ("a\r\nb\rc\nd", "a\nb\nc\nd"),
        ("\r\r\n\n\r", "\n\n\n\n"),
        ("\n\r", "\n\n"),
    ],
)
def test_to_lf(text: str, expected: str) -> None:
    assert to_lf(text) == expected


@given(TEXTS)
def test_to_lf_keeps_one_newline_per_line_break(text: str) -> None:
    lf_text = to_lf(text)
    assert "\r" not in lf_text
    assert lf_text.count(LF) == len(_endings_of(text))
    assert lf_text.replace(LF, "") == text.replace(CR, "").replace(LF, "")


# --- split and restore --------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "lf_text", "style"),
    [
        ("", "", "LF"),
        ("no newline at all", "no newline at all", "LF"),
        ("a\nb\n", "a\nb\n", "LF"),
        ("a\nb", "a\nb", "LF"),
        ("a\r\nb\r\n", "a\nb\n", "CRLF"),
        ("a\r\nb", "a\nb", "CRLF"),
        ("\r\n", "\n", "CRLF"),
        ("a\rb\r", "a\nb\n", "CR"),
        ("a\rb", "a\nb", "CR"),
        ("a\r\nb\nc\r\n", "a\nb\nc\n", "mixed"),
        ("a\rb\n", "a\nb\n", "mixed"),
        ("a\r\nb\rc", "a\nb\nc", "mixed"),
        ("\r\r\n", "\n\n", "mixed"),
    ],
)
def test_split_gives_lf_view_and_style(text: str, lf_text: str, style: str) -> None:
    view, endings = split(text)
    assert view == lf_text
    assert endings.style == style
    assert endings.restore(view) == text


def test_uniform_files_remember_one_style() -> None:
    assert split("a\r\nb\r\n")[1] == Endings(CRLF)
    assert split("a\rb")[1] == Endings(CR)
    assert split("a\nb")[1] == Endings(LF)
    assert split("plain")[1] == Endings(LF)


def test_mixed_file_remembers_every_ending_in_order() -> None:
    _, endings = split("a\r\nb\nc\rd\r\n")
    assert endings == Endings(None, [CRLF, LF, CR, CRLF])
    assert endings.style == "mixed"


@pytest.mark.parametrize("style", [LF, CRLF, CR])
@pytest.mark.parametrize("trailing", [True, False])
def test_uniform_round_trip_with_and_without_final_newline(style: str, trailing: bool) -> None:
    text = style.join(["def f():", "    return 1", "", "x = f()"]) + (style if trailing else "")
    view, endings = split(text)
    assert "\r" not in view
    assert view.endswith("\n") == trailing
    assert endings.restore(view) == text


@given(TEXTS)
def test_split_restore_round_trips_byte_for_byte(text: str) -> None:
    view, endings = split(text)
    assert "\r" not in view
    assert view == to_lf(text)
    assert endings.restore(view) == text
    if endings.per_line is not None:
        assert len(endings.per_line) == view.count(LF)
        assert len(set(endings.per_line)) > 1


@given(TEXTS)
def test_style_names_the_file_convention(text: str) -> None:
    found = set(_endings_of(text))
    if not found:
        expected = "LF"
    elif len(found) == 1:
        expected = {LF: "LF", CRLF: "CRLF", CR: "CR"}[found.pop()]
    else:
        expected = "mixed"
    assert split(text)[1].style == expected


def _endings_of(text: str) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(text):
        if text.startswith(CRLF, i):
            out.append(CRLF)
            i += 2
            continue
        if text[i] in "\r\n":
            out.append(text[i])
        i += 1
    return out


def test_restore_refuses_a_view_with_the_wrong_number_of_lines() -> None:
    _, endings = split("a\r\nb\n")
    with pytest.raises(ValueError, match="number of lines"):
        endings.restore("a\nb\nc\n")
    with pytest.raises(ValueError, match="number of lines"):
        endings.restore("ab")


def test_uniform_restore_applies_style_to_new_lines() -> None:
    assert Endings(CRLF).restore("x\ny\n") == "x\r\ny\r\n"
    assert Endings(CR).restore("x\ny") == "x\ry"
    assert Endings(LF).restore("x\ny") == "x\ny"


# --- original_offset --------------------------------------------------------------


@given(TEXTS, st.data())
def test_original_offset_maps_view_positions_back(text: str, data: st.DataObject) -> None:
    view, endings = split(text)
    pos = data.draw(st.integers(0, len(view)))
    offset = endings.original_offset(view, pos)
    # Everything before the position, restored, is exactly the original prefix.
    assert to_lf(text[:offset]) == view[:pos]
    assert not (0 < offset < len(text) and text[offset - 1] == "\r" and text[offset] == "\n")


# --- Endings.replace ------------------------------------------------------------


MIXED = "a\r\nb\nc\r\nd"  # view "a\nb\nc\nd", endings CRLF, LF, CRLF


def test_mixed_replaced_lines_keep_their_endings() -> None:
    # "b\nc" holds one LF newline; the replacement line keeps it.
    view, _ = split(MIXED)
    start = view.index("b")
    assert _replaced_restored(MIXED, start, start + 3, "B\nC") == "a\r\nB\nC\r\nd"


def test_mixed_added_lines_take_the_last_replaced_ending() -> None:
    # Span "a\nb\n" holds CRLF then LF; the extra line takes LF (the last one).
    assert _replaced_restored(MIXED, 0, 4, "1\n2\n3\n4\n") == "1\r\n2\n3\n4\nc\r\nd"
    # Span "b\nc\n" holds LF then CRLF; extra lines take CRLF.
    assert _replaced_restored(MIXED, 2, 6, "1\n2\n3\n") == "a\r\n1\n2\r\n3\r\nd"


def test_mixed_added_lines_inside_one_line_take_that_line_ending() -> None:
    view, _ = split(MIXED)
    assert _replaced_restored(MIXED, view.index("a"), view.index("a") + 1, "x\ny") == (
        "x\r\ny\r\nb\nc\r\nd"
    )
    assert _replaced_restored(MIXED, view.index("b"), view.index("b") + 1, "x\ny") == (
        "a\r\nx\ny\nc\r\nd"
    )
    # An empty span (pure insertion) behaves the same way.
    assert _replaced_restored(MIXED, view.index("c"), view.index("c"), "x\n") == (
        "a\r\nb\nx\r\nc\r\nd"
    )


def test_mixed_added_lines_on_the_unterminated_last_line_take_the_previous_ending() -> None:
    view, _ = split(MIXED)
    end = len(view)
    assert _replaced_restored(MIXED, end - 1, end, "d\ne") == "a\r\nb\nc\r\nd\r\ne"
    assert _replaced_restored("a\nb\r\nc", 4, 5, "c\nd") == "a\nb\r\nc\r\nd"


def test_mixed_removed_lines_drop_their_endings() -> None:
    # "a\nb\n" (CRLF, LF) becomes one line: it keeps the first ending.
    assert _replaced_restored(MIXED, 0, 4, "ab\n") == "ab\r\nc\r\nd"
    # Joining lines removes the newline and its ending.
    assert _replaced_restored(MIXED, 1, 2, "") == "ab\nc\r\nd"
    assert _replaced_restored(MIXED, 3, 4, " ") == "a\r\nb c\r\nd"
    # Removing whole lines.
    assert _replaced_restored(MIXED, 2, 6, "") == "a\r\nd"


def test_emptied_line_between_cr_and_lf_does_not_merge_into_crlf() -> None:
    # "a\rb\n" is CR then LF; emptying "b" must not write "a\r\n" (one CRLF line).
    assert _replaced_restored("a\rb\n", 2, 3, "") == "a\r\r"
    assert _replaced_restored("\ra\n", 0, 2, "\n") == "\r\r"
    assert _replaced_restored("a\rb\nc\nd", 2, 5, "\n") == "a\r\r\r" + "d"
    # The empty lines right after it follow, or the last CR and the next LF would merge.
    assert _replaced_restored("\rb\n\n\nc\n", 1, 2, "") == "\r\r\r\rc\n"
    assert _replaced_restored("\rb\n\r\n\n", 1, 2, "") == "\r\r\r\n\n"
    # Restoring an unedited view never changes an ending.
    assert split("a\r\nb\rc\n")[1].restore("a\nb\nc\n") == "a\r\nb\rc\n"


def test_replace_returns_consistent_endings_object() -> None:
    view, endings = split(MIXED)
    after = endings.replace(view, 2, 6, "1\n2\n3\n")
    assert after.per_line == [CRLF, LF, CRLF, CRLF]
    assert after.style == "mixed"
    assert endings.per_line == [CRLF, LF, CRLF]  # the original is not changed


@pytest.mark.parametrize("style", [LF, CRLF, CR])
def test_uniform_files_are_unaffected_by_replace(style: str) -> None:
    text = style.join(["one", "two", "three"]) + style
    view, endings = split(text)
    start = view.index("two")
    assert endings.replace(view, start, start + 4, "2\n2.5\n") is endings
    assert (
        _replaced_restored(text, start, start + 4, "2\n2.5\n")
        == style.join(["one", "2", "2.5", "three"]) + style
    )


@given(TEXTS, st.data())
def test_replacing_a_span_by_itself_changes_nothing(text: str, data: st.DataObject) -> None:
    view, _ = split(text)
    start = data.draw(st.integers(0, len(view)))
    end = data.draw(st.integers(start, len(view)))
    assert _replaced_restored(text, start, end, view[start:end]) == text


@given(TEXTS, st.data(), st.lists(st.sampled_from(["x", "\n"]), max_size=8).map("".join))
def test_replace_keeps_text_outside_the_span_byte_for_byte(
    text: str, data: st.DataObject, new: str
) -> None:
    view, endings = split(text)
    start = data.draw(st.integers(0, len(view)))
    end = data.draw(st.integers(start, len(view)))
    result = _replaced_restored(text, start, end, new)
    original_start = endings.original_offset(view, start)
    original_end = endings.original_offset(view, end)
    prefix, suffix = text[:original_start], text[original_end:]
    assert result.startswith(prefix)
    suffix = suffix_after_edit(result[: len(result) - len(suffix)], suffix)
    assert result.endswith(suffix)
    assert len(result) >= len(prefix) + len(suffix)
    middle = result[len(prefix) : len(result) - len(suffix)]
    assert to_lf(middle) == new
    # New newlines only ever take endings the file already had.
    assert set(_endings_of(middle)) <= (set(_endings_of(text)) or {LF})


@given(TEXTS, st.data(), st.lists(st.sampled_from(["x", "\n"]), max_size=8).map("".join))
def test_edited_file_reads_back_as_the_edited_view(
    text: str, data: st.DataObject, new: str
) -> None:
    view, _ = split(text)
    start = data.draw(st.integers(0, len(view)))
    end = data.draw(st.integers(start, len(view)))
    result = _replaced_restored(text, start, end, new)
    assert split(result)[0] == view[:start] + new + view[end:]
