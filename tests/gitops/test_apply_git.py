"""gitops.apply: SessionApplier in-process on a real repository, checked with git.

Every edit must become exactly one commit per file group on the session's
branch, with a ``Redline-Edit`` trailer and a JSON note under
``refs/notes/redline`` that git itself can read; the session worktree ends up
clean and the user's own worktree, index and HEAD are never touched.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import pytest

from gitmode_fixtures import (
    assert_fsck_clean,
    branch_commits,
    changed_files,
    digest_tree,
    git,
    make_repo,
    note_of,
    porcelain,
    rev,
    trailer,
    write,
)
from redline.engine import edit_plan
from redline.gitops import apply as apply_module
from redline.gitops.apply import SessionApplier
from redline.gitops.errors import RefMoved
from redline.gitops.repo import main_repository
from redline.gitops.session import Session, open_session
from redline.gitops.snapshot import TreeSnapshot
from redline.tools.request import parse_request
from support.requests import edit, patch

BRANCH = "redline/s"
T = TypeVar("T")
NOTE_FIELDS = {"path", "op", "match_type", "confidence", "start_line", "end_line"}
EVIDENCE = NOTE_FIELDS | {"matched_sha256", "matched_preview"}


def open_applier(repo: Path, name: str = "s") -> tuple[SessionApplier, Session]:
    git_repo, layout = main_repository(repo)
    session = open_session(git_repo, layout, name, None)
    return SessionApplier(git_repo, layout, session), session


@pytest.fixture
def session(repo: Path) -> tuple[SessionApplier, Session]:
    return open_applier(repo)


def apply(applier: SessionApplier, obj: dict[str, Any], **kw: Any) -> dict[str, Any]:
    request, _turn = parse_request(obj)
    return applier.apply(request, **kw).to_dict()


def diff(repo: Path, commit: str) -> str:
    """The commit's patch against its parent, without the header."""
    return git(repo, "diff", "--no-color", "--no-ext-diff", f"{commit}^", commit)


# --- one edit ------------------------------------------------------------------------


def test_an_edit_is_exactly_one_commit_whose_diff_is_the_edit(
    repo: Path, session: tuple[SessionApplier, Session]
) -> None:
    applier, s = session
    wt = Path(s.worktree)
    result = apply(applier, edit("a.py", "'Hello, ' + name", "f'Hello, {name}!'"))

    assert result["status"] == "applied"
    assert result["session"] == "s"
    commits = branch_commits(repo, BRANCH, s.base)
    assert len(commits) == 1
    [commit] = commits
    assert result["commits"] == [
        {
            "commit": commit,
            "edit": result["commits"][0]["edit"],
            "paths": ["a.py"],
            "source": "agent",
        }
    ]
    assert rev(repo, f"{commit}^") == s.base
    assert changed_files(repo, commit) == ["a.py"]
    assert git(repo, "show", "--stat", "--format=", commit).splitlines()[-1].strip() == (
        "1 file changed, 1 insertion(+), 1 deletion(-)"
    )
    patch_text = diff(repo, commit)
    assert "-    return 'Hello, ' + name\n" in patch_text
    assert "+    return f'Hello, {name}!'\n" in patch_text
    assert (wt / "a.py").read_text() == "def greet(name):\n    return f'Hello, {name}!'\n"
    assert git(repo, "show", f"{commit}:a.py") == (wt / "a.py").read_text()
    assert porcelain(wt) == ""
    assert git(wt, "rev-parse", "HEAD").strip() == commit
    assert git(repo, "log", "-1", "--format=%an <%ae>", commit).strip() == (
        "Repo User <repo-user@example.com>"
    )
    assert_fsck_clean(repo)


def test_the_commit_has_a_trailer_and_a_note_git_can_read(
    repo: Path, session: tuple[SessionApplier, Session]
) -> None:
    applier, _s = session
    result = apply(applier, edit("c.txt", "beta\n", "BETA\n"), model="test-model")
    [info] = result["commits"]
    commit = info["commit"]

    assert trailer(repo, commit) == [info["edit"]]
    note = note_of(repo, commit)
    assert note["schema"] == "redline.note/1"
    assert note["edit"] == info["edit"]
    assert note["session"] == "s"
    assert note["tool"] == "edit"
    assert note["model"] == "test-model"
    assert note["source"] == "agent"
    assert isinstance(note["request"], str) and note["request"]
    [op] = note["operations"]
    assert set(op) >= EVIDENCE
    assert op["path"] == "c.txt"
    assert op["match_type"] == "exact"
    assert op["confidence"] == 1.0
    assert (op["start_line"], op["end_line"]) == (2, 2)
    assert op["matched_sha256"] == hashlib.sha256(b"beta\n").hexdigest()
    assert op["matched_preview"] == "beta\n"

    shown = git(repo, "log", "--notes=redline", "-1", commit)
    assert "Notes (redline):" in shown
    assert '"matched_sha256"' in shown and info["edit"] in shown
    assert_fsck_clean(repo)


def test_the_trailer_is_a_real_git_trailer(
    repo: Path, session: tuple[SessionApplier, Session]
) -> None:
    applier, _s = session
    result = apply(applier, edit("b.py", "VALUE = 1", "VALUE = 2"))
    [info] = result["commits"]
    message = git(repo, "log", "-1", "--format=%B", info["commit"])
    proc = subprocess.run(
        ["git", "interpret-trailers", "--parse"],
        input=message.encode(),
        capture_output=True,
        cwd=repo,
        check=True,
    )
    assert proc.stdout.decode().strip() == f"Redline-Edit: {info['edit']}"


def test_a_tolerant_match_records_its_tolerance(
    repo: Path, session: tuple[SessionApplier, Session]
) -> None:
    applier, _s = session
    result = apply(applier, edit("a.py", "return  'Hello, '  +  name", "return 'Hi, ' + name"))
    assert result["status"] == "applied"
    assert result["match_type"] == "whitespace"
    note = note_of(repo, result["commits"][0]["commit"])
    assert note["tolerances"] == ["whitespace"]
    assert note["operations"][0]["match_type"] == "whitespace"
    assert note["operations"][0]["confidence"] == 0.95


def test_an_executable_file_keeps_its_mode(
    repo: Path, session: tuple[SessionApplier, Session]
) -> None:
    applier, s = session
    wt = Path(s.worktree)
    assert stat.S_IMODE((wt / "tool.sh").stat().st_mode) == 0o755
    result = apply(applier, edit("tool.sh", "echo one", "echo two"))
    commit = result["commits"][0]["commit"]

    assert (wt / "tool.sh").read_text() == "#!/bin/sh\necho two\n"
    assert stat.S_IMODE((wt / "tool.sh").stat().st_mode) == 0o755
    assert git(repo, "ls-tree", commit, "tool.sh").split()[0] == "100755"
    assert git(repo, "diff", "--summary", f"{commit}^", commit) == ""  # no mode change
    assert porcelain(wt) == ""


def test_the_users_worktree_index_and_head_are_untouched(
    repo: Path, session: tuple[SessionApplier, Session]
) -> None:
    applier, s = session
    # The user is in the middle of their own work: unstaged, staged and untracked changes.
    write(repo / "a.py", "def greet(name):\n    return 'user edit'\n")
    write(repo / "b.py", "VALUE = 'staged'\n")
    git(repo, "add", "b.py")
    write(repo / "scratch.txt", "mine\n")
    head, branch = rev(repo, "HEAD"), git(repo, "symbolic-ref", "HEAD").strip()
    index = (repo / ".git" / "index").read_bytes()
    files = digest_tree(repo, skip=(".git",))
    status = porcelain(repo)

    result = apply(applier, edit("a.py", "'Hello, ' + name", "'Hi ' + name"))
    result2 = apply(applier, patch("*** Update File: b.py\n@@\n-VALUE = 1\n+VALUE = 42\n"))
    assert result["status"] == result2["status"] == "applied"

    assert (repo / ".git" / "index").read_bytes() == index
    assert rev(repo, "HEAD") == head
    assert git(repo, "symbolic-ref", "HEAD").strip() == branch
    assert digest_tree(repo, skip=(".git",)) == files
    assert porcelain(repo) == status
    assert (Path(s.worktree) / "b.py").read_text() == "VALUE = 42\n"


def test_a_path_outside_the_session_is_invalid_and_commits_nothing(
    repo: Path, session: tuple[SessionApplier, Session]
) -> None:
    applier, s = session
    for path in ("missing.py", "docs", "../repo/a.py", ".git/config"):
        result = apply(applier, edit(path, "x", "y"))
        assert result["status"] == "invalid", path
        assert result["commits"] == []
    assert branch_commits(repo, BRANCH, s.base) == []


def test_a_dry_run_commits_nothing(repo: Path, session: tuple[SessionApplier, Session]) -> None:
    applier, s = session
    result = apply(applier, edit("b.py", "VALUE = 1", "VALUE = 2"), dry_run=True)
    assert result["status"] == "applied"
    assert result["dry_run"] is True
    assert result["commits"] == []
    assert branch_commits(repo, BRANCH, s.base) == []
    assert (Path(s.worktree) / "b.py").read_text() == "VALUE = 1\n"
    assert git(repo, "notes", "--ref=redline", "list") == ""


# --- patches: one commit per file group ---------------------------------------------------


def test_a_patch_with_three_groups_makes_three_commits_in_order(
    repo: Path, session: tuple[SessionApplier, Session]
) -> None:
    applier, s = session
    wt = Path(s.worktree)
    result = apply(
        applier,
        patch(
            "*** Update File: a.py\n@@ def greet(name):\n-    return 'Hello, ' + name\n+    return 'Hey, ' + name\n"
            "*** Add File: pkg/new.py\n+NEW = True\n"
            "*** Delete File: c.txt\n"
        ),
    )
    assert result["status"] == "applied"
    commits = branch_commits(repo, BRANCH, s.base)
    assert [c["commit"] for c in result["commits"]] == commits
    assert [c["paths"] for c in result["commits"]] == [["a.py"], ["pkg/new.py"], ["c.txt"]]
    assert [changed_files(repo, c) for c in commits] == [["a.py"], ["pkg/new.py"], ["c.txt"]]
    assert {c["source"] for c in result["commits"]} == {"agent"}
    assert len({c["edit"] for c in result["commits"]}) == 3

    notes = [note_of(repo, c) for c in commits]
    assert [n["edit"] for n in notes] == [c["edit"] for c in result["commits"]]
    assert [trailer(repo, c) for c in commits] == [[n["edit"]] for n in notes]
    assert len({n["request"] for n in notes}) == 1  # one request, three edits
    assert {n["tool"] for n in notes} == {"apply_patch"}
    [update] = notes[0]["operations"]
    assert set(update) >= EVIDENCE
    assert update["path"] == "a.py"
    assert update["match_type"] == "exact"
    [hunk] = result["hunks"]
    assert hunk["matched_text"] == "    return 'Hello, ' + name"
    assert update["matched_sha256"] == hashlib.sha256(hunk["matched_text"].encode()).hexdigest()
    assert update["matched_preview"] == hunk["matched_text"]
    assert (update["start_line"], update["end_line"]) == (2, 2)
    assert notes[1]["operations"] == [{"path": "pkg/new.py", "op": "add"}]
    assert notes[2]["operations"] == [{"path": "c.txt", "op": "delete"}]

    assert (wt / "a.py").read_text() == "def greet(name):\n    return 'Hey, ' + name\n"
    assert (wt / "pkg" / "new.py").read_text() == "NEW = True\n"
    assert stat.S_IMODE((wt / "pkg" / "new.py").stat().st_mode) == 0o644
    assert not (wt / "c.txt").exists()
    assert porcelain(wt) == ""
    assert_fsck_clean(repo)


def test_a_move_keeps_the_executable_mode(
    repo: Path, session: tuple[SessionApplier, Session]
) -> None:
    applier, s = session
    wt = Path(s.worktree)
    result = apply(
        applier,
        patch("*** Update File: tool.sh\n*** Move to: bin/tool.sh\n@@\n-echo one\n+echo moved\n"),
    )
    assert result["status"] == "applied"
    [info] = result["commits"]
    assert sorted(info["paths"]) == ["bin/tool.sh", "tool.sh"]
    assert git(repo, "ls-tree", "-r", info["commit"], "bin/tool.sh").split()[0] == "100755"
    assert stat.S_IMODE((wt / "bin" / "tool.sh").stat().st_mode) == 0o755
    assert not (wt / "tool.sh").exists()
    assert porcelain(wt) == ""


def test_a_failing_group_commits_nothing_while_the_others_commit(
    repo: Path, session: tuple[SessionApplier, Session]
) -> None:
    applier, s = session
    wt = Path(s.worktree)
    result = apply(
        applier,
        patch(
            "*** Update File: a.py\n@@\n-    return 'Hello, ' + name\n+    return 'Yo, ' + name\n"
            "*** Update File: b.py\n@@\n-VALUE = 999\n+VALUE = 1000\n"
            "*** Add File: docs/new.md\n+new\n"
        ),
    )
    assert result["status"] == "partially_applied"
    assert "1 file group not applied" in result["error"] or "not applied" in result["error"]
    commits = branch_commits(repo, BRANCH, s.base)
    assert len(commits) == 2
    assert [c["commit"] for c in result["commits"]] == commits
    assert [changed_files(repo, c) for c in commits] == [["a.py"], ["docs/new.md"]]
    assert [g["paths"] for g in result["not_applied"]] == [["b.py"]]
    assert (wt / "b.py").read_text() == "VALUE = 1\n"
    assert git(repo, "show", f"{BRANCH}:b.py") == "VALUE = 1\n"
    assert porcelain(wt) == ""


def test_a_patch_that_fails_entirely_commits_nothing(
    repo: Path, session: tuple[SessionApplier, Session]
) -> None:
    applier, s = session
    result = apply(applier, patch("*** Update File: b.py\n@@\n-VALUE = 999\n+VALUE = 1000\n"))
    assert result["status"] == "failed"
    assert "hunk not found" in result["error"]
    assert result["commits"] == []
    assert branch_commits(repo, BRANCH, s.base) == []


# --- changes made by other tools -----------------------------------------------------------


def test_external_changes_are_committed_first_as_their_own_commit(
    repo: Path, session: tuple[SessionApplier, Session]
) -> None:
    applier, s = session
    wt = Path(s.worktree)
    write(wt / "c.txt", "alpha\nbeta (edited by another tool)\ngamma\n")
    (wt / "docs" / "readme.md").unlink()
    write(wt / "notes" / "todo.txt", "todo\n")  # untracked, in a new directory
    write(wt / "debug.log", "ignored\n")  # *.log is ignored: never committed
    os.chmod(wt / "b.py", 0o755)  # a mode change is a change too

    result = apply(applier, edit("a.py", "'Hello, ' + name", "'Hi, ' + name"))

    assert result["status"] == "applied"
    commits = branch_commits(repo, BRANCH, s.base)
    assert [c["commit"] for c in result["commits"]] == commits
    external, agent = result["commits"]
    assert external["source"] == "external"
    assert external["paths"] == ["b.py", "c.txt", "docs/readme.md", "notes/todo.txt"]
    assert changed_files(repo, commits[0]) == external["paths"]
    assert agent == {**agent, "source": "agent", "paths": ["a.py"]}
    assert changed_files(repo, commits[1]) == ["a.py"]
    assert git(repo, "diff", "--stat", f"{commits[1]}^", commits[1]).count("|") == 1

    note = note_of(repo, commits[0])
    assert note["source"] == "external"
    assert note["tool"] == "external"
    assert note["edit"] == external["edit"] == trailer(repo, commits[0])[0]
    assert note["operations"] == [
        {"path": "b.py", "op": "write"},
        {"path": "c.txt", "op": "write"},
        {"path": "docs/readme.md", "op": "delete"},
        {"path": "notes/todo.txt", "op": "write"},
    ]
    assert note_of(repo, commits[1])["source"] == "agent"

    tree = git(repo, "ls-tree", "-r", "--name-only", BRANCH).split()
    assert "debug.log" not in tree
    assert "notes/todo.txt" in tree and "docs/readme.md" not in tree
    assert git(repo, "ls-tree", BRANCH, "b.py").split()[0] == "100755"
    assert (wt / "debug.log").read_text() == "ignored\n"
    assert porcelain(wt) == ""
    assert_fsck_clean(repo)


def test_without_external_changes_there_is_no_external_commit(
    repo: Path, session: tuple[SessionApplier, Session]
) -> None:
    applier, s = session
    write(Path(s.worktree) / "debug.log", "only an ignored file\n")
    result = apply(applier, edit("b.py", "VALUE = 1", "VALUE = 2"))
    assert [c["source"] for c in result["commits"]] == ["agent"]


# --- changed after planning ----------------------------------------------------------------


def test_a_file_changed_after_planning_is_not_overwritten(
    repo: Path, session: tuple[SessionApplier, Session]
) -> None:
    applier, s = session
    wt = Path(s.worktree)
    concurrent = "def greet(name):\n    return 'written concurrently'\n"
    applier.before_write = lambda: write(wt / "a.py", concurrent)
    notes_before = git(repo, "for-each-ref", "refs/notes/")

    result = apply(applier, edit("a.py", "'Hello, ' + name", "'Hi, ' + name"))

    assert result["status"] == "failed"
    assert "changed after planning" in result["error"]
    assert result["commits"] == []
    assert branch_commits(repo, BRANCH, s.base) == []
    assert git(repo, "for-each-ref", "refs/notes/") == notes_before
    assert (wt / "a.py").read_text() == concurrent


def test_changed_after_planning_still_publishes_the_external_commit(
    repo: Path, session: tuple[SessionApplier, Session]
) -> None:
    applier, s = session
    wt = Path(s.worktree)
    write(wt / "c.txt", "changed by a tool\n")
    applier.before_write = lambda: write(wt / "a.py", "concurrent\n")

    result = apply(applier, edit("a.py", "'Hello, ' + name", "'Hi, ' + name"))

    assert result["status"] == "failed"
    assert "changed after planning" in result["error"]
    [external] = result["commits"]
    assert external["source"] == "external" and external["paths"] == ["c.txt"]
    assert branch_commits(repo, BRANCH, s.base) == [external["commit"]]
    assert note_of(repo, external["commit"])["source"] == "external"
    assert (wt / "a.py").read_text() == "concurrent\n"
    assert porcelain(wt) == " M a.py\n"  # the concurrent change, for the next request


# --- planning beside the git thread ----------------------------------------------------------


class GitThread:
    """An ``on_worker`` as the daemon's: every step on one other thread, waited for."""

    def __init__(self) -> None:
        self.pool = ThreadPoolExecutor(max_workers=1)
        self.thread = self.pool.submit(threading.current_thread).result()

    def __call__(self, step: Callable[[], T]) -> T:
        return self.pool.submit(step).result()


def test_matching_runs_on_the_callers_thread_and_git_on_the_git_thread(
    repo: Path, session: tuple[SessionApplier, Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    applier, s = session
    seen: dict[str, set[threading.Thread]] = {"engine": set(), "git": set()}
    real_edit, real_patch, real_read = (
        edit_plan.apply_edit,
        apply_module.apply_patch,
        (TreeSnapshot.read),
    )

    def engine_edit(*args: Any) -> Any:
        seen["engine"].add(threading.current_thread())
        return real_edit(*args)

    def engine_patch(*args: Any) -> Any:
        seen["engine"].add(threading.current_thread())
        return real_patch(*args)

    def read(self: TreeSnapshot, path: str) -> bytes | None:
        seen["git"].add(threading.current_thread())
        return real_read(self, path)

    monkeypatch.setattr(edit_plan, "apply_edit", engine_edit)
    monkeypatch.setattr(apply_module, "apply_patch", engine_patch)
    monkeypatch.setattr(TreeSnapshot, "read", read)
    git_thread = GitThread()
    write(Path(s.worktree) / "c.txt", "changed by a tool\n")  # an external commit too
    first = apply(applier, edit("a.py", "'Hello, ' + name", "'Hi, ' + name"), on_worker=git_thread)
    body = "*** Update File: b.py\n@@\n-VALUE = 1\n+VALUE = 2\n*** Add File: new.txt\n+new\n"
    second = apply(applier, patch(body), on_worker=git_thread)
    assert first["status"] == second["status"] == "applied"
    assert [c["source"] for c in first["commits"]] == ["external", "agent"]
    assert seen == {"engine": {threading.current_thread()}, "git": {git_thread.thread}}
    assert git(repo, "show", f"{BRANCH}:b.py") == "VALUE = 2\n"
    assert porcelain(Path(s.worktree)) == ""
    assert_fsck_clean(repo)


class CountedGitThread(GitThread):
    def __init__(self) -> None:
        super().__init__()
        self.trips = 0

    def __call__(self, step: Callable[[], T]) -> T:
        self.trips += 1
        return super().__call__(step)


def test_an_edit_goes_to_the_git_thread_to_prepare_and_to_land_only(
    repo: Path, session: tuple[SessionApplier, Session]
) -> None:
    """Each trip from a planning thread to the git thread is two thread switches: the
    request's own files are read while preparing, not asked for one by one."""
    applier, s = session
    git_thread = CountedGitThread()
    done = apply(applier, edit("a.py", "'Hello, ' + name", "'Hi, ' + name"), on_worker=git_thread)
    assert done["status"] == "applied" and git_thread.trips == 2
    body = "*** Update File: b.py\n@@\n-VALUE = 1\n+VALUE = 2\n*** Add File: new.txt\n+new\n"
    git_thread.trips = 0
    assert apply(applier, patch(body), on_worker=git_thread)["status"] == "applied"
    assert git_thread.trips == 2
    assert git(repo, "show", f"{BRANCH}:new.txt") == "new\n"
    assert git(repo, "show", f"{BRANCH}:b.py") == "VALUE = 2\n"
    git_thread.trips = 0
    missing = apply(applier, edit("nope.py", "a", "b"), on_worker=git_thread)
    assert missing["status"] != "applied" and git_thread.trips == 1  # nothing to land
    assert porcelain(Path(s.worktree)) == ""


def test_a_branch_moved_while_planning_leaves_nothing_written(
    repo: Path, session: tuple[SessionApplier, Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    applier, s = session
    wt = Path(s.worktree)
    real_edit = edit_plan.apply_edit
    moved: list[str] = []

    def meanwhile(*args: Any) -> Any:
        # Another process commits on the session's branch while the edit is matched.
        git(wt, "commit", "-q", "--allow-empty", "-m", "elsewhere")
        moved.append(rev(repo, BRANCH))
        return real_edit(*args)

    monkeypatch.setattr(edit_plan, "apply_edit", meanwhile)
    notes_before = git(repo, "for-each-ref", "refs/notes/")
    with pytest.raises(RefMoved):
        apply(applier, edit("a.py", "'Hello, ' + name", "'Hi, ' + name"), on_worker=GitThread())
    assert rev(repo, BRANCH) == moved[0]
    assert git(repo, "for-each-ref", "refs/notes/") == notes_before
    assert "'Hello, ' + name" in (wt / "a.py").read_text()
    assert not applier.publisher.pending()
    monkeypatch.setattr(edit_plan, "apply_edit", real_edit)
    again = apply(applier, edit("a.py", "'Hello, ' + name", "'Hi, ' + name"))
    assert again["status"] == "applied"


# --- notes -------------------------------------------------------------------------------


def test_secrets_in_matched_text_are_redacted_in_the_preview(repo: Path) -> None:
    write(
        repo / "settings.py",
        'DEBUG = True\npassword = "hunter2"\nTOKEN = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"\n',
    )
    git(repo, "add", "settings.py")
    git(repo, "commit", "-q", "-m", "settings")
    applier, _s = open_applier(repo, "sec")
    old = 'password = "hunter2"\nTOKEN = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"\n'
    result = apply(applier, edit("settings.py", old, 'password = os.environ["PW"]\n'))
    assert result["status"] == "applied"
    commit = result["commits"][0]["commit"]

    raw = git(repo, "notes", "--ref=redline", "show", commit)
    assert "hunter2" not in raw
    assert "ghp_abcdefghijklmnopqrstuvwxyz" not in raw
    [op] = json.loads(raw)["operations"]
    assert op["matched_preview"].startswith('password = "[REDACTED]"')
    assert "[REDACTED]" in op["matched_preview"].splitlines()[1]
    assert op["matched_sha256"] == hashlib.sha256(old.encode()).hexdigest()
    assert result["matched_text"] == old  # the caller itself still sees the real text
    # nothing in the notes history carries the secret either
    assert git(repo, "grep", "-c", "hunter2", "refs/notes/redline", check=False) == ""


def test_a_long_preview_is_bounded(repo: Path) -> None:
    write(repo / "long.txt", "".join(f"line {i} of a long block\n" for i in range(100)))
    git(repo, "add", "long.txt")
    git(repo, "commit", "-q", "-m", "long")
    applier, _s = open_applier(repo, "long")
    old = (repo / "long.txt").read_text()
    result = apply(applier, edit("long.txt", old, "short\n"))
    [op] = note_of(repo, result["commits"][0]["commit"])["operations"]
    assert len(op["matched_preview"]) < 300
    assert op["matched_preview"].endswith(f"… ({len(old)} characters)")
    assert op["matched_sha256"] == hashlib.sha256(old.encode()).hexdigest()


def test_hundreds_of_notes_are_all_readable_by_git(repo: Path) -> None:
    count = 300
    write(repo / "many.py", "".join(f"v{i:03d} = 0\n" for i in range(count)))
    git(repo, "add", "many.py")
    git(repo, "commit", "-q", "-m", "many")
    applier, s = open_applier(repo, "many")
    edits = []
    for i in range(count):
        result = apply(applier, edit("many.py", f"v{i:03d} = 0\n", f"v{i:03d} = 1\n"))
        assert result["status"] == "applied", result
        [info] = result["commits"]
        edits.append((info["commit"], info["edit"]))

    assert branch_commits(repo, "redline/many", s.base) == [c for c, _e in edits]
    listed = git(repo, "notes", "--ref=redline", "list").splitlines()
    assert len(listed) == count
    assert {line.split()[1] for line in listed} == {c for c, _e in edits}
    # git reads every note (fanned-out notes tree included)
    log = git(repo, "log", "--notes=redline", "--format=%H%x01%N%x02", f"{s.base}..redline/many")
    read = {}
    for record in log.split("\x02"):
        if record.strip():
            commit, note = record.strip().split("\x01")
            read[commit] = json.loads(note)["edit"]
    assert read == dict(edits)
    top = git(repo, "ls-tree", "refs/notes/redline").splitlines()
    assert top and all(line.split()[1] == "tree" for line in top)
    # fanned out by two characters, beside the folder of the requests as sent (gitops.sent)
    names = [line.split()[3] for line in top]
    assert names[-1] == "requests" and all(len(name) == 2 for name in names[:-1])
    requests = git(repo, "ls-tree", "-r", "--name-only", "refs/notes/redline", "requests")
    assert len(requests.split()) == count  # one per request: each edit's differs
    assert (Path(s.worktree) / "many.py").read_text() == "".join(
        f"v{i:03d} = 1\n" for i in range(count)
    )
    assert_fsck_clean(repo)


def test_the_note_follows_an_amended_commit(
    repo: Path, session: tuple[SessionApplier, Session]
) -> None:
    applier, s = session
    wt = Path(s.worktree)
    result = apply(applier, edit("b.py", "VALUE = 1", "VALUE = 2"))
    old = result["commits"][0]["commit"]
    note = note_of(repo, old)

    git(wt, "commit", "-q", "--amend", "-m", "amended message\n\nRedline-Edit: " + note["edit"])
    new = rev(wt, "HEAD")
    assert new != old
    assert rev(repo, BRANCH) == new
    assert note_of(repo, new) == note  # notes.rewriteRef carried it along

    # redline goes on from the amended tip
    again = apply(applier, edit("b.py", "VALUE = 2", "VALUE = 3"))
    assert again["status"] == "applied"
    [info] = again["commits"]
    assert rev(repo, f"{info['commit']}^") == new
    assert note_of(repo, info["commit"])["edit"] == info["edit"]
    assert porcelain(wt) == ""
    assert_fsck_clean(repo)


def test_notes_of_several_sessions_share_the_ledger(repo: Path) -> None:
    first, s1 = open_applier(repo, "one")
    second, s2 = open_applier(repo, "two")
    r1 = apply(first, edit("b.py", "VALUE = 1", "VALUE = 10"))
    r2 = apply(second, edit("b.py", "VALUE = 1", "VALUE = 20"))
    c1, c2 = r1["commits"][0]["commit"], r2["commits"][0]["commit"]
    assert note_of(repo, c1)["session"] == "one"
    assert note_of(repo, c2)["session"] == "two"
    assert (Path(s1.worktree) / "b.py").read_text() == "VALUE = 10\n"
    assert (Path(s2.worktree) / "b.py").read_text() == "VALUE = 20\n"
    assert len(git(repo, "notes", "--ref=redline", "list").splitlines()) == 2


def test_external_changes_seen_by_a_dry_run_are_committed_by_the_next_request(
    repo: Path, session: tuple[SessionApplier, Session]
) -> None:
    applier, sess = session
    wt = Path(sess.worktree)
    apply(applier, edit("b.py", "VALUE = 1", "VALUE = 2"))  # the first request walks everything
    applier.dirty.watched = True  # from here on only the watcher's paths are looked at
    (wt / "c.txt").write_text("alpha\nBETA\ngamma\n")
    applier.dirty.add("c.txt")
    dry = apply(applier, edit("b.py", "VALUE = 2", "VALUE = 3"), dry_run=True)
    assert dry["status"] == "applied" and dry["commits"] == []
    # The watcher will not report c.txt again; the next request must still commit it.
    result = apply(applier, edit("a.py", "Hello", "Hi"))
    assert [c["source"] for c in result["commits"]] == ["external", "agent"]
    assert result["commits"][0]["paths"] == ["c.txt"]
    assert porcelain(wt) == ""


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_worktree_files_are_written_with_the_modes_git_gives_under_the_umask(
    repo: Path, umask: int
) -> None:
    old = os.umask(umask)
    try:
        applier, s = open_applier(repo)
        wt = Path(s.worktree)
        result = apply(
            applier,
            patch(
                "*** Add File: new.txt\n+new\n*** Update File: tool.sh\n@@\n-echo one\n+echo two\n"
            ),
        )
    finally:
        os.umask(old)
    assert result["status"] == "applied", result
    assert stat.S_IMODE((wt / "new.txt").stat().st_mode) == 0o666 & ~umask
    assert stat.S_IMODE((wt / "tool.sh").stat().st_mode) == 0o777 & ~umask
    assert porcelain(wt) == ""


# --- the verdict: which policy judges, and the guard's own files --------------------------------

GUARDED_POLICY = '[[guard.protect]]\npaths = ["migrations/**"]\nrequire = "exact"\n'
UNGUARDED_POLICY = '[[guard.protect]]\npaths = ["docs/**"]\nrequire = "exact"\n'
GUARD_FILE_FLAG = {
    "rule": "default (guard files: policy, hooks, CI)",
    "path": ".redline.toml",
    "reason": "edits to the guard's own files (its policy, hook configuration and CI definitions) need a person's approval",
}
SQL = "migrations/001.sql"
SQL_TEXT = "CREATE TABLE users (\n    id INTEGER PRIMARY KEY,\n    email TEXT\n);\n"
SQL_FUZZY = edit(
    SQL,
    "    id INTEGER PRIMARY KY,\n    email TEXT\n",
    "    id INTEGER PRIMARY KY,\n    email TEXT UNIQUE\n",
)


def guarded_applier(tmp_path: Path) -> tuple[Path, SessionApplier]:
    from redline.settings.policy import policy_from_tree

    repo = make_repo(
        tmp_path / "guarded",
        {".redline.toml": GUARDED_POLICY, SQL: SQL_TEXT, "docs/a.md": "# Title\n\nSome text.\n"},
    )
    git_repo, layout = main_repository(repo)
    session = open_session(git_repo, layout, "s", None)
    applier = SessionApplier(
        git_repo, layout, session, policy_for=lambda tree: policy_from_tree(git_repo, tree)
    )
    return repo, applier


def test_an_exact_edit_of_the_policy_is_flagged_and_cannot_unprotect_a_path(
    tmp_path: Path,
) -> None:
    repo, applier = guarded_applier(tmp_path)
    unprotect = apply(applier, edit(".redline.toml", GUARDED_POLICY, UNGUARDED_POLICY))
    assert unprotect["match_type"] == "exact"
    assert unprotect["flags"] == [GUARD_FILE_FLAG]
    assert note_of(repo, unprotect["commits"][0]["commit"])["policy"]["verdict"] == "flagged"
    # the session's policy no longer names migrations/**; the base's still judges
    fuzzy = apply(applier, SQL_FUZZY)
    assert fuzzy["match_type"] == "fuzzy"
    assert fuzzy["flags"] == [
        {
            "rule": "guard.protect[1] (migrations/**)",
            "path": SQL,
            "reason": "match_type fuzzy is not one of: exact",
        }
    ]
    # a rule the session's policy adds applies too, named for where it comes from
    docs = apply(
        applier, edit("docs/a.md", "# Titel\n\nSome text.\n", "# Titel\n\nSome text here.\n")
    )
    assert docs["status"] == "applied"
    assert docs["flags"] == [
        {
            "rule": "guard.protect[1] (docs/**) of .redline.toml in the session",
            "path": "docs/a.md",
            "reason": f"match_type {docs['match_type']} is not one of: exact",
        }
    ]


def test_changes_to_the_guards_files_made_with_other_tools_are_flagged(tmp_path: Path) -> None:
    repo, applier = guarded_applier(tmp_path)
    wt = Path(applier.session.worktree)
    (wt / ".redline.toml").write_text(UNGUARDED_POLICY)
    write(wt / "notes.txt", "mine\n")
    result = apply(applier, SQL_FUZZY)
    external, agent = result["commits"]
    assert external["paths"] == [".redline.toml", "notes.txt"]
    note = note_of(repo, external["commit"])
    assert note["policy"]["verdict"] == "flagged"
    assert note["policy"]["violations"] == [GUARD_FILE_FLAG]
    assert [op["op"] for op in note["operations"]] == ["write", "write"]
    # the agent's edit is still judged by the policy it found, not the one it wrote
    assert result["flags"][0]["rule"] == "guard.protect[1] (migrations/**)"
    # the edit's result reports its own flags; the external commit's are in its note
    assert all(flag["path"] == SQL for flag in result["flags"])
    assert note_of(repo, agent["commit"])["policy"]["verdict"] == "flagged"


def test_reject_refuses_every_agent_edit_of_the_policy(tmp_path: Path) -> None:
    from redline.settings.policy import policy_from_tree

    policy = '[guard]\naction = "reject"\n'
    repo = make_repo(tmp_path / "strict", {".redline.toml": policy})
    git_repo, layout = main_repository(repo)
    session = open_session(git_repo, layout, "s", None)
    applier = SessionApplier(
        git_repo, layout, session, policy_for=lambda tree: policy_from_tree(git_repo, tree)
    )
    result = apply(applier, edit(".redline.toml", '"reject"', '"review"'))
    assert result["status"] == "rejected"
    assert result["error"] == (
        "rejected by guard rule default (guard files: policy, hooks, CI): edits to the guard's "
        "own files (its policy, hook configuration and CI definitions) need a person's approval "
        "at .redline.toml. No agent edit passes there, exact or not: ask a person to make this "
        "change"
    )
    assert branch_commits(repo, BRANCH, session.base) == []


def test_an_edit_of_a_missing_file_advises_the_write_tool(repo: Path) -> None:
    applier, _s = open_applier(repo, "create")
    result = apply(applier, edit("src/new.py", "x", "y"))
    assert (result["status"], result["error"]) == (
        "invalid",
        "'src/new.py' is not in the session; name a file of the session's worktree "
        "(to create one, use the write tool)",
    )
