"""Moving refs by git's loose-ref protocol: a true compare-and-swap that git agrees with."""

from __future__ import annotations

import threading
from pathlib import Path

import pygit2
import pytest

from gitmode_fixtures import assert_fsck_clean, git, rev
from redline.fsops.atomic import LockHeld
from redline.gitops import refs
from redline.gitops.errors import GitModeError, RefMoved

BRANCH = "refs/heads/redline/topic"


def _ids(repo: Path) -> tuple[pygit2.Repository, pygit2.Oid, pygit2.Oid]:
    """A handle on ``repo`` and two commits to move refs between (the second on the first)."""
    git(repo, "commit", "-q", "--allow-empty", "-m", "second")
    handle = pygit2.Repository(str(repo))
    second = handle.head.target
    return handle, handle[second].parents[0].id, second


def test_a_ref_is_created_then_moved_and_git_reads_it_and_its_reflog(repo: Path) -> None:
    handle, first, second = _ids(repo)

    refs.update(handle, BRANCH, None, first, "redline: edit")
    refs.update(handle, BRANCH, first, second, "redline: edit")

    assert rev(repo, "redline/topic") == str(second)
    log = git(repo, "reflog", "show", "--format=%H %gs", "redline/topic").splitlines()
    assert log == [f"{second} redline: edit", f"{first} redline: edit"]
    raw = (repo / ".git/logs" / BRANCH).read_text().splitlines()
    assert raw[0].startswith(f"{'0' * 40} {first} ") and raw[1].startswith(f"{first} {second} ")
    assert not (repo / ".git" / f"{BRANCH}.lock").exists()
    assert_fsck_clean(repo)


def test_the_swap_fails_when_the_ref_is_not_what_was_read(repo: Path) -> None:
    handle, first, second = _ids(repo)
    refs.update(handle, BRANCH, None, first, "redline: edit")

    with pytest.raises(RefMoved):
        refs.update(handle, BRANCH, None, second, "redline: edit")  # it exists already
    git(repo, "update-ref", BRANCH, str(second))  # another process moved it
    with pytest.raises(RefMoved):
        refs.update(handle, BRANCH, first, first, "redline: edit")

    assert rev(repo, "redline/topic") == str(second)
    assert not (repo / ".git" / f"{BRANCH}.lock").exists()


def test_a_lock_someone_else_holds_is_respected(repo: Path) -> None:
    handle, first, second = _ids(repo)
    refs.update(handle, BRANCH, None, first, "redline: edit")
    lock = repo / ".git" / f"{BRANCH}.lock"
    lock.write_text("git is moving it\n")

    with pytest.raises(LockHeld) as held:
        refs.update(handle, BRANCH, first, second, "redline: edit", wait=0.05)

    # git's own wording: which file, that another process may hold it, how to remove it.
    message = str(held.value)
    assert f"unable to create '{lock}': file exists" in message
    assert "Another git process seems to be running" in message
    assert f"rm '{lock}'" in message and "retry the request" not in message
    assert lock.read_text() == "git is moving it\n"  # not ours to remove
    assert rev(repo, "redline/topic") == str(first)


def test_a_packed_ref_is_compared_and_then_overridden_by_a_loose_one(repo: Path) -> None:
    handle, first, second = _ids(repo)
    refs.update(handle, BRANCH, None, first, "redline: edit")
    git(repo, "pack-refs", "--all", "--prune")
    assert not (repo / ".git" / BRANCH).exists()

    with pytest.raises(RefMoved):
        refs.update(handle, BRANCH, None, second, "redline: edit")
    refs.update(handle, BRANCH, first, second, "redline: edit")

    assert rev(repo, "redline/topic") == str(second)
    assert_fsck_clean(repo)


def test_a_ref_is_never_pointed_at_a_missing_object(repo: Path) -> None:
    handle, _, _ = _ids(repo)
    missing = pygit2.Oid(hex="1" * 40)

    with pytest.raises(GitModeError, match="no such object"):
        refs.update(handle, BRANCH, None, missing, "redline: edit")

    assert not (repo / ".git" / BRANCH).exists()
    assert git(repo, "for-each-ref", BRANCH) == ""


def test_a_symbolic_ref_is_refused_with_what_to_do(repo: Path) -> None:
    handle, first, second = _ids(repo)
    git(repo, "symbolic-ref", BRANCH, "refs/heads/main")

    with pytest.raises(GitModeError, match="git update-ref --no-deref"):
        refs.update(handle, BRANCH, first, second, "redline: edit")

    assert (repo / ".git" / BRANCH).read_text() == "ref: refs/heads/main\n"


def test_a_file_in_the_way_gives_a_clear_error(repo: Path) -> None:
    handle, first, _ = _ids(repo)
    (repo / ".git/refs/heads/redline").write_text("not a folder\n")

    with pytest.raises(GitModeError, match="no file or folder is in the ref's way"):
        refs.update(handle, BRANCH, None, first, "redline: edit")


def test_reflogs_follow_core_log_all_ref_updates(repo: Path) -> None:
    handle, first, second = _ids(repo)
    git(repo, "config", "core.logAllRefUpdates", "false")
    refs.update(handle, BRANCH, None, first, "redline: edit")
    assert not (repo / ".git/logs" / BRANCH).exists()

    git(repo, "config", "core.logAllRefUpdates", "always")
    refs.update(handle, "refs/redline-test/other", None, first, "redline: test")
    assert (repo / ".git/logs/refs/redline-test/other").is_file()

    git(repo, "config", "core.logAllRefUpdates", "false")
    git(repo, "reflog", "expire", "--expire=all", "--all")
    (repo / ".git/logs" / BRANCH).parent.mkdir(parents=True, exist_ok=True)
    (repo / ".git/logs" / BRANCH).touch()  # an existing reflog is always appended to
    refs.update(handle, BRANCH, first, second, "redline: edit")
    assert len((repo / ".git/logs" / BRANCH).read_text().splitlines()) == 1


def test_a_lock_let_go_of_within_the_wait_is_taken(repo: Path) -> None:
    handle, first, second = _ids(repo)
    refs.update(handle, BRANCH, None, first, "redline: edit")
    lock = repo / ".git" / f"{BRANCH}.lock"
    lock.write_text("git is moving it\n")
    threading.Timer(0.1, lock.unlink).start()

    refs.update(handle, BRANCH, first, second, "redline: edit", wait=5.0)

    assert rev(repo, "redline/topic") == str(second)
    assert not lock.exists()
