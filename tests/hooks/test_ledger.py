"""hooks.ledger: the cached index of tolerant edits must always agree with the notes.

The cache is brought up to date incrementally (a diff of the notes trees); every
state it reaches must equal a rebuild from scratch, whatever happened to the
notes ref in between: approvals, rebased copies, a rewound or deleted ref, a
corrupt cache file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pygit2
import pytest
from guard_fixtures import Flagged, agent, flagged_edit, head, redline, user_repo

from gitmode_fixtures import git
from redline.gitops import notes
from redline.gitops.repo import signature
from redline.hooks import ledger as ledgers


@pytest.fixture
def flagged(tmp_path: Path) -> Flagged:
    return flagged_edit(user_repo(tmp_path / "repo"))


def load(repo: Path) -> ledgers.Ledger:
    return ledgers.load(pygit2.Repository(str(repo)))


def rebuilt(repo: Path) -> ledgers.Ledger:
    git_repo = pygit2.Repository(str(repo))
    ledgers.cache_path(git_repo).unlink(missing_ok=True)
    return ledgers.load(git_repo)


def summary(ledger: ledgers.Ledger) -> dict[str, tuple[list[str], bool]]:
    return {e.edit: (sorted(e.commits), e.approved) for e in ledger.entries.values()}


def approve(repo: Path, name: str) -> None:
    redline(repo, "approve", "--repo", str(repo), name, check=True)


def test_a_flagged_edit_is_in_the_ledger(flagged: Flagged) -> None:
    ledger = load(flagged.repo)
    entry = ledger.entries[flagged.edit]
    assert entry.commits == [flagged.commit]
    assert not entry.approved
    [op] = entry.operations
    assert (op.path, op.match_type, op.confidence) == (
        "migrations/001_users.sql",
        "fuzzy",
        flagged.confidence,
    )
    assert (op.start_line, op.end_line) == (2, 4)
    assert entry.flagged[0]["rule"] == "guard.protect[1] (migrations/**)"
    assert ledger.by_commit == {flagged.commit: [flagged.edit]}
    assert ledger.notes_commit == head(flagged.repo, "refs/notes/redline")


def test_the_cache_is_written_and_reused(flagged: Flagged) -> None:
    first = load(flagged.repo)
    path = flagged.repo / ".git" / "redline" / "ledger.json"
    cached = json.loads(path.read_text())
    assert cached["version"] == ledgers.VERSION
    assert cached["notes"] == first.notes_commit
    stamp = path.stat().st_mtime_ns
    again = load(flagged.repo)
    assert summary(again) == summary(first)
    assert path.stat().st_mtime_ns == stamp  # nothing to catch up: not rewritten


@pytest.mark.parametrize("content", ["", "{", "[]", '{"version": 1}', '{"version": 999}'])
def test_a_corrupt_or_foreign_cache_is_rebuilt(flagged: Flagged, content: str) -> None:
    expected = summary(load(flagged.repo))
    path = flagged.repo / ".git" / "redline" / "ledger.json"
    path.write_text(content)
    assert summary(load(flagged.repo)) == expected
    assert json.loads(path.read_text())["version"] == ledgers.VERSION


def test_an_approval_is_caught_up_incrementally(flagged: Flagged) -> None:
    load(flagged.repo)
    approve(flagged.repo, flagged.edit)
    incremental = summary(load(flagged.repo))
    assert incremental == {flagged.edit: ([flagged.commit], True)}
    assert incremental == summary(rebuilt(flagged.repo))


def test_rewinding_the_notes_ref_withdraws_the_approval(flagged: Flagged) -> None:
    before = head(flagged.repo, "refs/notes/redline")
    approve(flagged.repo, flagged.edit)
    assert load(flagged.repo).entries[flagged.edit].approved
    git(flagged.repo, "update-ref", "refs/notes/redline", before)
    incremental = summary(load(flagged.repo))
    assert incremental == {flagged.edit: ([flagged.commit], False)}
    assert incremental == summary(rebuilt(flagged.repo))


def test_deleting_the_notes_ref_empties_the_ledger(flagged: Flagged) -> None:
    load(flagged.repo)
    git(flagged.repo, "update-ref", "-d", "refs/notes/redline")
    ledger = load(flagged.repo)
    assert ledger.entries == {}
    assert ledger.by_commit == {}
    assert ledger.notes_commit is None


def test_a_cache_from_vanished_notes_is_rebuilt(flagged: Flagged) -> None:
    load(flagged.repo)
    path = flagged.repo / ".git" / "redline" / "ledger.json"
    data = json.loads(path.read_text())
    data["notes"] = "0123456789" * 4  # a notes commit that does not exist
    data["entries"]["stale"] = {**data["entries"][flagged.edit], "edit": "stale"}
    path.write_text(json.dumps(data))
    ledger = load(flagged.repo)
    assert set(ledger.entries) == {flagged.edit}


def rebased_copy(f: Flagged) -> str:
    """Rebase the edit onto a moved main; notes.rewriteRef copies its note."""
    (f.repo / "CHANGES.md").write_text("main moved on\n")
    git(f.repo, "add", "CHANGES.md")
    git(f.repo, "commit", "--no-verify", "-m", "changes")
    git(f.repo, "checkout", "-q", "-b", "feature", f.branch)
    git(f.repo, "rebase", "-q", "main")
    copy = head(f.repo)
    assert copy != f.commit
    return copy


def test_a_rebased_copy_joins_the_same_edit(flagged: Flagged) -> None:
    load(flagged.repo)
    copy = rebased_copy(flagged)
    incremental = summary(load(flagged.repo))
    assert incremental == {flagged.edit: (sorted([flagged.commit, copy]), False)}
    assert incremental == summary(rebuilt(flagged.repo))
    approve(flagged.repo, copy)  # by the copy's sha: every commit of the edit is approved
    for commit in (flagged.commit, copy):
        note = json.loads(git(flagged.repo, "notes", "--ref=redline", "show", commit))
        assert len(note["approvals"]) == 1
    assert summary(load(flagged.repo)) == {flagged.edit: (sorted([flagged.commit, copy]), True)}


def test_withdrawn_approvals_of_an_edit_with_several_commits(flagged: Flagged) -> None:
    copy = rebased_copy(flagged)
    load(flagged.repo)
    before = head(flagged.repo, "refs/notes/redline")
    approve(flagged.repo, flagged.edit)
    assert load(flagged.repo).entries[flagged.edit].approved
    git(flagged.repo, "update-ref", "refs/notes/redline", before)
    incremental = summary(load(flagged.repo))
    assert incremental == summary(rebuilt(flagged.repo))
    assert incremental == {flagged.edit: (sorted([flagged.commit, copy]), False)}


def test_a_note_moving_to_a_fanned_out_path_stays_in_the_ledger(flagged: Flagged) -> None:
    """git writes small notes trees flat; redline (and git, for big ones) fans them out.

    The move shows as an added and a deleted path for the same commit; an
    unapproved edit must not drop out of the ledger (the guard would let it pass).
    """
    copy = rebased_copy(flagged)
    listing = git(flagged.repo, "ls-tree", "--name-only", "refs/notes/redline").split()
    assert flagged.commit in listing  # git flattened redline's fanned-out note
    load(flagged.repo)
    repo = pygit2.Repository(str(flagged.repo))
    oid = pygit2.Oid(hex=flagged.commit)
    note = notes.read_note(repo, oid)
    assert note is not None
    notes.publish(repo, lambda tip: {oid: note}, signature(repo))
    listing = git(flagged.repo, "ls-tree", "--name-only", "refs/notes/redline").split()
    assert flagged.commit[:2] in listing
    assert flagged.commit not in listing
    incremental = summary(load(flagged.repo))
    assert incremental == {flagged.edit: (sorted([flagged.commit, copy]), False)}
    assert incremental == summary(rebuilt(flagged.repo))
    # and the guard still refuses what carries it
    env = {**os.environ, "PRE_COMMIT_FROM_REF": "main", "PRE_COMMIT_TO_REF": "feature"}
    proc = redline(flagged.repo, "guard", env=env)
    assert proc.returncode == 1, proc.stderr
    assert f"edit {flagged.edit}" in proc.stderr


def test_a_flagged_edit_keeps_its_operations_that_matched_no_text(tmp_path: Path) -> None:
    """An add, a delete or a move of a guard file matched no text: the ledger keeps it,
    or the guard could not name the path the flag is on."""
    repo = user_repo(tmp_path / "repo", policy=None)
    session = agent(repo)
    result = session.patch("*** Add File: .redline.toml\n+[guard]\n")
    [commit] = result["commits"]
    entry = load(repo).entries[commit["edit"]]
    assert entry.operations == [
        ledgers.RecordedOperation(".redline.toml", None, None, None, None, "add")
    ]
    assert entry.flagged[0]["rule"] == "default (guard files: policy, hooks, CI)"
    assert load(repo).edits == {commit["commit"]: commit["edit"]}
