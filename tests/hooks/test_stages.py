"""hooks.stages: the tree of the index git is committing, made by ``git write-tree``.

It must be the tree libgit2 builds from the same index (the default one, or the
temporary one git names in ``GIT_INDEX_FILE`` for ``commit -a`` and
``commit <paths>``), and without git on PATH libgit2 still makes it.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pygit2
import pytest

from gitmode_fixtures import git
from redline.hooks import stages
from support.repos import FILES, make_repo


@pytest.fixture
def staged(tmp_path: Path) -> tuple[pygit2.Repository, Path]:
    path = make_repo(tmp_path / "repo", FILES)
    (path / "a.py").write_text("changed\n")
    (path / "new" / "deep").mkdir(parents=True)
    (path / "new" / "deep" / "file.txt").write_text("new\n")
    git(path, "add", "a.py", "new")
    git(path, "rm", "-q", "c.txt")
    return pygit2.Repository(str(path)), path


def test_the_default_index_gives_the_tree_libgit2_builds(
    staged: tuple[pygit2.Repository, Path],
) -> None:
    repo, path = staged
    tree = stages.index_tree(repo, None)
    assert tree.id == repo.index.write_tree(repo)
    assert "new/deep/file.txt" in git(path, "ls-tree", "-r", "--name-only", str(tree.id))
    assert tree.id != repo.head.peel(pygit2.Commit).tree_id


def test_the_temporary_index_git_names_is_the_one_read(
    staged: tuple[pygit2.Repository, Path], tmp_path: Path
) -> None:
    repo, path = staged
    other = tmp_path / "other-index"
    # Another index, as `git commit <paths>` makes: only b.py changed in it.
    run = {**os.environ, "GIT_INDEX_FILE": str(other)}
    subprocess.run(["git", "-C", str(path), "read-tree", "HEAD"], env=run, check=True)
    (path / "b.py").write_text("VALUE = 2\n")
    subprocess.run(["git", "-C", str(path), "add", "b.py"], env=run, check=True)

    tree = stages.index_tree(repo, other)

    assert tree.id == pygit2.Index(str(other)).write_tree(repo)
    assert tree.id != repo.index.write_tree(repo)


def test_without_git_libgit2_makes_it(
    staged: tuple[pygit2.Repository, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, _ = staged
    monkeypatch.setenv("PATH", "/nonexistent")
    assert stages.index_tree(repo, None).id == repo.index.write_tree(repo)
