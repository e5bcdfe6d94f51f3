"""Sequences the model-based test of the gates (test_guard_model) found, kept as tests:
each replays the agent's and the person's steps on the model's repository and checks
every gate against the oracle after each step."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from test_guard_model import Gates

Step = Callable[[Gates], None]


@pytest.fixture
def gates() -> Iterator[Gates]:
    machine = Gates()
    try:
        yield machine
    finally:
        machine.teardown()


def replay(machine: Gates, steps: list[Step]) -> None:
    machine.gates_agree_with_the_oracle()
    for step in steps:
        step(machine)
        machine.gates_agree_with_the_oracle()


def test_a_moved_flagged_edit_cherry_picked_without_its_content_is_refused_when_landed(
    gates: Gates,
) -> None:
    """The move of a flagged edit's file is approved and cherry-picked onto main (the
    rename arrives, the edit's lines do not); landing the session brings the edit: the
    gate names it."""
    replay(
        gates,
        [
            lambda g: g.edit(0, 0, "return True", tolerant=False),
            lambda g: g.edit(40, 0, "return True", tolerant=True),
            lambda g: g.move(37, "auth/check_v2.py", 0),
            lambda g: g.approve_one(1),
            lambda g: g.cherry_pick(0),
        ],
    )


def test_notes_carried_by_a_rebase_onto_commits_that_have_notes_stay_readable(
    gates: Gates,
) -> None:
    """Two of the session's commits were cherry-picked onto main, then the session is
    rebased onto main: the notes git carries along meet the notes already there."""
    replay(
        gates,
        [
            lambda g: g.edit(0, 0, "return True", tolerant=False),
            lambda g: g.edit(40, 0, "return True", tolerant=True),
            lambda g: g.move(37, "auth/check_v2.py", 0),
            lambda g: g.approve_one(0),
            lambda g: g.cherry_pick(0),
            lambda g: g.edit(0, 1, "pass", tolerant=True),
            lambda g: g.cherry_pick(3),
            lambda g: g.rebase(),
        ],
    )


def test_a_rebase_over_hand_edits_keeps_notes_that_describe_their_commits(gates: Gates) -> None:
    """After cherry-picks, amends, copies, moves, a merge and hand edits on main, the
    session is rebased onto main: each rebased commit's note still describes it."""
    replay(
        gates,
        [
            lambda g: g.edit(0, 0, "return True", tolerant=False),
            lambda g: g.edit(40, 0, "return True", tolerant=True),
            lambda g: g.move(37, "auth/check_v2.py", 0),
            lambda g: g.approve_one(0),
            lambda g: g.cherry_pick(0),
            lambda g: g.by_hand(13, 10, "item.delete()", amend=True),
            lambda g: g.copy(9, "lib/copy.py"),
            lambda g: g.edit(15, 20, "pass", tolerant=False),
            lambda g: g.approve_one(28),
            lambda g: g.by_hand(46, 2, "x = 1", amend=True),
            lambda g: g.approve_one(36),
            lambda g: g.delete(14),
            lambda g: g.move(30, "auth/check_v2.py", 10),
            lambda g: g.merge(),
            lambda g: g.edit(32, 16, "return False", tolerant=True),
            lambda g: g.edit(44, 8, "return None", tolerant=False),
            lambda g: g.by_hand(24, 3, "pass", amend=False),
            lambda g: g.by_hand(8, 5, "item.delete()", amend=False),
            lambda g: g.rebase(),
        ],
    )


def test_a_name_an_unrelated_file_takes_later_does_not_hold_the_edit(gates: Gates) -> None:
    """A flagged edit's file is moved and copied to ``auth/check_v2.py`` on the session;
    main gets another file by that name (a cherry-picked move of ``lib/util.py``): the
    gates and the oracle agree that main holds no flagged edit there."""
    replay(
        gates,
        [
            lambda g: g.move(29, "auth/check_v2.py", 0),
            lambda g: g.move(35, "auth/legacy.py", 6),
            lambda g: g.edit(43, 18, "return True", tolerant=True),
            lambda g: g.edit(2, 16, "x = 1", tolerant=True),
            lambda g: g.delete(49),
            lambda g: g.move(7, "lib/moved.py", 14),
            lambda g: g.edit(29, 3, "x = 1", tolerant=False),
            lambda g: g.copy(11, "auth/check_v2.py"),
            lambda g: g.edit(37, 10, "return False", tolerant=False),
            lambda g: g.cherry_pick(17),
        ],
    )


def test_a_session_rebased_after_its_squash_landed_is_refused_only_for_git_s_note_copies(
    gates: Gates,
) -> None:
    """A person squash-merges the session by hand, then rebases it onto main: every
    commit of it is dropped and git gives their notes to the squash commit, joined.
    The gates refuse that note as not describing its commit (failing closed) and find
    nothing else; no flagged edit is missed."""
    replay(
        gates,
        [
            lambda g: g.edit(0, 0, "return True", tolerant=False),
            lambda g: g.edit(0, 0, "return True", tolerant=False),
            lambda g: g.edit(0, 0, "return True", tolerant=False),
            lambda g: g.edit(1, 0, "return True", tolerant=False),
            lambda g: g.squash(),
            lambda g: g.rebase(),
        ],
    )


def test_a_flagged_file_deleted_beside_a_copy_of_the_same_lines_fails_closed(
    gates: Gates,
) -> None:
    """A flagged edit's file and an unflagged copy of the same lines (from another file
    the agent edited alike); the flagged file is deleted: git pairs the copy with it as a
    rename, so the gates refuse the edit there — failing closed, as the tree cannot tell
    which file the lines came from."""
    replay(
        gates,
        [
            lambda g: g.edit(0, 0, "return True", tolerant=False),
            lambda g: g.edit(0, 0, "return True", tolerant=False),
            lambda g: g.copy(17, "auth/check_v2.py"),
            lambda g: g.edit(45, 0, "return True", tolerant=True),
            lambda g: g.edit(0, 0, "return True", tolerant=False),
            lambda g: g.copy(35, "lib/moved.py"),
            lambda g: g.delete(41),
            lambda g: g.edit(2, 0, "return True", tolerant=False),
        ],
    )


def test_a_flagged_line_rewritten_by_hand_on_main_counts_as_carried(gates: Gates) -> None:
    """A person rewrites, on main, the line a flagged edit changed in the session (and
    another of the small file's lines); the session never reached main. Neither the
    edit's text nor the text before it is there: the guard counts the edit carried
    (taking it back would conflict), and so does the oracle — the file is still the one
    it started as."""
    replay(
        gates,
        [
            lambda g: g.edit(0, 0, "return True", tolerant=False),
            lambda g: g.edit(0, 0, "return True", tolerant=False),
            lambda g: g.edit(4, 4, "return True", tolerant=False),
            lambda g: g.edit(25, 16, "return True", tolerant=False),
            lambda g: g.edit(34, 0, "item.delete()", tolerant=True),
            lambda g: g.by_hand(16, 0, "return True", amend=False),
            lambda g: g.by_hand(28, 11, "return True", amend=False),
        ],
    )


def test_a_flagged_edit_a_rebase_drops_onto_a_hand_made_copy_of_it_is_refused_on_main(
    gates: Gates,
) -> None:
    """A person amends main by hand into the same change as the session's flagged edit;
    rebasing the session drops the edit's commit and git gives its note to the commit
    before it. The edit's id is then held by two commits, and the gate followed the one
    whose change says nothing of it when its id came first (hooks.ledger, hooks.guard)."""
    replay(
        gates,
        [
            lambda g: g.ids(0),  # the edit ids, and so the order of the commits holding one
            lambda g: g.delete(25),
            lambda g: g.copy(23, "auth/check_v2.py"),
            lambda g: g.merge(),
            lambda g: g.cherry_pick(42),
            lambda g: g.merge(),
            lambda g: g.edit(34, 13, "return True", tolerant=False),
            lambda g: g.rebase(),
            lambda g: g.edit(37, 0, "item.delete()", tolerant=False),
            lambda g: g.approve_one(15),
            lambda g: g.delete(14),
            lambda g: g.move(5, "auth/check_v2.py", 0),
            lambda g: g.merge(),
            lambda g: g.edit(16, 16, "pass", tolerant=True),
            lambda g: g.by_hand(18, 10, "pass", True),
            lambda g: g.rebase(),
        ],
    )


def test_a_flagged_file_written_anew_from_another_file_fails_closed(gates: Gates) -> None:
    """A flagged edit of a moved file; the file is deleted, and a copy of another file
    is written to its name: from the trees alone that is still the edit's file, and the
    gate refuses it (failing closed) though the oracle finds no edit there."""
    replay(
        gates,
        [lambda g: g.ids(0)]
        + [lambda g: g.edit(0, 0, "return True", tolerant=False)] * 7
        + [
            lambda g: g.move(1, "auth/check_v2.py", 0),
            lambda g: g.edit(1, 0, "return False", tolerant=True),
            lambda g: g.delete(1),
        ]
        + [lambda g: g.edit(0, 0, "return True", tolerant=False)] * 4
        + [lambda g: g.copy(0, "auth/check_v2.py")],
    )


def test_a_flagged_file_replaced_by_another_moved_to_its_name_fails_closed(
    gates: Gates,
) -> None:
    """As above, with the other file moved (not copied) to the flagged file's name."""
    replay(
        gates,
        [
            lambda g: g.ids(0),
            lambda g: g.delete(0),
            lambda g: g.move(0, "auth/check_v2.py", 0),
            lambda g: g.approve_one(0),
            lambda g: g.edit(0, 0, "return True", tolerant=False),
            lambda g: g.edit(0, 0, "return False", tolerant=True),
            lambda g: g.delete(0),
            lambda g: g.edit(0, 0, "return True", tolerant=False),
            lambda g: g.edit(0, 0, "return True", tolerant=False),
            lambda g: g.move(0, "auth/check_v2.py", 0),
        ],
    )


def test_a_flagged_edit_moved_over_another_file_of_the_same_name_is_refused(
    gates: Gates,
) -> None:
    """Found with fresh seeds: main holds auth/check_v2.py, a copy of another file whose
    first line is "return True"; the session deletes it, moves auth/roles.py to that name
    and makes a flagged edit of its first line to "return True". The range main..session
    brings the edit, but the gate took main's unrelated file, which has the edit's line at
    the edit's place, for the edit already there: it now counts only a version of the
    file with half its content in common with the edit's texts."""
    replay(
        gates,
        [
            lambda g: g.edit(15, 0, "return True", tolerant=False),
            lambda g: g.copy(0, "auth/check_v2.py"),
            lambda g: g.merge(),
            lambda g: g.delete(0),
            lambda g: g.delete(0),
            lambda g: g.move(0, "auth/check_v2.py", 0),
            lambda g: g.edit(0, 0, "return True", tolerant=True),
        ],
    )
