"""engine.lineage: the lines an edit wrote, followed through later changes."""

from __future__ import annotations

from redline.engine.lineage import followed, inserted, lines, rewritten, significant

BEFORE = ["def f():", "    a = 1", "    return a", ""]
AFTER = ["def f():", "    a = 1", "    b = compute(a)", "    return a + b", ""]


def test_lines_are_stripped_and_a_missing_file_has_none() -> None:
    assert lines(b"  x = 1\r\n\ty\n") == ["x = 1", "y"]
    assert lines(None) == []
    assert lines(b"\xff\xfe caf\xe9\n") == ["\ufffd\ufffd caf\ufffd"]


def test_significant_lines_have_length_and_a_letter_or_digit() -> None:
    assert significant("b = compute(a)")
    assert significant("pass")
    assert not significant("end")
    assert not significant("}")
    assert not significant("")
    assert not significant("----")


def test_inserted_names_the_new_and_rewritten_lines_of_after() -> None:
    # "return a" became "return a + b", and "b = compute(a)" is new
    assert inserted(BEFORE, AFTER) == {2, 3}
    assert inserted(BEFORE, BEFORE) == set()
    assert inserted([], ["x = 1", "}", "y = 2"]) == {0, 2}  # an added file; "}" proves nothing


def test_followed_finds_lines_where_later_changes_moved_them() -> None:
    later = ["# header", "def f():", "    a = 1", "    b = compute(a)", "    return a + b", ""]
    assert followed({2, 3}, AFTER, later) == {3, 4}
    # a line rewritten since is no longer the earlier edit's
    rewrote = ["def f():", "    a = 1", "    b = compute(a, 2)", "    return a + b", ""]
    assert followed({2, 3}, AFTER, rewrote) == {3}
    assert followed(set(), AFTER, later) == set()


def test_rewritten_names_the_replaced_and_deleted_lines_of_before() -> None:
    after = ["def f():", "    a = 2", "    return a", ""]
    assert rewritten(BEFORE, after) == {1}
    assert rewritten(BEFORE, BEFORE[:1] + BEFORE[2:]) == {1}  # deleted
    assert rewritten(BEFORE, ["# new", *BEFORE]) == set()  # only inserted: nothing rewritten
    assert rewritten(BEFORE, []) == {0, 1, 2, 3}


def test_a_rewrite_of_an_earlier_edits_line_is_seen_through_other_changes() -> None:
    """The question gitops.carried asks: which lines that edit wrote does this change touch?"""
    theirs = inserted(BEFORE, AFTER)  # the flagged edit
    now = ["# moved down", *AFTER]  # another change since
    assert followed(theirs, AFTER, now) == {3, 4}
    launder = [*now[:3], "    b = compute(a) or 0", *now[4:]]
    assert followed(theirs, AFTER, now) & rewritten(now, launder) == {3}
    unrelated = ["# moved further down", *now[1:]]
    assert not followed(theirs, AFTER, now) & rewritten(now, unrelated)
