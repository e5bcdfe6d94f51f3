"""engine.hunks: placing the hunks of one Update, and writing the updated text."""

from __future__ import annotations

import re
from collections import Counter
from typing import cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from redline.engine.hunks import (
    _SCANS,
    KEYS,
    HunkError,
    HunkEvidence,
    _kept,
    _Keyed,
    apply_hunks,
    split_lines,
)
from redline.engine.patch_parse import Hunk, HunkKind, HunkLine, UpdateFile, parse_patch


def hunk(*lines: str, anchor: str | None = None, eof: bool = False) -> Hunk:
    """A hunk from prefixed lines: ``" context"``, ``"-removed"``, ``"+added"``."""
    return Hunk(anchor, tuple(HunkLine(cast(HunkKind, line[0]), line[1:]) for line in lines), eof)


def apply(text: str, *hunks: Hunk) -> tuple[str, list[HunkEvidence], Counter[str]]:
    return apply_hunks(text, hunks, "f.txt")


def updated(text: str, *hunks: Hunk) -> str:
    return apply(text, *hunks)[0]


def only(text: str, *lines: str, anchor: str | None = None, eof: bool = False) -> HunkEvidence:
    (evidence,) = apply(text, hunk(*lines, anchor=anchor, eof=eof))[1]
    return evidence


def refused(text: str, *hunks: Hunk) -> HunkError:
    with pytest.raises(HunkError) as info:
        apply(text, *hunks)
    return info.value


# --- passes: exact (first occurrence) → rstrip → strip (one place) -----------------


def test_exact_pass() -> None:
    text, (evidence,), removed = apply("a\nb\nc\n", hunk(" a", "-b", "+B", " c"))
    assert text == "a\nB\nc\n"
    assert evidence == HunkEvidence(1, "exact", 1.0, 1, 3, 0, None, "a\nb\nc", "a\nb\nc")
    assert removed == Counter()


def test_rstrip_pass_keeps_the_files_trailing_spaces() -> None:
    # The file has trailing spaces the patch's context line lacks: the context
    # line keeps the file's bytes, only the '-' line changes.
    text, (evidence,), _ = apply("a\nb  \nc\n", hunk(" b", "-c", "+C"))
    assert text == "a\nb  \nC\n"
    assert (evidence.match_type, evidence.confidence) == ("rstrip", 0.99)
    assert (evidence.start_line, evidence.end_line) == (2, 3)
    assert evidence.matched_text == "b  \nc"


def test_rstrip_pass_when_the_patch_has_trailing_spaces() -> None:
    assert only("a\nb\nc\n", " b   ", "-c", "+C").match_type == "rstrip"


def test_strip_pass_keeps_the_files_indentation() -> None:
    text, (evidence,), _ = apply(
        "def f():\n    if x:\n        return 1\n", hunk(" if x:", "-return 1", "+        return 2")
    )
    # Context keeps the file's indentation; added lines are written as given.
    assert text == "def f():\n    if x:\n        return 2\n"
    assert (evidence.match_type, evidence.confidence) == ("strip", 0.98)
    assert (evidence.start_line, evidence.end_line) == (2, 3)
    assert evidence.matched_text == "    if x:\n        return 1"


def test_exact_is_preferred_over_an_earlier_rstrip_match() -> None:
    # Passes run in order over the whole remaining file: an exact match later in the
    # file wins over a whitespace-tolerant one earlier.
    text, (evidence,), _ = apply("x  \ny\nx\ny\n", hunk(" x", "-y", "+Y"))
    assert text == "x  \ny\nx\nY\n"
    assert evidence.match_type == "exact"
    assert evidence.start_line == 3


def test_an_exact_hunk_that_fits_several_places_is_refused_not_put_at_the_first() -> None:
    # Codex takes the first; redline does not guess (issue C6: every pass).
    message = str(refused("b\nb\nb\n", hunk("-b", "+B")))
    assert "its lines match exactly, at 3 places (lines 1, 2, 3)" in message
    assert "add context lines or an '@@' anchor" in message


def test_other_matches_are_counted_where_context_picks_one_place() -> None:
    text, (evidence,), _ = apply("a\nb\nc\nb\nb\n", hunk(" a", "-b", "+B"))
    assert text == "a\nB\nc\nb\nb\n"
    assert (evidence.start_line, evidence.other_matches) == (1, 0)
    evidence = only("a\nb\nc\nb\n", " c", "-b", "+B")
    assert (evidence.start_line, evidence.other_matches) == (3, 0)


def test_other_matches_counts_places_before_the_previous_hunk_too() -> None:
    text = "top\nk\nv\nk\nv\n"
    _, (_, second), _ = apply(text, hunk(" top", "-k", "+K"), hunk(" k", "-v", "+V"))
    assert second.start_line == 4
    assert second.other_matches == 1


def test_other_matches_is_counted_under_the_pass_that_matched() -> None:
    text = "b \nb\nb  \n"
    evidence = only(text, "-b ", "+B")
    assert (evidence.match_type, evidence.start_line, evidence.other_matches) == ("exact", 1, 0)
    # Under rstrip, "b ", "b" and "b  " are the same line: a tolerant pass does not
    # choose among three places...
    assert "at 3 places (lines 1, 2, 3)" in str(refused(text, hunk("-b   ", "+B")))
    # ...but after a first hunk one is left, and the two before it are counted.
    _, (_, second), _ = apply(text, hunk("-b", "+B"), hunk("-b   ", "+B"))
    assert (second.match_type, second.start_line, second.other_matches) == ("rstrip", 3, 2)


def test_hunks_apply_in_order_each_after_the_previous() -> None:
    # The second hunk's line is also before the first hunk's place: searched after it,
    # one place fits.
    text = "head\nx = 1\nsep\nx = 1\n"
    new, evidence, _ = apply(text, hunk(" head", "-x = 1", "+x = 2"), hunk("-x = 1", "+x = 3"))
    assert new == "head\nx = 2\nsep\nx = 3\n"
    assert [(e.hunk, e.start_line) for e in evidence] == [(1, 1), (2, 4)]
    # After the cursor, two places would fit: refused.
    text = "head\nx = 1\nx = 1\nx = 1\n"
    assert "at 2 places (lines 3, 4)" in str(
        refused(text, hunk(" head", "-x = 1", "+x = 2"), hunk("-x = 1", "+x = 3"))
    )


def test_second_hunk_matches_after_the_first_even_when_it_also_fits_before() -> None:
    text = "y\nfirst\ny\n"
    new, (_, second), _ = apply(text, hunk(" first"), hunk("-y", "+Y"))
    assert new == "y\nfirst\nY\n"
    assert second.start_line == 3


def test_evidence_lines_are_in_the_original_file() -> None:
    # The first hunk adds two lines; the second hunk's lines are still counted in
    # the file before the patch.
    text = "a\nb\nc\nd\ne\n"
    _, evidence, _ = apply(text, hunk(" a", "+a1", "+a2"), hunk(" d", "-e", "+E"))
    assert [(e.start_line, e.end_line) for e in evidence] == [(1, 1), (4, 5)]


def test_deletion_only_hunk() -> None:
    text, (evidence,), _ = apply("a\nb\nc\n", hunk(" a", "-b"))
    assert text == "a\nc\n"
    assert (evidence.start_line, evidence.end_line) == (1, 2)


# --- punctuation/space folding ---------------------------------------------------


@pytest.mark.parametrize(
    ("file_line", "patch_line"),
    [
        ("say “hi” and ‘bye’", "say \"hi\" and 'bye'"),  # curly vs straight quotes
        ('say "hi"', "say “hi”"),  # and the other way round
        ("a – b — c", "a - b - c"),  # dashes
        ("你好，世界！（测试）", "你好,世界!(测试)"),  # full-width CJK punctuation
        ("列表、项目：值；结束", "列表,项目:值;结束"),  # ideographic comma, full-width : ;
        ("f(a , b)", "f(a, b)"),  # spacing before a comma
        ("f( a, b )", "f(a,b)"),  # spacing inside brackets and after a comma
        ("total:\u00a0 5", "total: 5"),  # no-break space
    ],
)
def test_punctuation_folding_matches_one_place(file_line: str, patch_line: str) -> None:
    text = f"head\n{file_line}\nold\ntail\n"
    new, (evidence,), _ = apply(text, hunk(" " + patch_line, "-old", "+new"))
    assert new == f"head\n{file_line}\nnew\ntail\n"  # the context keeps the file's bytes
    assert (evidence.match_type, evidence.confidence) == ("punctuation", 0.97)
    assert (evidence.start_line, evidence.end_line) == (2, 3)
    assert evidence.other_matches == 0
    assert evidence.matched_text == f"{file_line}\nold"


def test_punctuation_folding_at_several_places_is_refused_with_the_candidates() -> None:
    text = "say “hi”\nx\nmid\nsay «hi»\nx\n"
    error = refused(text, hunk(' say "hi"', "-x", "+y"))
    message = str(error)
    assert message.startswith("hunk not found (1/1) in f.txt")
    assert "at 2 places (lines 1, 4)" in message
    assert "add context lines or an '@@' anchor" in message
    assert error.hunk == 1


def test_punctuation_candidates_before_the_previous_hunk_do_not_count() -> None:
    text = "say “hi”\nx\nmid\nsay «hi»\nx\n"
    new, (_, second), _ = apply(text, hunk(" mid"), hunk(' say "hi"', "-x", "+y"))
    assert new == "say “hi”\nx\nmid\nsay «hi»\ny\n"
    assert (second.match_type, second.start_line) == ("punctuation", 4)


def test_an_anchor_settles_ambiguous_punctuation() -> None:
    text = "def a():\n  s = “hi”\ndef b():\n  s = “hi”\n"
    new, (evidence,), _ = apply(text, hunk('-  s = "hi"', "+  s = 'yo'", anchor="def b():"))
    assert new == "def a():\n  s = “hi”\ndef b():\n  s = 'yo'\n"
    assert (evidence.match_type, evidence.start_line, evidence.anchor_found) == (
        "punctuation",
        4,
        True,
    )


def test_whitespace_passes_come_before_punctuation() -> None:
    evidence = only('  say “hi”\n  say "hi"\n', ' say "hi"')
    assert (evidence.match_type, evidence.start_line) == ("strip", 2)


# --- '@@' anchors ----------------------------------------------------------------


DUPLICATE_BLOCKS = "def f():\n    x = 1\n\ndef g():\n    x = 1\n"


def test_anchor_places_the_hunk_after_it() -> None:
    new, (evidence,), _ = apply(
        DUPLICATE_BLOCKS, hunk("-    x = 1", "+    x = 2", anchor="def g():")
    )
    assert new == "def f():\n    x = 1\n\ndef g():\n    x = 2\n"
    assert evidence.anchor_found is True
    assert (evidence.start_line, evidence.end_line) == (5, 5)
    assert evidence.other_matches == 1


def test_anchor_matched_ignoring_surrounding_whitespace() -> None:
    evidence = only(DUPLICATE_BLOCKS, "-    x = 1", "+    x = 2", anchor="  def g():  ")
    assert (evidence.anchor_found, evidence.start_line) == (True, 5)


def test_anchor_must_be_a_whole_line() -> None:
    # "g()" is only part of "def g():": not an anchor, so the body alone is matched —
    # at two places, so refused.
    message = str(refused(DUPLICATE_BLOCKS, hunk("-    x = 1", "+    x = 2", anchor="g()")))
    assert "at 2 places (lines 2, 5)" in message


def test_anchor_not_found_matches_the_body_alone() -> None:
    new, (evidence,), _ = apply(
        DUPLICATE_BLOCKS, hunk(" def f():", "-    x = 1", "+    x = 2", anchor="def h():")
    )
    assert new == "def f():\n    x = 2\n\ndef g():\n    x = 1\n"
    assert evidence.anchor_found is False
    assert evidence.start_line == 1
    # the body alone fits two places: refused
    assert "at 2 places" in str(
        refused(DUPLICATE_BLOCKS, hunk("-    x = 1", "+    x = 2", anchor="def h():"))
    )


def test_an_anchor_bounds_the_search_to_its_section() -> None:
    # "k = 1" twice after the first "[s]": the section up to the next "[s]" holds one.
    text = "[s]\nk = 1\n[s]\nk = 1\n"
    new, (evidence,), _ = apply(text, hunk("-k = 1", "+k = 2", anchor="[s]"))
    assert new == "[s]\nk = 2\n[s]\nk = 1\n"
    assert (evidence.anchor_found, evidence.start_line) == (True, 2)


def test_no_anchor_reports_none() -> None:
    assert only("a\n", "-a", "+b").anchor_found is None
    assert only("a\n", "-a", "+b", anchor="   ").anchor_found is None


def test_anchor_is_searched_after_the_previous_hunk() -> None:
    text = "[s]\nk = 1\n[s]\nk = 1\n"
    new, (_, second), _ = apply(
        text, hunk("-k = 1", "+k = 2", anchor="[s]"), hunk("-k = 1", "+k = 3", anchor="[s]")
    )
    assert new == "[s]\nk = 2\n[s]\nk = 3\n"
    assert (second.anchor_found, second.start_line) == (True, 4)


# --- pure additions --------------------------------------------------------------


def test_pure_addition_after_its_anchor() -> None:
    new, (evidence,), _ = apply(
        "import os\n\ndef f():\n    pass\n", hunk("+import sys", anchor="import os")
    )
    assert new == "import os\nimport sys\n\ndef f():\n    pass\n"
    assert evidence == HunkEvidence(1, "exact", 1.0, 2, 1, 0, True, "")


def test_pure_addition_with_a_missing_anchor_is_appended() -> None:
    new, (evidence,), _ = apply("a\nb\n", hunk("+c", anchor="nowhere"))
    assert new == "a\nb\nc\n"
    assert (evidence.anchor_found, evidence.start_line, evidence.end_line) == (False, 3, 2)


def test_pure_addition_without_anchor_is_appended() -> None:
    new, (evidence,), _ = apply("a\nb\n", hunk("+c", "+d"))
    assert new == "a\nb\nc\nd\n"
    assert evidence.anchor_found is None


def test_pure_addition_to_an_empty_file() -> None:
    assert updated("", hunk("+first")) == "first\n"


def test_pure_addition_to_a_file_without_final_newline() -> None:
    # The last line keeps its text and gets an ending; the added line is not glued to it.
    assert updated("a\nb", hunk("+c")) == "a\nb\nc\n"
    assert updated("a\r\nb", hunk("+c")) == "a\r\nb\r\nc\r\n"


def test_context_free_pure_addition_before_a_later_hunk_is_appended_at_the_end() -> None:
    # Codex appends it at the end and goes on from where it was; it used to fail
    # the next hunk with "hunks must follow the order of the file".
    text, evidence, _ = apply("a\nb\nc\nd\n", hunk("+added"), hunk(" b", "-c", "+C"))
    assert text == "a\nb\nC\nd\nadded\n"
    assert [(e.hunk, e.start_line, e.end_line) for e in evidence] == [(1, 5, 4), (2, 2, 3)]


def test_pure_addition_with_a_missing_anchor_before_later_hunks_is_appended() -> None:
    text = updated(
        "a\nb\nc\nd\n",
        hunk("+x", anchor="nowhere"),
        hunk("-a", "+A"),
        hunk("+y"),
        hunk(" c", "-d", "+D"),
    )
    assert text == "A\nb\nc\nD\nx\ny\n"


def test_pure_addition_after_its_anchor_still_moves_the_cursor() -> None:
    # An anchored insertion is placed where its anchor is: a later hunk before
    # it is out of order, as before.
    error = refused("a\nb\nc\n", hunk("+x", anchor="c"), hunk("-a", "+A"))
    assert "hunks must follow the order of the file" in str(error)


# --- *** End of File ---------------------------------------------------------------


def test_end_of_file_pins_to_the_end_despite_an_earlier_duplicate() -> None:
    text = "x\ny\nmid\nx\ny\n"
    new, (evidence,), _ = apply(text, hunk(" x", "-y", "+Y", eof=True))
    assert new == "x\ny\nmid\nx\nY\n"
    assert (evidence.start_line, evidence.end_line, evidence.match_type) == (4, 5, "exact")


def test_end_of_file_allows_trailing_blank_lines() -> None:
    text = "x\ny\nx\ny\n\n\n"
    new, (evidence,), _ = apply(text, hunk(" x", "-y", "+Y", eof=True))
    assert new == "x\ny\nx\nY\n\n\n"
    assert evidence.start_line == 3


def test_end_of_file_with_whitespace_difference() -> None:
    evidence = only("a\nlast  \n", "-last", "+LAST", eof=True)
    assert (evidence.match_type, evidence.start_line) == ("rstrip", 2)


def test_end_of_file_not_at_the_end_is_an_error() -> None:
    message = str(refused("x\ny\nz\n", hunk(" x", "-y", "+Y", eof=True)))
    assert message.startswith("hunk not found (1/1) in f.txt: expected line 'x'")
    assert "at the end of the file (the hunk has *** End of File)" in message


def test_end_of_file_cannot_reuse_lines_of_the_previous_hunk() -> None:
    # The last line was already replaced by hunk 1: pinning hunk 2 onto it would
    # duplicate the line.
    error = refused("a\nb\n", hunk("-b", "+B"), hunk(" b", "+c", eof=True))
    assert error.hunk == 2
    assert str(error).startswith("hunk not found (2/2) in f.txt: expected line 'b' at the end")


def test_end_of_file_after_an_earlier_hunk() -> None:
    new, (_, second), _ = apply("a\nb\n", hunk("-a", "+A"), hunk(" b", "+c", eof=True))
    assert new == "A\nb\nc\n"
    assert (second.start_line, second.end_line) == (2, 2)


def test_end_of_file_on_a_file_without_final_newline() -> None:
    assert updated("a\nb", hunk(" b", "+c", eof=True)) == "a\nb\nc\n"


# --- newline style ---------------------------------------------------------------


@pytest.mark.parametrize("nl", ["\n", "\r\n", "\r"])
def test_added_lines_follow_the_files_newline_style(nl: str) -> None:
    text = nl.join(["a", "b", "c"]) + nl
    new = updated(text, hunk(" a", "-b", "+B1", "+B2", " c"))
    assert new == nl.join(["a", "B1", "B2", "c"]) + nl


def test_mixed_file_added_lines_take_the_ending_of_the_following_line() -> None:
    # Codex scenario 024: "two\r" + "three\n" + "four\r\n".
    text = "one\r\ntwo\rthree\nfour\r\n"
    new = updated(text, hunk(" one", " two", "-three", "+THREE", " four"))
    assert new == "one\r\ntwo\rTHREE\r\nfour\r\n"


def test_mixed_file_insertion_before_an_lf_line() -> None:
    text = "a\r\nb\nc\r\n"
    assert updated(text, hunk(" a", "+new", " b")) == "a\r\nnew\nb\nc\r\n"


def test_mixed_file_added_lines_at_the_end_take_the_previous_lines_ending() -> None:
    assert updated("a\nb\r\n", hunk(" b", "+c")) == "a\nb\r\nc\r\n"
    assert updated("a\r\nb\n", hunk(" b", "+c")) == "a\r\nb\nc\n"
    # The file's last line replaced: the line before it decides.
    assert updated("a\r\nb\n", hunk("-b", "+B")) == "a\r\nB\r\n"


def test_mixed_file_unterminated_last_line_followed_by_added_lines() -> None:
    assert updated("a\nb\r\nc", hunk(" c", "+d")) == "a\nb\r\nc\r\nd\r\n"


def test_mixed_file_replaced_line_keeps_the_ending_of_the_line_it_replaces() -> None:
    # Issue 10 item 8: the replaced CRLF line was written as LF.
    text = "one\r\ntwo\nthree\r\nfour\n"
    new = updated(text, hunk(" two", "-three", "+THREE", " four"))
    assert new == "one\r\ntwo\nTHREE\r\nfour\n"
    # And an LF line between CRLF lines stays LF.
    text = "a\r\nb\nc\r\nd\n"
    assert updated(text, hunk(" a", "-b", "+B", " c")) == "a\r\nB\nc\r\nd\n"


def test_mixed_file_replaced_lines_take_the_endings_in_order_and_extras_follow() -> None:
    text = "a\nb\r\nc\nd\r\ne\n"
    new = updated(text, hunk(" a", "-b", "-c", "+B", "+C", "+extra", " d"))
    # B and C replace b (CRLF) and c (LF); the extra line follows d (CRLF).
    assert new == "a\nB\r\nC\nextra\r\nd\r\ne\n"


def test_mixed_file_replacement_of_a_stray_ending_follows_its_neighbours() -> None:
    # Only one line ends with LF: like Codex's scenario 024, its replacement
    # follows the line after it.
    assert updated("a\r\nb\nc\r\n", hunk("-b", "+B", " c")) == "a\r\nB\r\nc\r\n"


def test_mixed_file_empty_added_line_after_a_cr_line_is_not_read_as_crlf() -> None:
    text = "a\rb\nc\nd\r"
    new = updated(text, hunk(" a", "-b", "+", " c"))
    assert new == "a\r\rc\nd\r"
    assert new.splitlines() == ["a", "", "c", "d"]


def test_context_lines_keep_their_own_endings() -> None:
    text = "a\r\nb\nc\r\n"
    assert updated(text, hunk(" a", "-b", "+B", " c")) == "a\r\nB\r\nc\r\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("no newline at end", "first line\nsecond line\n"),  # Codex scenario 014
        ("a\r\nb", "a\r\nfirst line\r\nsecond line\r\n"),
    ],
)
def test_updated_file_always_ends_with_a_newline(text: str, expected: str) -> None:
    last = text.splitlines()[-1]
    assert updated(text, hunk("-" + last, "+first line", "+second line")) == expected


def test_context_only_change_at_an_unterminated_end_adds_the_newline() -> None:
    assert updated("a\nb", hunk("-a", "+A", " b")) == "A\nb\n"


def test_deleting_every_line_leaves_an_empty_file() -> None:
    assert updated("a\nb\n", hunk("-a", "-b")) == ""


# --- invisible characters ----------------------------------------------------------


def test_invisible_characters_are_removed_from_added_lines_only() -> None:
    text = "a\n\u200bb\nc\n"
    new, (evidence,), removed = apply(text, hunk(" \u200bb", "-c", "+C\u200b\u2060"))
    assert new == "a\n\u200bb\nC\n"  # the file's own ZWSP stays
    assert removed == Counter({"\u200b": 1, "\u2060": 1})
    assert evidence.matched_text == "\u200bb\nc"


def test_context_without_the_files_zwsp_still_matches_by_folding() -> None:
    new, (evidence,), removed = apply("x\u200by\nold\n", hunk(" xy", "-old", "+new"))
    assert new == "x\u200by\nnew\n"
    assert evidence.match_type == "punctuation"
    assert removed == Counter()


def test_emoji_joiner_in_an_added_line_is_kept() -> None:
    family = "\U0001f468\u200d\U0001f469"
    new, _, removed = apply("a\n", hunk(" a", f"+{family}"))
    assert new == f"a\n{family}\n"
    assert removed == Counter()


# --- a trailing empty context line -------------------------------------------------


def test_trailing_empty_context_line_that_does_not_match_is_dropped() -> None:
    new, (evidence,), _ = apply("a\nb\nc\n", hunk(" a", "-b", "+B", " "))
    assert new == "a\nB\nc\n"
    assert (evidence.start_line, evidence.end_line) == (1, 2)


def test_trailing_empty_context_line_that_matches_is_kept() -> None:
    new, (evidence,), _ = apply("a\nb\n\nc\n", hunk(" a", "-b", "+B", " "))
    assert new == "a\nB\n\nc\n"
    assert (evidence.start_line, evidence.end_line) == (1, 3)


def test_trailing_empty_context_line_that_matches_later_is_kept() -> None:
    # With the empty line the hunk matches the second block only: it is not dropped.
    text = "a\nb\nx\na\nb\n\n"
    new, (evidence,), _ = apply(text, hunk(" a", "-b", "+B", " "))
    assert new == "a\nb\nx\na\nB\n\n"
    assert evidence.start_line == 4


def test_only_one_trailing_empty_line_is_dropped() -> None:
    message = str(refused("a\nb\nc\n", hunk(" a", "-b", "+B", " ", " ")))
    assert message.startswith("hunk not found (1/1)")


def test_leading_empty_context_line_must_match() -> None:
    message = str(refused("a\nb\n", hunk(" ", " a", "-b", "+B")))
    assert message.startswith("hunk not found (1/1) in f.txt: expected line 'a'")


# --- error messages ----------------------------------------------------------------


def test_not_found_names_the_hunk_and_the_first_expected_line() -> None:
    error = refused("a\nb\nc\n", hunk(" a", "-b", "+B"), hunk(" zzz", "-c", "+C"))
    assert error.hunk == 2
    assert str(error) == (
        "hunk not found (2/2) in f.txt: expected line 'zzz', which is not in the file; "
        "re-read the file and copy the context lines exactly"
    )


def test_not_found_skips_blank_lines_when_naming_the_expected_line() -> None:
    message = str(refused("a\n", hunk(" ", "-missing", "+x")))
    assert "expected line 'missing'" in message


def test_not_found_when_the_first_line_is_there_but_the_rest_differs() -> None:
    message = str(refused("a\nb\nc\n", hunk(" b", "-x", "+y")))
    assert message == (
        "hunk not found (1/1) in f.txt: expected line 'b': that line is at line 2, but the "
        "hunk's other lines do not follow it there; re-read the file and copy the context "
        "lines exactly"
    )


def test_not_found_before_the_previous_hunk() -> None:
    error = refused("a\nb\nc\nd\n", hunk(" c", "-d", "+D"), hunk("-a", "+A"))
    assert error.hunk == 2
    assert str(error) == (
        "hunk not found (2/2) in f.txt: expected line 'a': it is at line 1, before the "
        "previous hunk (which ends at line 4); hunks must follow the order of the file"
    )


def test_not_found_only_a_fragment_of_a_longer_line() -> None:
    message = str(refused("def main():\n    run()\n", hunk(" main", "-    run()", "+    go()")))
    assert message == (
        "hunk not found (1/1) in f.txt: expected line 'main': it is only a fragment of the "
        "longer line 1 ('def main():'); hunk lines must be whole lines"
    )


def test_a_failing_hunk_fails_the_whole_update() -> None:
    error = refused("a\nb\n", hunk("-a", "+A"), hunk("-nope", "+x"), hunk("-b", "+B"))
    assert error.hunk == 2
    assert str(error).startswith("hunk not found (2/3) in f.txt")


# --- from patch text -------------------------------------------------------------


def test_hunks_from_parsed_patch_text() -> None:
    patch = parse_patch(
        "*** Begin Patch\n*** Update File: f.txt\n@@ class A:\n     def f(self):\n-        return 1\n"
        "+        return 2\n@@\n-tail\n+TAIL\n*** End of File\n*** End Patch\n"
    )
    (op,) = patch.operations
    assert isinstance(op, UpdateFile)
    text = "class A:\n    def f(self):\n        return 1\ntail\n"
    new, evidence, _ = apply_hunks(text, op.hunks, op.path)
    assert new == "class A:\n    def f(self):\n        return 2\nTAIL\n"
    assert [(e.hunk, e.match_type, e.start_line, e.end_line, e.anchor_found) for e in evidence] == [
        (1, "exact", 2, 3, True),
        (2, "exact", 4, 4, None),
    ]


# --- properties --------------------------------------------------------------------

_LINE_TEXT = st.text(
    alphabet=st.characters(
        codec="utf-8",
        exclude_categories=("Cc", "Cs", "Cf", "Zl", "Zp", "Mn", "Me"),
    ),
    max_size=12,
)


@st.composite
def single_line_replacement(draw: st.DrawFn) -> tuple[list[str], int, str, int, int]:
    """Distinct file lines, the index replaced, its new text, and context before/after."""
    lines = draw(st.lists(_LINE_TEXT, min_size=2, max_size=30, unique=True))
    index = draw(st.integers(0, len(lines) - 1))
    new = draw(_LINE_TEXT.filter(lambda s: s not in lines))
    before = draw(st.integers(0, min(3, index)))
    after_max = min(3 - before, len(lines) - 1 - index)
    after_min = 0 if before else 1
    if after_min > after_max:  # the last line, and no context drawn before it
        before, after_min = 1, 0
    after = draw(st.integers(after_min, after_max))
    return lines, index, new, before, after


def _replacement_hunk(
    lines: list[str], index: int, old: str, new: str, before: int, after: int
) -> Hunk:
    context_before = [" " + line for line in lines[index - before : index]]
    context_after = [" " + line for line in lines[index + 1 : index + 1 + after]]
    return hunk(*context_before, "-" + old, "+" + new, *context_after)


@given(case=single_line_replacement(), nl=st.sampled_from(["\n", "\r\n"]))
def test_single_line_replacement_and_its_inverse(
    case: tuple[list[str], int, str, int, int], nl: str
) -> None:
    lines, index, new, before, after = case
    assert 1 <= before + after <= 3
    assert index - before >= 0 and index + after < len(lines)
    original = "".join(line + nl for line in lines)
    expected_lines = [*lines[:index], new, *lines[index + 1 :]]
    expected = "".join(line + nl for line in expected_lines)

    forward = _replacement_hunk(lines, index, lines[index], new, before, after)
    result, (evidence,), removed = apply_hunks(original, [forward], "f.txt")
    assert result == expected
    assert removed == Counter()
    assert evidence.match_type == "exact"
    assert evidence.start_line == index - before + 1
    assert evidence.end_line == index + after + 1
    assert evidence.matched_text == "\n".join(lines[index - before : index + after + 1])

    inverse = _replacement_hunk(expected_lines, index, new, lines[index], before, after)
    restored, _, _ = apply_hunks(result, [inverse], "f.txt")
    assert restored.encode("utf-8") == original.encode("utf-8")


# --- the large-file paths give what the line-by-line ones give -----------------------

_LINES = st.lists(st.sampled_from(["", "a", "b", " a", "a ", "}", "x = 1"]), max_size=40)
_ENDINGS = st.sampled_from(["\n", "\r\n", "\r"])


def _by_regex(text: str) -> list[tuple[str, str]]:
    """Lines as the general path reads them (any of the three newlines)."""
    out = []
    for raw in re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z", text):
        content = raw.rstrip("\r\n")
        out.append((content, raw[len(content) :]))
    return out


@given(_LINES, st.booleans(), st.lists(_ENDINGS, min_size=1, max_size=3))
def test_splitting_a_file_in_c_gives_the_lines_the_regex_gives(
    lines: list[str], last_newline: bool, endings: list[str]
) -> None:
    lf = "\n".join(lines) + ("\n" if last_newline else "")
    assert split_lines(lf) == _by_regex(lf)  # LF only: the fast path
    mixed = "".join(line + endings[i % len(endings)] for i, line in enumerate(lines))
    assert split_lines(mixed) == _by_regex(mixed)


@given(
    _LINES,
    st.lists(st.sampled_from(["a", "b", " a", "}", ""]), min_size=1, max_size=3),
    st.integers(0, 45),
    st.sampled_from(sorted(KEYS)),
)
def test_a_look_up_by_scanning_finds_what_the_index_finds(
    lines: list[str], old: list[str], start: int, name: str
) -> None:
    scanned = _Keyed(lines)
    indexed = _Keyed(lines)
    for _ in range(_SCANS):  # spend the scans: the next look-up builds the index
        indexed.all(name, ["unused"], 0)
    assert scanned.all(name, old, start) == indexed.all(name, old, start)


@given(_LINES, st.lists(_ENDINGS, min_size=1, max_size=3), st.integers(0, 40), st.integers(0, 40))
def test_kept_lines_are_the_files_bytes(
    lines: list[str], endings: list[str], a: int, b: int
) -> None:
    pairs = [(line, endings[i % len(endings)]) for i, line in enumerate(lines)]
    start, end = sorted((min(a, len(pairs)), min(b, len(pairs))))
    kept = _kept(pairs, start, end)
    assert len(kept) <= 3
    assert "".join(k.text + (k.ending or "") for k in kept) == "".join(
        c + e for c, e in pairs[start:end]
    )
    if kept:  # the first and last lines stay lines: their endings are read around changes
        assert (kept[0].text, kept[0].ending) == pairs[start]
        assert (kept[-1].text, kept[-1].ending) == pairs[end - 1]


def test_an_exact_hunk_in_a_large_file_lands_where_the_line_by_line_path_puts_it() -> None:
    text = "".join(f"def f{i}(x):\n    return x + {i % 7}\n" for i in range(5000))
    h = hunk(" def f2500(x):", "-    return x + 1", "+    return x + 100")
    done, (evidence,), _ = apply(text, h)
    assert (evidence.match_type, evidence.start_line) == ("exact", 5001)
    assert done == text.replace(
        "def f2500(x):\n    return x + 1\n", "def f2500(x):\n    return x + 100\n"
    )
