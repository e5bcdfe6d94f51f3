"""gitops.history: a session's commits read from records, branches and notes alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pygit2.enums import SortMode

from gitmode_fixtures import git, rev, write
from redline.gitops.errors import SessionError
from redline.gitops.history import commits, open_sessions, session_history
from redline.gitops.repo import main_repository
from redline.gitops.session import close_session, open_session


def commit(repo: Path, name: str, note: dict[str, object] | None = None) -> str:
    write(repo / name, f"{name}\n")
    git(repo, "add", name)
    git(repo, "commit", "-q", "-m", f"add {name}")
    made = rev(repo, "HEAD")
    if note is not None:
        git(repo, "notes", "--ref=redline", "add", "-m", json.dumps(note), made)
    return made


def test_an_open_session_lists_what_is_after_its_base(repo: Path) -> None:
    handle, layout = main_repository(repo)
    session = open_session(handle, layout, "s", None)
    wt = Path(session.worktree)
    made = commit(wt, "x.txt", {"session": "s", "edit": "e1", "source": "agent", "tool": "edit"})

    found = session_history(handle, layout, "s")

    assert found.open is True and found.base == session.base
    assert [e["commit"] for e in found.entries] == [made]
    assert found.entries[0]["edit"] == "e1" and found.entries[0]["summary"] == "add x.txt"
    [row] = open_sessions(handle, layout)
    assert (row["name"], row["tip"], row["edits"]) == ("s", made, 1)


def test_a_closed_session_reads_from_its_kept_branch(repo: Path) -> None:
    handle, layout = main_repository(repo)
    session = open_session(handle, layout, "s", None)
    made = commit(Path(session.worktree), "x.txt")  # a commit without a note counts too
    close_session(handle, layout, session, delete_branch=False, force=False)

    found = session_history(handle, layout, "s")

    assert found.open is False and found.base == session.base
    assert [e["commit"] for e in found.entries] == [made]
    assert open_sessions(handle, layout) == []


def test_a_branch_with_no_record_is_read_as_far_as_its_notes_go(repo: Path) -> None:
    git(repo, "switch", "-q", "-c", "redline/theirs")
    before = commit(repo, "before.txt")  # not the session's: no note naming it
    mine = [commit(repo, f"f{i}.txt", {"session": "theirs", "edit": f"e{i}"}) for i in range(3)]
    git(repo, "switch", "-q", "main")
    handle, layout = main_repository(repo)

    found = session_history(handle, layout, "theirs")

    assert found.base == before
    assert [e["edit"] for e in found.entries] == ["e2", "e1", "e0"]
    assert [e["commit"] for e in found.entries] == mine[::-1]


def test_an_unknown_session_says_where_to_look(repo: Path) -> None:
    handle, layout = main_repository(repo)
    with pytest.raises(SessionError) as info:
        session_history(handle, layout, "nope")
    assert str(info.value) == (
        "no session named 'nope': none is open and there is no branch redline/nope; "
        "`redline session list` shows the open sessions, `git branch --list 'redline/*'` "
        "the branches of closed ones"
    )
    with pytest.raises(SessionError, match="invalid session name"):
        session_history(handle, layout, "../x")


def _note(edit: str, verdict: str = "pass", **extra: object) -> dict[str, object]:
    tolerated = [{"kind": "slip", "lines": [2], "text": "a slip of the pen on line 2"}]
    return {
        "schema": "redline.note/1",
        "session": "s",
        "edit": edit,
        "source": "agent",
        "tool": "edit",
        "operations": [{"path": "a", "op": "edit", "match_type": "fuzzy", "confidence": 0.9,
                        "start_line": 2, "end_line": 2, "tolerated": tolerated}],
        "policy": {"verdict": verdict},
        **extra,
    }  # fmt: skip


def test_each_edit_says_its_state_and_what_it_tolerated(repo: Path) -> None:
    from redline.gitops.history import range_history

    handle, layout = main_repository(repo)
    session = open_session(handle, layout, "s", None)
    wt = Path(session.worktree)
    approval = {"by": "Ann <ann@example.com>", "at": "2026-01-01T00:00:00Z"}
    commit(wt, "a.txt", _note("clean1"))
    commit(wt, "b.txt", _note("flag1", "flagged"))
    commit(wt, "c.txt", _note("appr1", "flagged", approvals=[approval]))
    commit(wt, "d.txt", _note("gone1", "flagged"))
    commit(wt, "e.txt", {**_note("undo1"), "tool": "undo", "undoes": {"edit": "gone1"}})

    found = session_history(handle, layout, "s").entries
    states = {e["edit"]: (e["state"], e["approved_by"]) for e in found}
    assert states == {
        "clean1": ("clean", []),
        "flag1": ("flagged", []),
        "appr1": ("approved", ["Ann <ann@example.com>"]),
        "gone1": ("undone", []),
        "undo1": ("clean", []),
    }
    assert found[0]["undoes"] == "gone1"
    assert found[-1]["tolerated"] == [
        {"kind": "slip", "lines": [2], "text": "a slip of the pen on line 2"}
    ]

    # A squash commit's note: each edit it carries is an entry of its own
    squash = commit(repo, "s.txt", {"schema": "redline.note/1", "edit": "sq", "tool": "squash",
                                    "squashed": [_note("flag1", "flagged", approvals=[approval]),
                                                 _note("clean1")]})  # fmt: skip
    handle, _ = main_repository(repo)
    entries = range_history(handle, handle.revparse_single("HEAD~1").id, handle.head.target)
    assert [(e["commit"], e["edit"], e["state"]) for e in entries] == [
        (squash, "flag1", "approved"),
        (squash, "clean1", "clean"),
    ]


def test_a_session_merged_with_its_base_lists_its_commits_up_to_the_base(repo: Path) -> None:
    # The base's later commits merged into the session: listed up to the first commit the
    # base reaches, newest first, as a walk that asks each commit would list them.
    handle, layout = main_repository(repo)
    session = open_session(handle, layout, "s", None)
    wt = Path(session.worktree)
    first = commit(wt, "x.txt")
    on_main = commit(repo, "m.txt")
    git(wt, "merge", "-q", "--no-edit", "main")
    merged = rev(wt, "HEAD")
    last = commit(wt, "y.txt")

    listed = [c.id for c in commits(handle, session.branch, session.base)]
    asked = []
    for found in handle.walk(handle.references[session.branch].target, SortMode.TOPOLOGICAL):
        if str(found.id) == session.base or handle.descendant_of(session.base, found.id):
            break
        asked.append(found.id)

    assert listed == asked
    assert [str(c) for c in listed][:2] == [last, merged]
    assert first in {str(c) for c in listed} and on_main != str(listed[-1])


def test_a_session_of_many_commits_is_listed_newest_first(repo: Path) -> None:
    handle, layout = main_repository(repo)
    session = open_session(handle, layout, "s", None)
    wt = Path(session.worktree)
    made = [commit(wt, f"f{i}.txt") for i in range(40)]

    listed = commits(handle, session.branch, session.base)

    assert [str(c.id) for c in listed] == made[::-1]
