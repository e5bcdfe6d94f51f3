"""engine.follow: whether a later version of a file holds an edit, by position.

Each row is an edit (``before`` → ``after``) and a later version of the file
(``now``): whether taking the edit back would change ``now`` (the edit is
there, or something else is at its place), whether making it again would, and
where — the places in ``now``, as (first, last) lines from 1. The diffs come
from the pure aligner; gitops' tests check the same decision, with libgit2's
diff, against ``git merge-file`` itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from redline.engine.follow import (
    Hunk,
    Span,
    carry,
    describe,
    diff,
    kept,
    similarity,
    split,
    touches,
    would_change,
)

AUTH = """\
def is_admin(user):
    if user.role == "admin":
        return True
    return False


def can_delete(user, item):
    if item.owner == user:
        return True
    return False
"""
# can_delete's final "return False" turned into "return True" (is_admin keeps its own)
ALLOW = AUTH[: AUTH.rindex("    return False\n")] + "    return True\n"
SWAP_BEFORE = """\
def remove(item):
    if item.locked:
        raise Locked(item)
    item.delete()
    return item
"""
SWAP_AFTER = """\
def remove(item):
    if item.locked:
        raise Locked(item)
    return item
    item.delete()
"""


def lines(text: str) -> list[bytes]:
    return split(text.encode())


def places(before: str, after: str, now: str) -> tuple[bool, bool, list[tuple[int, int]]]:
    """(undone, intact, where the edit's places are in ``now``)."""
    b0, b1, t = lines(before), lines(after), lines(now)
    taken_back = would_change(b1, b0, t, diff(b1, b0), diff(b1, t))
    made_again = would_change(b0, b1, t, diff(b0, b1), diff(b0, t))
    return not taken_back, not made_again, [(s.start + 1, s.end) for s in taken_back]


@dataclass(frozen=True)
class Row:
    name: str
    before: str
    after: str
    now: str
    undone: bool
    intact: bool
    where: list[tuple[int, int]]


ROWS = [
    Row("the edit as written", AUTH, ALLOW, ALLOW, False, True, [(10, 10)]),
    Row("taken back", AUTH, ALLOW, AUTH, True, False, []),
    Row(
        "return True occurs elsewhere, the edit's line is what counts",
        AUTH,
        ALLOW,
        "import logging\n\n" + ALLOW,
        False,
        True,
        [(12, 12)],
    ),
    Row(
        "taken back under other changes above and below it",
        AUTH,
        ALLOW,
        "import logging\n\n" + AUTH.replace('"admin"', '"root"'),
        True,
        False,
        [],
    ),
    Row(
        # as git merge-file does: lines added right after a taken-back line conflict
        "taken back, with lines added right after its place",
        AUTH,
        ALLOW,
        AUTH + "\n# end\n",
        False,
        False,
        [(10, 12)],
    ),
    Row("a reorder", SWAP_BEFORE, SWAP_AFTER, SWAP_AFTER, False, True, [(4, 3), (5, 5)]),
    Row("a reorder taken back", SWAP_BEFORE, SWAP_AFTER, SWAP_BEFORE, True, False, []),
    Row(
        "a re-indent",
        "def f():\n    return 1\n",
        "def f():\n  return 1\n",
        "def f():\n  return 1\n",
        False,
        True,
        [(2, 2)],
    ),
    Row(
        "a line written with a tab for its spaces is not the line from before",
        "def f():\n    return 1\n",
        "def f():\n\treturn 1\n",
        "def g():\n    return 1\n\n\ndef f():\n\treturn 1\n",
        False,
        True,
        [(6, 6)],
    ),
    Row(
        "deleted lines stay deleted",
        "a\nb\nc\nd\n",
        "a\nd\n",
        "a\nd\ne\n",
        False,
        True,
        [(2, 1)],
    ),
    Row("deleted lines put back", "a\nb\nc\nd\n", "a\nd\n", "a\nb\nc\nd\ne\n", True, False, []),
    Row(
        "deleted lines put back elsewhere are not the edit undone",
        "a\nb\nc\nd\n",
        "a\nd\n",
        "a\nd\nb\nc\n",
        False,
        False,
        [(2, 1)],
    ),
    Row(
        "rewritten since: neither the edit nor the text before it",
        "x = 1\ny = 2\n",
        "x = 1\ny = 3\n",
        "x = 1\ny = 4\n",
        False,
        False,
        [(2, 2)],
    ),
    Row(
        "a change touching the edit's lines joins its place",
        "a\nb\nc\nd\n",
        "a\nb\nC\nd\n",
        "a\nB\nC\nd\n",
        False,
        False,
        [(2, 3)],
    ),
    Row(
        "a change one line away does not",
        "a\nb\nc\nd\ne\n",
        "a\nb\nc\nD\ne\n",
        "A\nb\nc\nD\ne\n",
        False,
        True,
        [(4, 4)],
    ),
    Row("a created file", "", "new\nfile\n", "new\nfile\n", False, True, [(1, 2)]),
    Row(
        "a created file, grown since",
        "",
        "new\nfile\n",
        "new\nfile\nmore\n",
        False,
        False,
        [(1, 3)],
    ),
    Row("a created file emptied", "", "new\nfile\n", "", True, False, []),
    Row(
        "a last line without its newline is another line",
        "a\nb\n",
        "a\nb",
        "a\nb\n",
        True,
        False,
        [],
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_where_a_later_version_holds_an_edit(row: Row) -> None:
    assert places(row.before, row.after, row.now) == (row.undone, row.intact, row.where)


def test_a_file_of_another_history_is_neither_undone_nor_intact() -> None:
    """The edit's lines sit between lines another edit wrote; a file that never had
    either holds neither the edit nor the text from before it at that place."""
    before = "a\nX1\nX2\nz\n"  # X1, X2: an earlier edit's lines
    after = "a\nX1\nX2\nE1\nE2\nz\n"
    elsewhere = "a\nz\n"  # the file as a branch without either edit has it
    assert places(before, after, elsewhere) == (False, False, [(2, 1)])


@pytest.mark.parametrize(
    ("now", "has"),
    [
        ("a\nX1\nX2\nE1\nE2\nz\n", True),  # as written
        ("a\nX1\nE1\nnew\nE2\nz\n", True),  # a line added between its lines, one beside
        ("a\nX1\nX2\nE1\nz\n", False),  # one of its lines deleted
        ("a\nX1\nX2\nE1\nE2!\nz\n", False),  # one rewritten
        ("a\nz\n", False),  # a file that never had it
    ],
)
def test_kept_says_whether_the_edits_own_lines_are_still_in_place(now: str, has: bool) -> None:
    after = lines("a\nX1\nX2\nE1\nE2\nz\n")  # E1, E2: the edit's lines
    before = lines("a\nX1\nX2\nz\n")
    assert kept(diff(after, before), diff(after, lines(now))) is has


def test_kept_keeps_deleted_lines_deleted() -> None:
    before, after = lines("a\nb\nc\n"), lines("a\nc\n")
    assert kept(diff(after, before), diff(after, lines("a\nc\nd\n")))
    assert not kept(diff(after, before), diff(after, lines("a\nb\nc\n")))  # put back
    assert not kept(diff(after, before), diff(after, lines("a\nB\nc\n")))  # another line there


def test_split_counts_lines_as_git_does() -> None:
    assert split(b"a\nb") == [b"a\n", b"b"]
    assert split(b"a\r\nb\r\n") == [b"a\r\n", b"b\r\n"]
    assert split(b"a\rb\n") == [b"a\rb\n"]  # a lone CR does not end a line for git
    assert split(b"") == [] and split(None) == []


def test_diff_finds_the_changed_lines() -> None:
    a = lines("a\nb\nc\nd\n")
    assert diff(a, lines("a\nB\nc\nd\n")) == [Hunk(1, 1, 1, 1)]
    assert diff(a, lines("a\nb\nx\ny\nc\nd\n")) == [Hunk(2, 0, 2, 2)]
    assert diff(a, lines("a\nd\n")) == [Hunk(1, 2, 1, 0)]
    assert diff(a, a) == []


@pytest.mark.parametrize(
    ("spans", "hunks", "touched"),
    [
        ([Span(2, 4)], [Hunk(3, 1, 3, 1)], True),  # rewrites a line of it
        ([Span(2, 4)], [Hunk(4, 1, 4, 1)], False),  # the line after it
        ([Span(2, 4)], [Hunk(0, 2, 0, 2)], False),  # the lines before it
        ([Span(2, 4)], [Hunk(4, 0, 4, 3)], True),  # an insertion right after it
        ([Span(2, 4)], [Hunk(3, 0, 3, 1)], True),  # an insertion inside it
        ([Span(2, 2)], [Hunk(2, 0, 2, 2)], True),  # lines put where the edit deleted some
        ([Span(2, 2)], [Hunk(1, 1, 1, 1)], True),  # the line before the deleted ones
        ([Span(2, 2)], [Hunk(4, 1, 4, 1)], False),
        ([], [Hunk(0, 9, 0, 0)], False),
    ],
)
def test_touches(spans: list[Span], hunks: list[Hunk], touched: bool) -> None:
    assert touches(spans, hunks) is touched


def test_similarity_is_the_share_of_bytes_kept() -> None:
    a = lines("one\ntwo\nthree\nfour\n")
    assert similarity(a, a, []) == 1.0
    b = lines("one\ntwo\nTHREE\nfour\n")
    assert similarity(a, b, diff(a, b)) == pytest.approx(13 / 19)
    c = lines("x\ny\n")
    assert similarity(a, c, diff(a, c)) == 0.0
    assert similarity([], [], []) == 1.0


def test_carry_through_insertions_deletions_and_rewrites() -> None:
    live = {n: n for n in range(10)}
    # two lines on top; lines 3-4 (from 0) become one; three lines before line 8
    kept, removed = carry(live, [Hunk(0, 0, 0, 2), Hunk(3, 2, 5, 1), Hunk(8, 0, 9, 3)])
    assert sorted(removed) == [3, 4]
    assert kept == {2: 0, 3: 1, 4: 2, 6: 5, 7: 6, 8: 7, 12: 8, 13: 9}
    kept, removed = carry({2: 30}, [Hunk(3, 0, 3, 1)])  # an insertion right after the line
    assert (kept, removed) == ({2: 30}, [])
    kept, removed = carry({2: 30, 3: 40}, [Hunk(2, 1, 2, 0)])  # a deletion
    assert (kept, removed) == ({2: 40}, [30])


@pytest.mark.parametrize(
    ("spans", "said"),
    [
        ([Span(3, 5)], "lines 4-5"),
        ([Span(8, 9)], "line 9"),
        ([Span(7, 7)], "lines deleted after line 7"),
        ([Span(0, 0)], "lines deleted at the top"),
        ([Span(0, 1), Span(4, 6)], "line 1, lines 5-6"),
        ([], "the whole file"),
    ],
)
def test_describe(spans: list[Span], said: str) -> None:
    assert describe(spans) == said
