"""What changed in a worktree since its branch tip, and the tip as the engine sees it."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pygit2

from redline.gitops.trees import TREE, Entry, is_tree, lookup
from redline.gitops.worktree import check_path, entry_on_disk


@dataclass
class DirtyPaths:
    """Paths the file watcher saw change; ``overflowed`` forces a full walk.

    Until a watcher is attached (``watched``), every snapshot walks the worktree.
    """

    paths: set[str] = field(default_factory=set)
    overflowed: bool = True  # nothing is known until the first full walk
    watched: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, path: str) -> None:
        with self.lock:
            self.paths.add(path)

    def overflow(self) -> None:
        with self.lock:
            self.overflowed = True

    def take(self) -> set[str] | None:
        with self.lock:
            if self.overflowed or not self.watched:
                self.overflowed = False
                self.paths.clear()
                return None
            taken, self.paths = self.paths, set()
            return taken


class TreeSnapshot:
    """The engine's view of a session: files as committed in ``tree``.

    Paths are checked against the worktree first (no '..', nothing under .git,
    no symbolic links), so a patch cannot reach outside it.
    """

    def __init__(self, repo: pygit2.Repository, tree: pygit2.Tree, root: Path) -> None:
        self.repo = repo
        self.tree = tree
        self.root = root

    def read(self, path: str) -> bytes | None:
        check_path(self.root, path)
        entry = lookup(self.repo, self.tree, path)
        if entry is None:
            return None
        blob = self.repo[entry.oid]
        assert isinstance(blob, pygit2.Blob)
        return blob.data

    def is_dir(self, path: str) -> bool:
        return is_tree(self.tree, path)

    def mode(self, path: str) -> int | None:
        entry = lookup(self.repo, self.tree, path)
        return entry.mode if entry is not None else None


def changed_paths(
    repo: pygit2.Repository,
    worktree: pygit2.Repository,
    tree: pygit2.Tree,
    candidates: Iterable[str] | None,
) -> dict[str, Entry | None]:
    """Files whose content or mode on disk differs from ``tree`` (None: deleted).

    ``candidates`` are paths the file watcher saw change; None means a full
    walk (``git status`` against the worktree's index).
    """
    root = Path(worktree.workdir)
    paths = (
        _from_status(worktree) if candidates is None else _expand(worktree, tree, root, candidates)
    )
    changes: dict[str, Entry | None] = {}
    for path in sorted(paths):
        committed = lookup(repo, tree, path)
        on_disk = entry_on_disk(repo, root, path, committed)
        if on_disk is not None and committed is None and _ignored(worktree, path):
            continue
        if on_disk != committed:
            changes[path] = on_disk
    return changes


def _from_status(worktree: pygit2.Repository) -> set[str]:
    return set(worktree.status())


def _expand(
    worktree: pygit2.Repository, tree: pygit2.Tree, root: Path, candidates: Iterable[str]
) -> set[str]:
    out: set[str] = set()
    for path in candidates:
        if not path or path == ".git" or path.startswith(".git/"):
            continue
        full = root / path
        if full.is_dir() and not full.is_symlink():
            for folder, dirs, files in os.walk(full):
                dirs[:] = [d for d in dirs if d != ".git"]
                rel = Path(folder).relative_to(root).as_posix()
                out.update(f"{rel}/{name}" if rel != "." else name for name in files)
        else:
            out.add(path)
        if is_tree(tree, path):
            out.update(_tree_files(worktree, tree, path))
    return out


def _tree_files(repo: pygit2.Repository, tree: pygit2.Tree, prefix: str) -> list[str]:
    sub = repo[tree[prefix].id]
    assert isinstance(sub, pygit2.Tree)
    files = []
    for entry in sub:
        path = f"{prefix}/{entry.name}"
        if entry.filemode == TREE:
            files.extend(_tree_files(repo, tree, path))
        else:
            files.append(path)
    return files


def _ignored(worktree: pygit2.Repository, path: str) -> bool:
    try:
        return bool(worktree.path_is_ignored(path))
    except pygit2.GitError:
        return False
