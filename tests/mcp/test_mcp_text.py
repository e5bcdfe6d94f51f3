"""The short text a model reads from a result."""

from __future__ import annotations

from redline.engine.result import Failure, GroupReport, HunkReport, Result, Tolerance
from redline.mcp.text import is_error, summary


def test_an_applied_edit_shows_how_it_matched_and_the_diff() -> None:
    result = Result(
        "applied",
        path="a.py",
        match_type="whitespace",
        confidence=0.95,
        cleaned=["U+200B×2"],
        diff="--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n",
    ).to_dict()
    assert summary(result) == (
        "applied: a.py (whitespace, confidence 0.95)\n"
        "cleaned (invisible characters removed): U+200B×2\n"
        "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2"
    )
    assert not is_error(result)


def test_a_refusal_shows_the_error_and_the_hint() -> None:
    result = Result(
        "no_match", path="a.py", error="old_string not found in file", hint="re-read lines 3-9"
    ).to_dict()
    assert summary(result) == (
        "no_match: a.py\nerror: old_string not found in file\nhint: re-read lines 3-9"
    )
    assert is_error(result)


def test_a_partial_patch_and_a_failed_batch_say_what_was_not_applied() -> None:
    patch = Result(
        "partially_applied",
        error="apply_patch partially applied: 1 change committed, 1 file group not applied: b.py",
        committed=[GroupReport(["a.py"], ["update"])],
        not_applied=[GroupReport(["b.py"], ["update"], "hunk not found (1/1)")],
    ).to_dict()
    assert summary(patch).splitlines()[:2] == [
        "partially_applied: a.py",
        "not applied: b.py: hunk not found (1/1)",
    ]
    assert is_error(patch)
    batch = Result(
        "no_match", path="a.py", failures=[Failure(1, "no_match", "old_string not found")]
    ).to_dict()
    assert "edits[1]: no_match: old_string not found" in summary(batch)


def test_a_read_shows_the_numbered_lines_and_where_more_start() -> None:
    result = Result(
        "read",
        path="c.txt",
        content="     2\tbeta",
        start_line=2,
        end_line=2,
        total_lines=3,
        truncated=True,
        encoding="utf-8",
        line_ending="lf",
    ).to_dict()
    assert summary(result) == (
        "     2\tbeta\n(c.txt: lines 2-2 of 3, encoding utf-8, line_ending lf; "
        "more below: read again with offset=3)"
    )
    assert not is_error(result)


def test_a_tolerant_edit_says_what_was_tolerated_in_words() -> None:
    words = (
        "indentation differed on 2 lines (lines 4-5): 4 spaces sent where the file has a tab; "
        "the file's indentation kept"
    )
    result = Result(
        "applied",
        path="a.py",
        match_type="whitespace",
        confidence=0.95,
        tolerated=[Tolerance("indentation", (4, 5), words)],
        diff="--- a/a.py\n+++ b/a.py\n",
    ).to_dict()
    assert summary(result).splitlines()[:2] == [
        "applied: a.py (whitespace, confidence 0.95)",
        f"tolerated: {words}",
    ]


def test_a_patch_says_what_each_hunk_tolerated() -> None:
    strip = Tolerance("indentation", (3,), "indentation differed on 1 line (line 3)")
    result = Result(
        "applied",
        match_type="strip",
        confidence=0.98,
        written=[GroupReport(["b.py"], ["update b.py"])],
        hunks=[
            HunkReport("b.py", 1, "exact", 1.0, 1, 1, 0, None, "x"),
            HunkReport("b.py", 2, "strip", 0.98, 3, 3, 0, None, "y", [strip]),
        ],
    ).to_dict()
    assert summary(result).splitlines()[:2] == [
        "applied: b.py (strip, confidence 0.98)",
        "tolerated (hunk 2 of b.py): indentation differed on 1 line (line 3)",
    ]


def test_an_exact_edit_tolerated_nothing_and_says_nothing_of_it() -> None:
    result = Result("applied", path="a.py", match_type="exact", confidence=1.0).to_dict()
    assert "tolerated" not in summary(result)
