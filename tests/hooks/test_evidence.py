"""hooks.evidence: an edit commit whose note is gone counts as an unapproved flagged edit.

The end-to-end walk-arounds (a bare remote, a real daemon) are in
test_guard_walkarounds.py; here the parts: the trailers read, the ledger's index
of noted edits, copies, the range the pre-commit framework passes, and what
``redline approve`` writes for a commit without evidence.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pygit2
import pytest
from guard_fixtures import (
    APP,
    APP_FUZZY_NEW,
    APP_FUZZY_OLD,
    EXACT_NEW,
    EXACT_OLD,
    MIGRATION,
    REVIEWER,
    agent,
    head,
    install_hooks,
    redline,
    run_git,
    user_repo,
)

from gitmode_fixtures import git, note_of
from redline.gitops.notes import trailer_edits
from redline.hooks import ledger as ledgers


@pytest.mark.parametrize(
    ("message", "edits"),
    [
        (
            "redline: edit a.py\n\nApplied by redline.\n\nRedline-Edit: 0123456789ab\n",
            ["0123456789ab"],
        ),
        ("plain commit\n", []),
        (
            # a squash merge's message quotes each squashed commit, indented
            "Squashed commit of the following:\n\ncommit 1111\n\n    redline: edit\n\n"
            "    Redline-Edit: aaaaaaaaaaaa\n\ncommit 2222\n\n    Redline-Edit: bbbbbbbbbbbb\n"
            "\n    Redline-Edit: aaaaaaaaaaaa\n",
            ["aaaaaaaaaaaa", "bbbbbbbbbbbb"],
        ),
        ("mentions Redline-Edit: in prose, not as a line of its own\n", []),
    ],
    ids=["trailer", "none", "squash", "prose"],
)
def test_trailer_edits(message: str, edits: list[str]) -> None:
    assert trailer_edits(message) == edits


def ledger_of(repo: Path) -> ledgers.Ledger:
    return ledgers.load(pygit2.Repository(str(repo)))


def test_the_ledger_knows_every_noted_edit_and_forgets_a_removed_note(tmp_path: Path) -> None:
    repo = user_repo(tmp_path / "repo")
    session = agent(repo)
    exact = session.edit(MIGRATION, EXACT_OLD, EXACT_NEW)["commits"][0]
    fuzzy = session.edit(APP, APP_FUZZY_OLD, APP_FUZZY_NEW)["commits"][0]
    ledger = ledger_of(repo)
    assert ledger.edits == {exact["commit"]: exact["edit"], fuzzy["commit"]: fuzzy["edit"]}
    assert ledger.entries.keys() == {fuzzy["edit"]}  # only the tolerant one is an entry
    git(repo, "notes", "--ref=redline", "remove", exact["commit"])
    caught_up = ledger_of(repo)
    assert caught_up.noted_edits() == {fuzzy["edit"]}
    ledgers.cache_path(pygit2.Repository(str(repo))).unlink()
    assert ledger_of(repo).edits == caught_up.edits


@pytest.fixture
def landed(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A guarded repository whose main has one exact edit commit, its note removed."""
    repo = user_repo(tmp_path / "repo")
    install_hooks(repo)
    session = agent(repo)
    [commit] = session.edit(MIGRATION, EXACT_OLD, EXACT_NEW)["commits"]
    git(repo, "merge", "-q", "--ff-only", session.branch)
    git(repo, "notes", "--ref=redline", "remove", commit["commit"])
    return repo, commit


def guard_range(repo: Path, from_ref: str, to_ref: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PRE_COMMIT_FROM_REF": from_ref, "PRE_COMMIT_TO_REF": to_ref}
    return redline(repo, "guard", env=env)


def test_a_range_check_refuses_a_commit_without_evidence(
    landed: tuple[Path, dict[str, str]],
) -> None:
    repo, commit = landed
    proc = guard_range(repo, "HEAD~1", "HEAD")
    assert proc.returncode == 1
    assert proc.stderr.startswith(
        "redline guard: refused — 1 edit commit carries a Redline-Edit trailer but no evidence "
        "note in refs/notes/redline, so it counts as unapproved:\n"
        f"  evidence missing for edit {commit['edit']} (commit {commit['commit'][:12]})\n"
    )
    assert "Traceback" not in proc.stderr


def test_approving_a_commit_without_evidence_writes_it_a_note(
    landed: tuple[Path, dict[str, str]],
) -> None:
    repo, commit = landed
    out = redline(repo, "approve", "--repo", str(repo), commit["commit"][:10], check=True).stdout
    assert out == (
        f"approved edit {commit['edit']} (1 note(s)) as {REVIEWER}\n"
        f"  commit {commit['commit'][:12]} had no evidence note: a new note records that the "
        "evidence was missing and this approval\n"
    )
    note = note_of(repo, commit["commit"])
    assert note["schema"] == "redline.note/1"
    assert (note["edit"], note["tool"], note["source"]) == (commit["edit"], "unknown", "unknown")
    assert note["operations"] == [{"path": MIGRATION, "op": "write"}]
    assert note["policy"]["verdict"] == "flagged"
    assert note["policy"]["source"] == "evidence missing"
    [violation] = note["policy"]["violations"]
    assert violation["rule"] == "evidence missing"
    assert violation["reason"].endswith("(approved by a person without it)")
    assert [a["by"] for a in note["approvals"]] == [REVIEWER]
    entry = ledger_of(repo).entries[commit["edit"]]
    assert entry.approved and entry.commits == [commit["commit"]]
    assert guard_range(repo, "HEAD~1", "HEAD").returncode == 0
    # review has nothing left to show
    items = json.loads(redline(repo, "review", "--repo", str(repo), "--json", check=True).stdout)
    assert items == []


def test_a_copy_of_a_noted_edit_has_evidence(tmp_path: Path) -> None:
    """A cherry-picked copy has no note of its own; its edit's note is the evidence."""
    repo = user_repo(tmp_path / "repo")
    install_hooks(repo)
    session = agent(repo)
    [commit] = session.edit(MIGRATION, EXACT_OLD, EXACT_NEW)["commits"]
    (repo / "CHANGES.md").write_text("main moved on\n")
    git(repo, "add", "CHANGES.md")
    git(repo, "commit", "-q", "-m", "changes")
    git(repo, "cherry-pick", commit["commit"])
    assert head(repo) != commit["commit"]
    assert guard_range(repo, "HEAD~1", "HEAD").returncode == 0
    # ...until the original's note is gone too
    git(repo, "notes", "--ref=redline", "remove", commit["commit"])
    proc = guard_range(repo, "HEAD~1", "HEAD")
    assert (
        f"  evidence missing for edit {commit['edit']} (commit {head(repo)[:12]})\n" in proc.stderr
    )
    # approving the copy by the edit id finds it on the branch and writes its note
    redline(repo, "approve", "--repo", str(repo), commit["edit"], check=True)
    assert guard_range(repo, "HEAD~1", "HEAD").returncode == 0


def test_a_cherry_pick_without_commit_is_checked_at_commit_time(
    tmp_path: Path,
) -> None:
    repo = user_repo(tmp_path / "repo")
    install_hooks(repo)
    session = agent(repo)
    [commit] = session.edit(MIGRATION, EXACT_OLD, EXACT_NEW)["commits"]
    git(repo, "update-ref", "-d", "refs/notes/redline")
    git(repo, "cherry-pick", "-n", commit["commit"])  # leaves only MERGE_MSG behind
    proc = run_git(repo, "commit", "-q", "--no-edit")
    assert proc.returncode != 0
    assert f"  evidence missing for edit {commit['edit']} (commit {commit['commit'][:12]})\n" in (
        proc.stderr
    )
    assert proc.stderr.endswith(f"(`redline approve {commit['commit'][:12]}`) and commit again.\n")
