"""gitops.trees: a tree with changes applied, checked by the git binary.

Paths may nest two thousand folders (4,096 bytes allow it): building their
trees must not depend on Python's recursion limit.
"""

from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path

import pygit2

from gitmode_fixtures import git
from redline.gitops import notes
from redline.gitops.repo import signature
from redline.gitops.trees import FILE, Entry, child_named, is_tree, lookup, with_entries


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


def test_child_named_finds_files_and_folders_in_gits_order(repo: Path) -> None:
    # '.' sorts before '/', so the folder 'a' comes after the file 'a.txt' and before
    # 'a0': a search that compared the bare name would miss one of them.
    names = ["a.txt", "a/inner.txt", "a0", "a-b", "b", "ä.txt"]
    tree_id = apply(repo, {name: name.encode() + b"\n" for name in names}, base="HEAD^{tree}")
    git_repo = pygit2.Repository(str(repo))
    tree = git_repo[pygit2.Oid(hex=tree_id)]
    assert isinstance(tree, pygit2.Tree)
    for name in ["a.txt", "a", "a0", "a-b", "b", "ä.txt", "docs"]:
        found = child_named(tree, name)
        assert found is not None and found.name == name, name
    assert child_named(tree, "a/") is None and child_named(tree, "c") is None
    assert child_named(tree, "inner.txt") is None  # only direct children


def test_looking_up_paths_keeps_no_string_per_lookup(repo: Path) -> None:
    """pygit2 keeps a reference to every path string it is given: lookups of fresh
    strings (as each request's JSON makes them) must not grow the daemon."""
    git_repo = pygit2.Repository(str(repo))
    tree = git_repo.revparse_single("HEAD^{tree}")
    assert isinstance(tree, pygit2.Tree)
    commits = [pygit2.Oid(hex=f"{n + 1:040x}") for n in range(2000)]
    notes.missing(git_repo, {c: c for c in commits[:10]}, None)  # warm
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for _ in range(2000):
        path = "".join(["docs/", "readme.md"])  # a new object each time
        assert lookup(git_repo, tree, path) is not None
        assert is_tree(tree, "".join(["do", "cs"]))
    blob = git_repo.create_blob(b"{}")
    fanned = notes.prepare(git_repo, dict.fromkeys(commits[:3], blob), signature(git_repo), None)
    assert notes.missing(git_repo, {c: c for c in commits}, fanned).keys() == set(commits[3:])
    gc.collect()
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert grown < 50_000, f"{grown} bytes kept by 8,000 lookups"


def test_looking_up_paths_no_tree_holds_keeps_nothing(repo: Path) -> None:
    """The watcher reports files that come and go (each request's temporary file, under
    a new name every time): looking them up must not keep a string per name."""
    git_repo = pygit2.Repository(str(repo))
    tree = git_repo.revparse_single("HEAD^{tree}")
    assert isinstance(tree, pygit2.Tree)
    lookup(git_repo, tree, "docs/readme.md")  # warm
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for n in range(2000):
        assert lookup(git_repo, tree, f"docs/.readme.md.{n:08x}.redline-tmp") is None
        assert lookup(git_repo, tree, f"new-{n}/file.py") is None
        assert lookup(git_repo, tree, f"a.py/under-a-file-{n}") is None
    assert lookup(git_repo, tree, "".join(["docs/", "readme.md"])) is not None
    gc.collect()
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert grown < 50_000, f"{grown} bytes kept by 6,000 lookups of paths no tree holds"
