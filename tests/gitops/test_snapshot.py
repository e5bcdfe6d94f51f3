"""gitops.snapshot: the external changes of a worktree never include git's own data.

A session's agent may create files with other tools; paths a file system can
take for ``.git`` (``.git.``, ``git~1``, a nested repository's ``.git``) are
not external changes: git would not add them, and libgit2 refuses to put
``.git.`` in a tree at all (the request then failed with an internal error).
"""

from __future__ import annotations

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
