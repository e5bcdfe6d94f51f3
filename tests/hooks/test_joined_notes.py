"""A flagged edit whose note git also put on another commit.

A rebase that drops a commit (its change is already upstream, e.g. cherry-picked)
gives the dropped commit's note to the commit before it (``notes.rewriteRef``; the
two notes are joined). The flagged edit's id is then held by two commits: its own,
and one whose change says nothing of it. Which one the ledger lists first follows the
commit ids — chance. The gates must refuse the edit wherever it is, whichever comes
first (found by the gates' model: the gate followed the other commit and named
nothing).
"""

from __future__ import annotations

from copy import deepcopy
from pathlib import Path

import pygit2
import pytest
from guard_fixtures import (
    APP,
    APP_FUZZY_NEW,
    APP_FUZZY_OLD,
    APP_TEXT,
    FUZZY_NEW,
    FUZZY_OLD,
    MIGRATION,
    agent,
    git,
    head,
    user_repo,
)

from redline.hooks import ledger as ledgers
from redline.hooks.approve import approve
from redline.hooks.gate import check_range
from redline.hooks.guard import carrying_commit, describe, edit_commits
from redline.hooks.ledger import Ledger


@pytest.fixture
def dropped(tmp_path: Path) -> tuple[Path, str, str, str]:
    """A session's unflagged edit, then its flagged one; a person commits the flagged
    one's change on main with a change of their own (a cherry-pick, amended), and the
    session is rebased onto main and fast-forwarded into it: the flagged edit's commit
    becomes empty and is dropped, its note joined to the other's copy.
    (repository, main before, the flagged edit, its own commit)"""
    repo = user_repo(tmp_path / "repo")
    start = head(repo)
    session = agent(repo)
    plain = session.edit(APP, APP_TEXT.splitlines(keepends=True)[3], "    server.run()\n")
    assert plain["status"] == "applied", plain
    flagged = session.edit(MIGRATION, FUZZY_OLD, FUZZY_NEW)
    assert flagged["flags"], flagged
    [made] = flagged["commits"]
    take_by_hand_then_rebase(repo, made["commit"], session.branch)
    return repo, start, made["edit"], made["commit"]


def test_the_flagged_edit_is_held_by_two_commits_one_of_them_without_its_change(
    dropped: tuple[Path, str, str, str],
) -> None:
    repo, _, edit, own = dropped
    ledger = ledgers.load(pygit2.Repository(str(repo)))
    held = ledger.entries[edit].commits
    assert own in held and len(held) == 2, held  # the premise: git joined the note


@pytest.mark.parametrize("order", ["as read", "reversed"])
def test_the_range_that_carries_it_is_refused_whichever_commit_comes_first(
    dropped: tuple[Path, str, str, str], order: str
) -> None:
    repo, start, edit, own = dropped
    git_repo = pygit2.Repository(str(repo))
    ledger = _ordered(ledgers.load(git_repo), edit, order)

    verdict = check_range(git_repo, ledger, start, "main")

    assert [b.edit for b in verdict.findings.blocked] == [edit]
    [blocked] = verdict.findings.blocked
    assert blocked.commit == own and blocked.path == MIGRATION and blocked.placed
    assert carrying_commit(git_repo, ledger.entries[edit]).id == pygit2.Oid(hex=own)


def test_with_its_own_commit_gone_the_edit_is_refused_wherever_its_file_changes(
    dropped: tuple[Path, str, str, str],
) -> None:
    """Only the commit the note was joined to is left: nothing shows where the edit
    is, so any change to its file counts as carrying it (failing closed), and the
    refusal says why no lines are named."""
    repo, start, edit, own = dropped
    git_repo = pygit2.Repository(str(repo))
    ledger = ledgers.load(git_repo)
    entry = ledger.entries[edit]
    entry.commits = [c for c in entry.commits if c != own]
    assert [str(c.id) for c in edit_commits(git_repo, entry)] == entry.commits

    verdict = check_range(git_repo, ledger, start, "main")

    [blocked] = verdict.findings.blocked
    assert (blocked.edit, blocked.path, blocked.placed) == (edit, MIGRATION, False)
    assert "its own commit is not in this repository" in describe([blocked])


def take_by_hand_then_rebase(repo: Path, commit: str, branch: str) -> None:
    """A person commits ``commit``'s change on main with a change of their own, then
    rebases ``branch`` onto main and fast-forwards main to it: ``commit`` becomes empty
    on the way and is dropped, and git gives its note to the commit before it."""
    git(repo, "cherry-pick", "--no-commit", commit)
    (repo / "NOTES.md").write_text("reviewed by hand\n")
    git(repo, "add", "NOTES.md")
    git(repo, "commit", "-q", "--no-verify", "-m", "take the migration change, with notes")
    git(repo, "checkout", "-q", "-B", "work", branch)
    git(repo, "rebase", "-q", "main")
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--ff-only", "work")


def _ordered(ledger: Ledger, edit: str, order: str) -> Ledger:
    ledger = deepcopy(ledger)
    if order == "reversed":
        ledger.entries[edit].commits.reverse()
    return ledger


def test_an_approval_in_one_joined_note_never_clears_the_other_edit(tmp_path: Path) -> None:
    """Two flagged edits; a person approves the first. The second's change is committed
    by hand on main, and the session rebased: the second's note is joined to the first's
    copy. Each note stays its own edit's evidence, so the approval of the first clears
    nothing else and the gate still names the second."""
    policy = '[[guard.protect]]\npaths = ["migrations/**", "src/**"]\nrequire = "exact"\n'
    repo = user_repo(tmp_path / "repo", policy=policy)
    start = head(repo)
    session = agent(repo)
    first = session.edit(APP, APP_FUZZY_OLD, APP_FUZZY_NEW)
    second = session.edit(MIGRATION, FUZZY_OLD, FUZZY_NEW)
    assert first["flags"] and second["flags"], (first, second)
    [a], [b] = first["commits"], second["commits"]
    git_repo = pygit2.Repository(str(repo))
    [approved] = approve(git_repo, [a["edit"]])
    assert approved.status == "approved", approved
    take_by_hand_then_rebase(repo, b["commit"], session.branch)
    joined = git(repo, "notes", "--ref=redline", "show", "main")
    assert joined.count('"schema"') == 2, joined  # the premise: git joined the two notes

    ledger = ledgers.load(git_repo)
    assert ledger.entries[a["edit"]].approved
    assert not ledger.entries[b["edit"]].approved
    verdict = check_range(git_repo, ledger, start, "main")
    assert [x.edit for x in verdict.findings.blocked] == [b["edit"]]
