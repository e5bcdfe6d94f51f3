"""Git-mode write, delete and read (SessionApplier in-process), checked with real git.

A write or a delete is one commit with a ``Redline-Edit`` trailer and a note
(tool ``write``/``delete``, one operation ``create``/``overwrite``/``delete``
with no match evidence); the policy judges it by its path (the guard's own
files are flagged, or refused under ``reject``), and a write that rewrites the
lines of an unapproved flagged edit carries its flag. A read commits nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gitmode_fixtures import (
    assert_fsck_clean,
    branch_commits,
    changed_files,
    git,
    make_repo,
    note_of,
    porcelain,
    rev,
    trailer,
    write,
)
from redline.gitops.apply import SessionApplier
from redline.gitops.repo import main_repository
from redline.gitops.session import Session, open_session
from redline.settings.policy import policy_from_tree
from redline.tools.request import parse_request

BRANCH = "redline/s"
GUARD_FLAG = {
    "rule": "default (guard files: policy, hooks, CI)",
    "path": ".redline.toml",
    "reason": "edits to the guard's own files (its policy, hook configuration and CI definitions) need a person's approval",
}
POLICY = '[[guard.protect]]\npaths = ["migrations/**"]\nrequire = "exact"\n'
MIGRATION = "migrations/001.sql"
SQL = "CREATE TABLE users (\n    id INTEGER PRIMARY KEY,\n    email TEXT\n);\n"


def open_applier(repo: Path, policy: bool = False) -> tuple[SessionApplier, Session]:
    git_repo, layout = main_repository(repo)
    session = open_session(git_repo, layout, "s", None)
    if not policy:
        return SessionApplier(git_repo, layout, session), session
    applier = SessionApplier(
        git_repo, layout, session, policy_for=lambda tree: policy_from_tree(git_repo, tree)
    )
    return applier, session


@pytest.fixture
def session(repo: Path) -> tuple[SessionApplier, Session]:
    return open_applier(repo)


def apply(applier: SessionApplier, obj: dict[str, Any], **kw: Any) -> dict[str, Any]:
    request, _turn = parse_request(obj)
    return applier.apply(request, **kw).to_dict()


def wr(path: str, content: str, **fields: Any) -> dict[str, Any]:
    return {"tool": "write", "path": path, "content": content, **fields}


def test_an_overwrite_is_one_commit_with_its_note(
    repo: Path, session: tuple[SessionApplier, Session]
) -> None:
    applier, s = session
    result = apply(applier, wr("c.txt", "alpha\nBETA\n"), model="m-1")
    assert result["status"] == "applied", result
    assert result["match_type"] is None and result["session"] == "s"
    [commit] = branch_commits(repo, BRANCH, s.base)
    assert result["commits"] == [
        {
            "commit": commit,
            "edit": result["commits"][0]["edit"],
            "paths": ["c.txt"],
            "source": "agent",
        }
    ]
    assert changed_files(repo, commit) == ["c.txt"]
    assert git(repo, "show", f"{commit}:c.txt") == "alpha\nBETA\n"
    note = note_of(repo, commit)
    assert (note["tool"], note["model"], note["source"]) == ("write", "m-1", "agent")
    assert note["operations"] == [{"path": "c.txt", "op": "overwrite"}]
    assert note["policy"] == {"verdict": "pass", "source": "defaults"}
    assert trailer(repo, commit) == [note["edit"]]
    subject = git(repo, "log", "-1", "--format=%s%n%b", commit)
    assert subject.startswith("redline: overwrite c.txt\n")
    assert "(write)" in subject
    worktree = Path(s.worktree)
    assert (worktree / "c.txt").read_text() == "alpha\nBETA\n"
    assert porcelain(worktree) == ""
    assert_fsck_clean(repo)


def test_a_new_file_in_new_folders_is_created(
    repo: Path, session: tuple[SessionApplier, Session]
) -> None:
    applier, s = session
    result = apply(applier, wr("pkg/sub/new.py", "x = 1\u200b\n"))
    assert result["status"] == "applied"
    assert result["cleaned"] == ["U+200B×1"]
    [commit] = branch_commits(repo, BRANCH, s.base)
    assert git(repo, "show", f"{commit}:pkg/sub/new.py") == "x = 1\n"
    assert git(repo, "ls-tree", commit, "pkg/sub/new.py").split()[0] == "100644"
    note = note_of(repo, commit)
    assert note["operations"] == [{"path": "pkg/sub/new.py", "op": "create"}]
    assert note["cleaned"] == ["U+200B×1"]
    assert (Path(s.worktree) / "pkg" / "sub" / "new.py").read_bytes() == b"x = 1\n"
    assert porcelain(Path(s.worktree)) == ""


def test_an_overwrite_keeps_the_executable_mode_and_crlf(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"run.sh": "#!/bin/sh\r\necho 1\r\n"}, executable=("run.sh",))
    applier, s = open_applier(repo)
    result = apply(applier, wr("run.sh", "#!/bin/sh\necho 2\n"))
    assert result["line_ending"] == "crlf"
    [commit] = branch_commits(repo, BRANCH, s.base)
    assert git(repo, "ls-tree", commit, "run.sh").split()[0] == "100755"
    assert git(repo, "cat-file", "blob", f"{commit}:run.sh") == "#!/bin/sh\r\necho 2\r\n"


def test_a_delete_is_one_commit_and_the_file_leaves_the_worktree(
    repo: Path, session: tuple[SessionApplier, Session]
) -> None:
    applier, s = session
    result = apply(applier, {"tool": "delete", "path": "docs/readme.md"})
    assert result["status"] == "applied"
    assert result["diff"].startswith("--- a/docs/readme.md\n+++ /dev/null\n")
    [commit] = branch_commits(repo, BRANCH, s.base)
    assert git(repo, "ls-tree", "-r", "--name-only", commit).split().count("docs/readme.md") == 0
    note = note_of(repo, commit)
    assert (note["tool"], note["operations"]) == (
        "delete",
        [{"path": "docs/readme.md", "op": "delete"}],
    )
    assert not (Path(s.worktree) / "docs").exists()  # git keeps no empty folder
    assert porcelain(Path(s.worktree)) == ""


@pytest.mark.parametrize(
    ("request_obj", "says"),
    [
        ({"tool": "delete", "path": "docs"}, "'docs' is a directory; delete works on one file"),
        ({"tool": "delete", "path": "gone.txt"}, "file 'gone.txt' does not exist"),
        (wr("blob.bin", "text\n"), "'blob.bin' is a binary file"),
        (wr("a.py/x.py", "x\n"), "'a.py' is a file, so nothing can be inside it"),
        (wr(".git/config", "x\n"), "is inside a .git directory"),
        (wr("../x.txt", "x\n"), "contains '..'"),
    ],
)
def test_refusals_commit_nothing(
    repo: Path, session: tuple[SessionApplier, Session], request_obj: dict[str, Any], says: str
) -> None:
    applier, s = session
    result = apply(applier, request_obj)
    assert result["status"] == "invalid"
    assert says in result["error"], result["error"]
    assert branch_commits(repo, BRANCH, s.base) == []


def test_identical_content_is_no_change_and_no_commit(
    repo: Path, session: tuple[SessionApplier, Session]
) -> None:
    applier, s = session
    result = apply(applier, wr("b.py", "VALUE = 1\n"))
    assert result["status"] == "no_change"
    assert result["commits"] == []
    assert branch_commits(repo, BRANCH, s.base) == []


def test_a_dry_run_commits_and_writes_nothing(
    repo: Path, session: tuple[SessionApplier, Session]
) -> None:
    applier, s = session
    tip = rev(repo, BRANCH)
    for obj in (wr("new.txt", "x\n"), wr("c.txt", "y\n"), {"tool": "delete", "path": "b.py"}):
        result = apply(applier, obj, dry_run=True)
        assert result["status"] == "applied" and result["dry_run"] is True
        assert result["diff"] and result["commits"] == []
    assert rev(repo, BRANCH) == tip
    worktree = Path(s.worktree)
    assert not (worktree / "new.txt").exists()
    assert (worktree / "b.py").read_text() == "VALUE = 1\n"
    assert porcelain(worktree) == ""


def test_external_changes_are_committed_first(
    repo: Path, session: tuple[SessionApplier, Session]
) -> None:
    applier, s = session
    write(Path(s.worktree) / "c.txt", "changed by hand\n")
    result = apply(applier, wr("c.txt", "written\n"))
    external, mine = result["commits"]
    assert (external["source"], mine["source"]) == ("external", "agent")
    assert git(repo, "show", f"{external['commit']}:c.txt") == "changed by hand\n"
    assert git(repo, "show", f"{mine['commit']}:c.txt") == "written\n"
    assert result["diff"] == "--- a/c.txt\n+++ b/c.txt\n@@ -1 +1 @@\n-changed by hand\n+written\n"


def test_read_shows_the_worktree_and_commits_nothing(
    repo: Path, session: tuple[SessionApplier, Session]
) -> None:
    applier, s = session
    write(Path(s.worktree) / "c.txt", "alpha\nhand-made\ngamma\n")
    tip = rev(repo, BRANCH)
    result = apply(applier, {"tool": "read", "path": "c.txt", "offset": 2, "limit": 1})
    assert result["status"] == "read"
    assert result["content"] == "     2\thand-made"
    assert (result["start_line"], result["end_line"], result["total_lines"]) == (2, 2, 3)
    assert result["truncated"] is True and result["session"] == "s"
    assert rev(repo, BRANCH) == tip
    # the change made by hand is still to be committed, by the next change
    after = apply(applier, {"tool": "edit", "path": "b.py", "old_string": "1", "new_string": "2"})
    assert [c["source"] for c in after["commits"]] == ["external", "agent"]


@pytest.mark.parametrize(
    ("path", "says"),
    [
        ("docs", "'docs' is a directory; read works on one file"),
        ("nope.txt", "file 'nope.txt' does not exist; to create it, use write"),
        ("blob.bin", "'blob.bin' is a binary file"),
        (".git/HEAD", "is inside a .git directory"),
    ],
)
def test_read_refusals(
    repo: Path, session: tuple[SessionApplier, Session], path: str, says: str
) -> None:
    applier, _ = session
    result = apply(applier, {"tool": "read", "path": path})
    assert result["status"] == "invalid"
    assert says in result["error"]


def test_a_symbolic_link_is_not_read_in_git_mode(
    repo: Path, session: tuple[SessionApplier, Session]
) -> None:
    applier, s = session
    os.symlink("c.txt", Path(s.worktree) / "alias.txt")
    result = apply(applier, {"tool": "read", "path": "alias.txt"})
    assert result["status"] == "invalid"
    assert "is a symbolic link ('alias.txt')" in result["error"]


# --- the policy and the guard -----------------------------------------------------------


def guarded(tmp_path: Path, action: str = "review") -> tuple[Path, SessionApplier, Session]:
    policy = f'[guard]\naction = "{action}"\n\n{POLICY}'
    repo = make_repo(tmp_path / "g", {".redline.toml": policy, MIGRATION: SQL})
    applier, s = open_applier(repo, policy=True)
    return repo, applier, s


def test_a_write_to_a_protected_path_passes_as_an_exact_edit_does(tmp_path: Path) -> None:
    """No text is matched: nothing was placed by a tolerance, so require = exact holds."""
    repo, applier, s = guarded(tmp_path)
    result = apply(applier, wr(MIGRATION, SQL.replace("TEXT", "TEXT UNIQUE")))
    assert result["status"] == "applied" and result["flags"] == []
    [commit] = branch_commits(repo, BRANCH, s.base)
    assert note_of(repo, commit)["policy"]["verdict"] == "pass"


@pytest.mark.parametrize(
    "obj",
    [wr(".redline.toml", "# nothing protected\n"), {"tool": "delete", "path": ".redline.toml"}],
    ids=["write", "delete"],
)
def test_writing_or_deleting_the_policy_is_flagged(tmp_path: Path, obj: dict[str, Any]) -> None:
    repo, applier, s = guarded(tmp_path)
    result = apply(applier, obj)
    assert result["status"] == "applied"
    assert result["flags"] == [GUARD_FLAG]
    [commit] = branch_commits(repo, BRANCH, s.base)
    note = note_of(repo, commit)
    assert note["policy"]["verdict"] == "flagged"
    assert note["policy"]["violations"] == [GUARD_FLAG]
    # the base's policy still judges: a fuzzy edit of the migration is flagged
    fuzzy = apply(
        applier,
        {
            "tool": "edit",
            "path": MIGRATION,
            "old_string": "    id INTEGER PRIMARY KY,\n    email TEXT\n",
            "new_string": "    id INTEGER PRIMARY KY,\n    email TEXT UNIQUE\n",
        },
    )
    assert fuzzy["flags"] and fuzzy["flags"][0]["rule"] == "guard.protect[1] (migrations/**)"


def test_reject_refuses_a_write_of_the_policy(tmp_path: Path) -> None:
    repo, applier, s = guarded(tmp_path, "reject")
    result = apply(applier, wr(".redline.toml", "# nothing\n"))
    assert result["status"] == "rejected"
    assert result["path"] == ".redline.toml"
    assert result["error"].startswith(
        "rejected by guard rule default (guard files: policy, hooks, CI): edits to the guard's "
        "own files (its policy, hook configuration and CI definitions) need a person's approval "
        "at .redline.toml."
    )
    assert result["flags"] == [GUARD_FLAG]
    assert branch_commits(repo, BRANCH, s.base) == []


def test_a_write_over_a_flagged_edit_carries_its_flag(tmp_path: Path) -> None:
    repo, applier, _ = guarded(tmp_path)
    fuzzy = apply(
        applier,
        {
            "tool": "edit",
            "path": MIGRATION,
            "old_string": "    id INTEGER PRIMARY KY,\n    email TEXT\n",
            "new_string": "    id INTEGER PRIMARY KY,\n    email TEXT UNIQUE\n",
        },
    )
    assert fuzzy["flags"]
    first = fuzzy["commits"][-1]
    rewritten = SQL.replace("email TEXT", "email TEXT UNIQUE NOT NULL")
    result = apply(applier, wr(MIGRATION, rewritten))
    assert [f["rule"] for f in result["flags"]] == ["carried flag"]
    assert result["flags"][0]["edit"] == first["edit"]
    note = note_of(repo, result["commits"][-1]["commit"])
    assert note["policy"]["verdict"] == "flagged"


def test_the_guard_refuses_a_push_carrying_a_flagged_write(tmp_path: Path) -> None:
    repo, applier, s = guarded(tmp_path)
    unprotected = '[[guard.protect]]\npaths = ["docs/**"]\nrequire = "exact"\n'
    result = apply(applier, wr(".redline.toml", unprotected))
    [commit] = result["commits"]
    env = {
        **os.environ,
        "PRE_COMMIT_FROM_REF": s.base,
        "PRE_COMMIT_TO_REF": rev(repo, BRANCH),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "redline", "guard"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    assert f"edit {commit['edit']}" in proc.stderr
    # where the overwrite's changes are in the pushed file: a line gone at the top, line 2
    assert ".redline.toml lines deleted at the top, line 2, overwrite" in proc.stderr
    assert "redline approve" in proc.stderr
