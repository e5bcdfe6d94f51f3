"""gitops.carried: a change that rewrites an unapproved flagged edit's lines carries its flag.

In-process, on a real repository whose ``.redline.toml`` protects ``migrations/**``
(``require = "exact"``): a fuzzy edit there is flagged; what happens to the
edits that follow it is read back from their notes, with git.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pygit2
import pytest

from gitmode_fixtures import git, make_repo, note_of
from redline.gitops.apply import SessionApplier
from redline.gitops.repo import main_repository
from redline.gitops.session import load, open_session
from redline.hooks.approve import approve
from redline.settings.policy import policy_from_tree
from redline.tools.request import parse_request

POLICY = '[[guard.protect]]\npaths = ["migrations/**"]\nrequire = "exact"\n'
MIGRATION = "migrations/001_users.sql"
TEXT = "CREATE TABLE users (\n    id INTEGER PRIMARY KEY,\n    name TEXT NOT NULL,\n    email TEXT\n);\n"
FUZZY_OLD = "    id INTEGER PRIMARY KY,\n    name TEXT NOT NULL,\n    email TEXT\n"
FUZZY_NEW = (
    "    id INTEGER PRIMARY KY,\n"
    "    name TEXT NOT NULL,\n"
    "    email TEXT UNIQUE,\n"
    "    created_at TIMESTAMP\n"
)
INSERTED = "    email TEXT UNIQUE,\n    created_at TIMESTAMP\n"
REWRITTEN = "    email TEXT UNIQUE NOT NULL,\n    created_at TIMESTAMP NOT NULL\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {".redline.toml": POLICY, MIGRATION: TEXT})


def applier_for(repo: Path, name: str = "s", new: bool = True) -> SessionApplier:
    git_repo, layout = main_repository(repo)
    session = open_session(git_repo, layout, name, None) if new else load(layout, name)
    return SessionApplier(
        git_repo, layout, session, policy_for=lambda tree: policy_from_tree(git_repo, tree)
    )


def apply(applier: SessionApplier, obj: dict[str, Any]) -> dict[str, Any]:
    request, _ = parse_request(obj)
    result = applier.apply(request).to_dict()
    assert result["status"] == "applied", result
    return result


def edit(applier: SessionApplier, old: str, new: str, path: str = MIGRATION) -> dict[str, Any]:
    return apply(applier, {"tool": "edit", "path": path, "old_string": old, "new_string": new})


def ids(result: dict[str, Any]) -> tuple[str, str]:
    commit = result["commits"][-1]
    return commit["edit"], commit["commit"]


def carried(edit_id: str, commit: str, path: str = MIGRATION) -> dict[str, str]:
    return {
        "rule": "carried flag",
        "path": path,
        "reason": (
            f"rewrites lines inserted by edit {edit_id} (commit {commit[:12]}), which is "
            "flagged and not yet approved; approving either edit clears this one"
        ),
        "edit": edit_id,
        "commit": commit,
    }


def test_a_rewrite_carries_the_flag_and_its_note_records_it(repo: Path) -> None:
    applier = applier_for(repo)
    first = edit(applier, FUZZY_OLD, FUZZY_NEW)
    assert first["flags"]
    first_id, first_commit = ids(first)
    second = edit(applier, INSERTED, REWRITTEN)
    assert second["match_type"] == "exact"
    assert second["flags"] == [carried(first_id, first_commit)]
    second_id, second_commit = ids(second)
    note = note_of(repo, second_commit)
    assert note["policy"] == {
        "verdict": "flagged",
        "action": "review",
        "source": ".redline.toml",
        "violations": [carried(first_id, first_commit)],
    }
    # ...and a rewrite of the rewrite carries the second edit's flag in turn, and the
    # first's still: its places hold neither its text nor the text from before it
    third = edit(applier, "    email TEXT UNIQUE NOT NULL,\n", "    email TEXT NOT NULL,\n")
    assert third["flags"] == [
        carried(first_id, first_commit),
        carried(second_id, second_commit),
    ]


def test_edits_beside_the_flagged_lines_carry_nothing(repo: Path) -> None:
    applier = applier_for(repo)
    first_id, first_commit = ids(edit(applier, FUZZY_OLD, FUZZY_NEW))
    # the flagged lines quoted as context, a line before them changed
    beside = edit(
        applier,
        "    name TEXT NOT NULL,\n    email TEXT UNIQUE,\n",
        "    full_name TEXT NOT NULL,\n    email TEXT UNIQUE,\n",
    )
    assert beside["flags"] == []
    # lines added after the table
    added = edit(applier, ");\n", ");\nCREATE INDEX users_email ON users (email);\n")
    assert added["flags"] == []
    # a comma appended to a flagged line is a rewrite of it
    comma = edit(applier, "    created_at TIMESTAMP\n", "    created_at TIMESTAMP,\n    age INT\n")
    assert comma["flags"] == [carried(first_id, first_commit)]


def test_deleting_the_file_takes_the_flagged_lines_along(repo: Path) -> None:
    applier = applier_for(repo)
    edit(applier, FUZZY_OLD, FUZZY_NEW)
    deleted = apply(
        applier,
        {
            "tool": "apply_patch",
            "patch": f"*** Begin Patch\n*** Delete File: {MIGRATION}\n*** End Patch\n",
        },
    )
    assert deleted["flags"] == []


def test_moving_the_file_carries_the_flag_to_the_new_path(repo: Path) -> None:
    applier = applier_for(repo)
    first_id, first_commit = ids(edit(applier, FUZZY_OLD, FUZZY_NEW))
    moved = apply(
        applier,
        {
            "tool": "apply_patch",
            "patch": (
                f"*** Begin Patch\n*** Update File: {MIGRATION}\n"
                "*** Move to: migrations/002_users.sql\n@@\n"
                "-    email TEXT UNIQUE,\n+    email TEXT UNIQUE NOT NULL,\n*** End Patch\n"
            ),
        },
    )
    assert moved["flags"] == [carried(first_id, first_commit, "migrations/002_users.sql")]


def test_an_approved_flagged_edit_passes_its_rewrites(repo: Path) -> None:
    applier = applier_for(repo)
    first_id, first_commit = ids(edit(applier, FUZZY_OLD, FUZZY_NEW))
    _, second_commit = ids(edit(applier, INSERTED, REWRITTEN))
    git_repo = pygit2.Repository(str(repo))
    assert not applier.flagged.cleared(pygit2.Oid(hex=second_commit))
    approve(git_repo, [first_id])
    # the carried flag is cleared with the edit it came from
    assert applier.flagged.cleared(pygit2.Oid(hex=second_commit))
    assert (
        edit(applier, "    email TEXT UNIQUE NOT NULL,\n", "    email TEXT NOT NULL,\n")["flags"]
        == []
    )
    assert note_of(repo, first_commit)["approvals"]


def test_a_restarted_daemon_reads_the_flags_from_the_branch(repo: Path) -> None:
    first_id, first_commit = ids(edit(applier_for(repo), FUZZY_OLD, FUZZY_NEW))
    again = applier_for(repo, new=False)  # a new process: nothing in memory
    assert edit(again, INSERTED, REWRITTEN)["flags"] == [carried(first_id, first_commit)]


def test_the_agents_own_rewrite_is_committed_flagged(repo: Path) -> None:
    """A rewrite made with another tool in the worktree becomes the session's external
    commit, and that carries the flag."""
    applier = applier_for(repo)
    first_id, first_commit = ids(edit(applier, FUZZY_OLD, FUZZY_NEW))
    path = Path(applier.session.worktree) / MIGRATION
    path.write_text(path.read_text().replace(INSERTED, REWRITTEN))
    result = edit(applier, "CREATE TABLE users (\n", "CREATE TABLE IF NOT EXISTS users (\n")
    external, agent = result["commits"]
    assert external["source"] == "external"
    assert result["flags"] == []  # the agent's edit itself rewrote nothing flagged
    assert note_of(repo, external["commit"])["policy"]["violations"] == [
        carried(first_id, first_commit)
    ]
    assert note_of(repo, agent["commit"])["policy"]["verdict"] == "pass"
    assert git(repo, "show", f"{external['commit']}:{MIGRATION}").count("NOT NULL") == 3


def copied(edit_id: str, commit: str, path: str, source: str = MIGRATION) -> dict[str, str]:
    return {
        "rule": "carried flag",
        "path": path,
        "reason": (
            f"moves or copies lines of {source} written by edit {edit_id} (commit "
            f"{commit[:12]}), which is flagged and not yet approved; approving either edit "
            "clears this one"
        ),
        "edit": edit_id,
        "commit": commit,
    }


def test_a_move_with_a_context_only_hunk_carries_the_flag(repo: Path) -> None:
    applier = applier_for(repo)
    first_id, first_commit = ids(edit(applier, FUZZY_OLD, FUZZY_NEW))
    moved = apply(
        applier,
        {
            "tool": "apply_patch",
            "patch": (
                f"*** Begin Patch\n*** Update File: {MIGRATION}\n"
                "*** Move to: archive/users.sql\n@@\n CREATE TABLE users (\n*** End Patch\n"
            ),
        },
    )
    # out of the protected folder, unchanged: the lines it took along keep their flag
    assert moved["flags"] == [copied(first_id, first_commit, "archive/users.sql")]


def test_a_write_that_copies_a_flagged_file_carries_the_flag(repo: Path) -> None:
    applier = applier_for(repo)
    first_id, first_commit = ids(edit(applier, FUZZY_OLD, FUZZY_NEW))
    text = (Path(applier.session.worktree) / MIGRATION).read_text()
    copy = apply(applier, {"tool": "write", "path": "docs/users.sql", "content": text})
    assert copy["flags"] == [copied(first_id, first_commit, "docs/users.sql")]
    # a write of other content, or of the text from before the edit, carries nothing
    other = apply(applier, {"tool": "write", "path": "docs/other.sql", "content": "SELECT 1;\n"})
    assert other["flags"] == []
    before = apply(applier, {"tool": "write", "path": "docs/old.sql", "content": TEXT})
    assert before["flags"] == []


def test_the_agents_own_copy_carries_the_flag(repo: Path) -> None:
    applier = applier_for(repo)
    first_id, first_commit = ids(edit(applier, FUZZY_OLD, FUZZY_NEW))
    worktree = Path(applier.session.worktree)
    (worktree / "users.sql").write_text((worktree / MIGRATION).read_text())
    (worktree / MIGRATION).unlink()
    outcome = apply(
        applier, {"tool": "write", "path": "NOTES.md", "content": "moved the users table\n"}
    )
    external = outcome["commits"][0]
    assert external["source"] == "external"
    assert note_of(repo, external["commit"])["policy"]["violations"] == [
        copied(first_id, first_commit, "users.sql")
    ]
