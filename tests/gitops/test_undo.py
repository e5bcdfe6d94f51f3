"""gitops.undo through SessionApplier.undo: an edit reverted by a new commit of the session.

In-process on real repositories; what was committed is read back with git
(``git notes --ref=redline show``, ``git log``, ``git status`` in the session's
worktree).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gitmode_fixtures import digest_tree, git, make_repo, note_of, porcelain, rev, trailer, write
from redline.engine.edit import EditItem, EditRequest
from redline.gitops.apply import SessionApplier
from redline.gitops.errors import SessionError
from redline.gitops.repo import main_repository
from redline.gitops.session import open_session
from redline.gitops.undo import conflict_ranges
from redline.settings.policy import policy_from_tree

APP = "app.py"
APP_TEXT = "".join(f"def step_{n}():\n    return {n}\n\n\n" for n in range(1, 7))
POLICY = '[guard]\naction = "review"\n\n[[guard.protect]]\npaths = ["db/**"]\nrequire = "exact"\n'
BRANCH = "redline/s"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {APP: APP_TEXT, ".redline.toml": POLICY})


@pytest.fixture
def applier(repo: Path) -> SessionApplier:
    git_repo, layout = main_repository(repo)
    session = open_session(git_repo, layout, "s", None)
    return SessionApplier(
        git_repo, layout, session, policy_for=lambda tree: policy_from_tree(git_repo, tree)
    )


def edit(applier: SessionApplier, old: str, new: str, path: str = APP) -> dict[str, Any]:
    result = applier.apply(EditRequest(path, (EditItem(old, new),))).to_dict()
    assert result["status"] == "applied", result
    [made] = result["commits"]
    assert isinstance(made, dict)
    return made


def worktree_text(applier: SessionApplier, path: str = APP) -> str:
    return (applier.root / path).read_text()


def test_undo_reverts_the_edit_in_a_new_commit_whose_note_links_to_it(
    repo: Path, applier: SessionApplier
) -> None:
    first = edit(applier, "    return 2\n", "    return 20\n")
    second = edit(applier, "    return 5\n", "    return 50\n")
    outcome = applier.undo(first["edit"]).to_dict()
    assert outcome["status"] == "undone", outcome
    assert (outcome["edit"], outcome["commit"]) == (first["edit"], first["commit"])
    [made] = outcome["commits"]
    assert made["paths"] == [APP]
    assert rev(repo, BRANCH) == made["commit"]
    assert git(repo, "log", "-1", "--format=%P", made["commit"]).split() == [second["commit"]]
    note = note_of(repo, made["commit"])
    assert note["tool"] == "undo"
    assert note["undoes"] == {"edit": first["edit"], "commit": first["commit"]}
    assert note["operations"] == [{"path": APP, "op": "undo"}]
    assert note["policy"]["verdict"] == "pass"
    assert trailer(repo, made["commit"]) == [made["edit"]]
    body = git(repo, "log", "-1", "--format=%B", made["commit"])
    assert body.startswith(f"redline: undo edit {first['edit']}\n")
    assert f"Redline-Undoes: {first['edit']}" in body
    # the later edit stays; the worktree holds the branch, clean
    text = worktree_text(applier)
    assert "return 2\n" in text and "return 50\n" in text
    assert text == git(repo, "show", f"{BRANCH}:{APP}")
    assert porcelain(applier.root) == ""
    # undone already: nothing left to take back
    again = applier.undo(first["edit"]).to_dict()
    assert again["status"] == "no_change"
    assert "no longer in the session" in again["error"]
    assert rev(repo, BRANCH) == made["commit"]


def test_an_edit_is_named_by_its_commit_too(repo: Path, applier: SessionApplier) -> None:
    made = edit(applier, "    return 3\n", "    return 30\n")
    outcome = applier.undo(made["commit"][:10]).to_dict()
    assert outcome["status"] == "undone"
    assert outcome["edit"] == made["edit"]
    assert worktree_text(applier) == APP_TEXT


def test_a_later_edit_of_the_same_lines_refuses_naming_them(
    repo: Path, applier: SessionApplier
) -> None:
    first = edit(applier, "def step_4():\n    return 4\n", "def step_4():\n    return 40\n")
    second = edit(applier, "    return 40\n", "    return 400  # tuned\n")
    before = rev(repo, BRANCH)
    outcome = applier.undo(first["edit"]).to_dict()
    assert outcome["status"] == "conflict"
    [conflict] = outcome["conflicts"]
    line = APP_TEXT.splitlines().index("    return 4") + 1
    assert (conflict["path"], conflict["start_line"], conflict["end_line"]) == (APP, line, line)
    assert conflict["changed_by"] == [{"edit": second["edit"], "commit": second["commit"]}]
    assert outcome["error"].splitlines()[1] == (
        f"  {APP} line {line}, changed since by edit {second['edit']} "
        f"(commit {second['commit'][:12]})"
    )
    assert rev(repo, BRANCH) == before
    assert "return 400  # tuned" in worktree_text(applier)
    assert porcelain(applier.root) == ""
    # undoing the later edit first, then the earlier one, works
    assert applier.undo(second["edit"]).status == "undone"
    assert applier.undo(first["edit"]).status == "undone"
    assert worktree_text(applier) == APP_TEXT


def test_unknown_edits_are_refused(applier: SessionApplier) -> None:
    with pytest.raises(SessionError, match="session 's' has no edit 'nosuchedit'"):
        applier.undo("nosuchedit")


def test_undoing_an_edit_of_the_policy_is_flagged_for_a_person(
    repo: Path, applier: SessionApplier
) -> None:
    made = edit(applier, 'require = "exact"\n', 'require = ["exact", "fuzzy"]\n', ".redline.toml")
    outcome = applier.undo(made["edit"])
    assert outcome.status == "undone"
    assert [f["rule"] for f in outcome.flags] == ["default (guard files: policy, hooks, CI)"]
    note = note_of(repo, outcome.commits[0]["commit"])
    assert note["policy"]["verdict"] == "flagged"


def test_changes_made_by_other_tools_are_committed_first(
    repo: Path, applier: SessionApplier
) -> None:
    made = edit(applier, "    return 1\n", "    return 10\n")
    write(applier.root / "notes.txt", "written by the agent's shell\n")
    outcome = applier.undo(made["edit"])
    assert outcome.status == "undone"
    external, undo = outcome.commits
    assert (external["source"], external["paths"]) == ("external", ["notes.txt"])
    assert undo["paths"] == [APP]
    assert porcelain(applier.root) == ""


def test_conflict_ranges_count_the_lines_of_the_file_as_it_is() -> None:
    merged = (
        "a\n<<<<<<< ours\nb\nc\n=======\nB\n>>>>>>> theirs\nd\n<<<<<<< ours\n=======\nx\n>>>>>>>\n"
    )
    assert conflict_ranges(merged) == [(2, 3), (5, 5)]


def test_the_users_own_worktree_is_left_byte_identical(repo: Path, applier: SessionApplier) -> None:
    made = edit(applier, "    return 6\n", "    return 60\n")
    write(repo / APP, APP_TEXT + "# my unfinished work\n")
    write(repo / "staged.txt", "staged\n")
    git(repo, "add", "staged.txt")
    write(repo / "untracked.txt", "untracked\n")
    before = digest_tree(repo, skip=(".git",)), (repo / ".git" / "index").read_bytes()
    head = rev(repo, "HEAD")
    assert applier.undo(made["edit"]).status == "undone"
    assert (digest_tree(repo, skip=(".git",)), (repo / ".git" / "index").read_bytes()) == before
    assert rev(repo, "HEAD") == head
