"""gitops.snapshot: the external changes of a worktree never include git's own data.

A session's agent may create files with other tools; paths a file system can
take for ``.git`` (``.git.``, ``git~1``, a nested repository's ``.git``) are
not external changes: git would not add them, and libgit2 refuses to put
``.git.`` in a tree at all (the request then failed with an internal error).
Nor are paths no request could name (a name over 255 bytes, a path over 4,096);
a folder nested deeper than libgit2's status walks (100) is walked here.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pygit2
import pytest

from gitmode_fixtures import git, write
from redline.gitops.snapshot import changed_paths

GIT_SPELLINGS = [".git./config", "git~1/config", ".GIT/config", "sub/.git ./x", "deep/.git/hooks/x"]


def snapshot_of(repo: Path, candidates: set[str] | None) -> dict[str, object]:
    git_repo = pygit2.Repository(str(repo))
    tree = git_repo.head.peel(pygit2.Commit).tree
    return dict(changed_paths(git_repo, git_repo, tree, candidates))


@pytest.mark.parametrize("walk", ["full", "watched"])
def test_paths_naming_git_are_not_external_changes(repo: Path, walk: str) -> None:
    for path in GIT_SPELLINGS:
        write(repo / path, "x\n")
    write(repo / "notes/todo.txt", "todo\n")
    candidates = None if walk == "full" else {*GIT_SPELLINGS, "deep", "notes/todo.txt"}
    assert list(snapshot_of(repo, candidates)) == ["notes/todo.txt"]


def test_a_nested_repository_is_not_walked(repo: Path) -> None:
    git(repo, "init", "-q", "nested")
    write(repo / "nested" / ".git" / "hooks" / "x", "x\n")
    write(repo / "nested" / "file.txt", "x\n")
    assert "nested/.git/hooks/x" not in snapshot_of(repo, {"nested"})


def nest(root: Path, depth: int) -> str:
    """A file ``depth`` folders named ``d`` below ``root`` (made through folder
    descriptors: its path may be longer than a system call takes); its path."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            inner = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
        os.close(os.open("leaf", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    finally:
        os.close(fd)
    return "d/" * depth + "leaf"


@pytest.mark.parametrize("walk", ["full", "watched"])
def test_a_folder_nested_past_libgit2s_limit_is_walked_without_it(repo: Path, walk: str) -> None:
    # libgit2's status gives up at 100 levels ("directory nesting too deep").
    path = nest(repo, 120)
    write(repo / "notes/todo.txt", "todo\n")
    candidates = None if walk == "full" else {"d", "notes"}
    assert sorted(snapshot_of(repo, candidates)) == [path, "notes/todo.txt"]


@pytest.mark.parametrize("walk", ["full", "watched"])
def test_paths_too_long_to_name_are_not_external_changes(repo: Path, walk: str) -> None:
    deep = nest(repo, 2100)  # 4,204 bytes: over PATH_MAX, no request could name it
    assert len(deep) > 4096
    write(repo / "notes/todo.txt", "todo\n")
    candidates = None if walk == "full" else {"d", "notes/todo.txt", deep, "x" * 300}
    try:
        assert list(snapshot_of(repo, candidates)) == ["notes/todo.txt"]
    finally:
        subprocess.run(["rm", "-rf", str(repo / "d")], check=True)  # rmtree would recurse
