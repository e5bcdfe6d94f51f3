"""The paths a change touches and the files it adds, as the guard reads them
(hooks.guard.changed_paths, gitops.follow.added_paths, both from gitops.tree_diff): the
same as libgit2's tree-to-tree diff and ``git diff-tree`` name, whatever the change —
while reading only the folders the two trees do not share."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pygit2
import pytest

from redline.gitops.follow import added_paths
from redline.hooks.guard import changed_paths
from support.repos import git, make_repo, write

BASE = {
    "top.txt": "top\n",
    "a/one.py": "one\n",
    "a/b/two.py": "two\n",
    "a/b/c/three.py": "three\n",
    "d/four.txt": "four\n",
    "e/five.txt": "five\n",
}


def _modify(repo: Path) -> None:
    write(repo / "a" / "b" / "c" / "three.py", "THREE\n")


def _add_nested(repo: Path) -> None:
    write(repo / "new" / "deep" / "er" / "x.py", "x\n")
    write(repo / "a" / "b" / "added.py", "added\n")


def _delete_folder(repo: Path) -> None:
    git(repo, "rm", "-rq", "a/b")


def _file_to_folder(repo: Path) -> None:
    git(repo, "rm", "-q", "top.txt")
    write(repo / "top.txt" / "inside.txt", "now a folder\n")
    write(repo / "top.txt" / "sub" / "more.txt", "more\n")


def _folder_to_file(repo: Path) -> None:
    git(repo, "rm", "-rq", "d")
    write(repo / "d", "now a file\n")


def _mode(repo: Path) -> None:
    os.chmod(repo / "a" / "one.py", 0o755)


def _kind(repo: Path) -> None:
    """A file becomes a link (libgit2: deleted, then added), a link a file."""
    os.unlink(repo / "d" / "four.txt")
    os.symlink("../top.txt", repo / "d" / "four.txt")


def _symlink(repo: Path) -> None:
    os.symlink("one.py", repo / "a" / "link")
    os.unlink(repo / "e" / "five.txt")
    os.symlink("../top.txt", repo / "e" / "five.txt")


def _gitlink(repo: Path) -> None:
    """A submodule's entry (its folder is not there: staged after ``git add -A``)."""
    sha = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{sha},a/b/sub")


def _rename(repo: Path) -> None:
    git(repo, "mv", "d/four.txt", "a/b/c/four.txt")


def _same_content_elsewhere(repo: Path) -> None:
    """A folder whose content equals another's: same tree id, at a new path."""
    write(repo / "copy" / "five.txt", "five\n")
    write(repo / "e" / "five.txt", "five\n")


def _nothing(repo: Path) -> None:
    pass


CHANGES: dict[str, Callable[[Path], None]] = {
    "modify deep": _modify,
    "add nested": _add_nested,
    "delete a folder": _delete_folder,
    "file to folder": _file_to_folder,
    "folder to file": _folder_to_file,
    "mode": _mode,
    "symlink": _symlink,
    "file to link": _kind,
    "rename": _rename,
    "same content elsewhere": _same_content_elsewhere,
    "nothing": _nothing,
}
STAGED_AFTER = {"gitlink": _gitlink}


@pytest.mark.parametrize("change", [*CHANGES, *STAGED_AFTER], ids=str)
def test_the_paths_are_those_libgit2_and_git_name(change: str, tmp_path: Path) -> None:
    path = make_repo(tmp_path / "repo", BASE)
    CHANGES.get(change, _nothing)(path)
    git(path, "add", "-A")
    STAGED_AFTER.get(change, _nothing)(path)
    new_id = git(path, "write-tree").strip()
    repo = pygit2.Repository(str(path))
    parent = repo.head.peel(pygit2.Commit).tree
    new = repo[new_id]
    assert isinstance(new, pygit2.Tree)

    found = changed_paths(repo, parent, new)

    deltas = list(parent.diff_to_tree(new).deltas)
    libgit2 = {d.old_file.path for d in deltas} | {d.new_file.path for d in deltas}
    by_git = set(
        git(
            path, "diff-tree", "-r", "--no-renames", "--name-only", str(parent.id), new_id
        ).splitlines()
    )
    assert found == libgit2 == by_git
    added = [
        (d.new_file.path, d.new_file.id)
        for d in deltas
        if d.status == pygit2.enums.DeltaStatus.ADDED
    ]
    assert added_paths(new, parent) == added
    assert (found == set()) == (change == "nothing")
