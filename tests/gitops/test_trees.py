"""gitops.trees: a tree with changes applied, checked by the git binary.

Paths may nest two thousand folders (4,096 bytes allow it): building their
trees must not depend on Python's recursion limit.
"""

from __future__ import annotations

from pathlib import Path

import pygit2

from gitmode_fixtures import git
from redline.gitops.trees import FILE, Entry, with_entries


def apply(repo: Path, changes: dict[str, bytes | None], base: str = "HEAD^{tree}") -> str:
    """The id of the tree ``base`` with ``changes`` (None deletes), written by with_entries."""
    git_repo = pygit2.Repository(str(repo))
    tree = git_repo.revparse_single(base)
    assert isinstance(tree, pygit2.Tree)
    entries = {
        path: None if data is None else Entry(git_repo.create_blob(data), FILE)
        for path, data in changes.items()
    }
    return str(with_entries(git_repo, tree, entries))


def listing(repo: Path, tree: str) -> dict[str, str]:
    out = git(repo, "ls-tree", "-r", "-z", "--format=%(path)%x01%(objectname)", tree)
    pairs = (line.split("\x01") for line in out.split("\0") if line)
    return {path: git(repo, "cat-file", "blob", oid) for path, oid in pairs}


def test_changes_at_every_depth(repo: Path) -> None:
    before = listing(repo, "HEAD^{tree}")
    tree = apply(
        repo,
        {"a.py": b"changed\n", "docs/readme.md": None, "new/deeper/file.txt": b"new\n"},
    )
    after = listing(repo, tree)
    expected = {**before, "a.py": "changed\n", "new/deeper/file.txt": "new\n"}
    del expected["docs/readme.md"]
    assert after == expected  # 'docs' held one file: it is gone with it
    git(repo, "fsck", "--strict", "--no-dangling")


def test_a_path_nested_two_thousand_folders_deep(repo: Path) -> None:
    deep = "d/" * 2000 + "leaf.txt"  # 4,008 bytes
    tree = apply(repo, {deep: b"deep\n"})
    assert listing(repo, tree)[deep] == "deep\n"
    assert listing(repo, apply(repo, {deep: None}, tree)) == listing(repo, "HEAD^{tree}")
