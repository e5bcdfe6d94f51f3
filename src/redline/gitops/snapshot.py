"""What changed in a worktree since its branch tip, and the tip as the engine sees it."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pygit2

from redline.engine.errors import RequestError
from redline.engine.paths import NAME_MAX, PATH_MAX, is_git_name, names_git
from redline.fsops.confine import relative_to_root
from redline.gitops.trees import TREE, Entry, entry_at, is_tree, lookup
from redline.gitops.worktree import check_path, entry_on_disk

# A file the watcher makes and removes in a worktree's top folder before each
# snapshot (daemon.watcher): never a change of the worktree, even when a crash left it.
BARRIER = ".redline-barrier-"


def is_barrier(path: str) -> bool:
    return path.startswith(BARRIER) and "/" not in path


@dataclass
class DirtyPaths:
    """Paths the file watcher saw change; ``overflowed`` forces a full walk.

    Until a watcher is attached (``watched``), every snapshot walks the worktree.
    """

    paths: set[str] = field(default_factory=set)
    overflowed: bool = True  # nothing is known until the first full walk
    watched: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)
    # Set by the watcher: returns once every change made before the call has been
    # reported (events come on the watcher's thread, a moment after the write).
    sync: Callable[[], None] | None = field(default=None, repr=False)

    def add(self, path: str) -> None:
        with self.lock:
            self.paths.add(path)

    def overflow(self) -> None:
        with self.lock:
            self.overflowed = True

    def take(self) -> set[str] | None:
        """The paths seen changed since the last take (None: walk everything)."""
        if self.sync is not None and self.watched:
            self.sync()  # a file written just before this request is among them
        with self.lock:
            if self.overflowed or not self.watched:
                self.overflowed = False
                self.paths.clear()
                return None
            taken, self.paths = self.paths, set()
            return taken


class TreeSnapshot:
    """The engine's view of a session: files as committed in ``tree``.

    Paths are checked against the worktree first (the one path policy: no '..',
    nothing in a .git or git directory, no symbolic links), so a patch cannot
    reach outside it.
    """

    def __init__(self, repo: pygit2.Repository, tree: pygit2.Tree, root: Path) -> None:
        self.repo = repo
        self.tree = tree
        self.root = root

    def relative(self, path: str) -> str:
        return relative_to_root(self.root, path)

    def read(self, path: str) -> bytes | None:
        check_path(self.root, path)
        entry = lookup(self.repo, self.tree, path)
        if entry is None:
            return None
        blob = self.repo[entry.oid]
        assert isinstance(blob, pygit2.Blob)
        return blob.data

    def is_dir(self, path: str) -> bool:
        check_path(self.root, path)  # the planner asks this first: refuse before anything
        return is_tree(self.tree, path)

    def mode(self, path: str) -> int | None:
        entry = lookup(self.repo, self.tree, path)
        return entry.mode if entry is not None else None

    def known(self, paths: Iterable[str]) -> dict[str, Known]:
        """What :meth:`read`, :meth:`mode` and :meth:`is_dir` answer for each of ``paths``,
        read now (a path they refuse, or cannot check, is left out: asked again, it is
        refused then, as it would have been)."""
        out: dict[str, Known] = {}
        for path in paths:
            try:
                data = self.read(path)  # the path checked, as is_dir would check it
            except (RequestError, OSError):
                continue
            folder = data is None and is_tree(self.tree, path)
            out[path] = Known(data, self.mode(path), folder)
        return out


@dataclass(frozen=True)
class Known:
    """A path of a snapshot, read ahead: its bytes, mode and whether it is a folder."""

    data: bytes | None
    mode: int | None
    folder: bool


def changed_paths(
    repo: pygit2.Repository,
    worktree: pygit2.Repository,
    tree: pygit2.Tree,
    candidates: Iterable[str] | None,
) -> dict[str, Entry | None]:
    """Files whose content or mode on disk differs from ``tree`` (None: deleted).

    ``candidates`` are paths the file watcher saw change; None means a full
    walk (``git status`` against the worktree's index).

    What no request could name is left out, as git leaves it out: a path
    through a ``.git`` in any spelling, a name over NAME_MAX bytes or a path
    over PATH_MAX bytes (another tool may make them in the worktree; they
    must not make every request fail).
    """
    root = Path(worktree.workdir)
    paths = (
        _from_status(worktree, tree, root)
        if candidates is None
        else _expand(worktree, tree, root, candidates)
    )
    changes: dict[str, Entry | None] = {}
    for path in sorted(paths):
        if names_git(path) or not _fits(path) or is_barrier(path):
            continue  # '.git.', 'git~1', too long: git would not add them either
        committed = lookup(repo, tree, path)
        on_disk = entry_on_disk(repo, root, path, committed)
        if on_disk is not None and committed is None and _ignored(worktree, path):
            continue
        if on_disk != committed:
            changes[path] = on_disk
    return changes


def _from_status(worktree: pygit2.Repository, tree: pygit2.Tree, root: Path) -> set[str]:
    try:
        return set(worktree.status())
    except pygit2.GitError:
        # libgit2 gives up on some worktrees git itself takes ("directory nesting
        # too deep (100)"): walk it here instead, every file against the tree.
        with os.scandir(root) as entries:
            top = {entry.name for entry in entries}
        return _expand(worktree, tree, root, top | {entry.name for entry in tree if entry.name})


def _expand(
    worktree: pygit2.Repository, tree: pygit2.Tree, root: Path, candidates: Iterable[str]
) -> set[str]:
    out: set[str] = set()
    walked: set[str] = set()  # folders a walk went through: their files are in ``out``
    # Shortest first, so that a folder is walked once, not once for each folder above
    # it that the watcher named too (quadratic in a deep tree made all at once).
    for path in sorted(candidates, key=len):
        if not path or path in walked or names_git(path) or not _fits(path):
            continue
        full = root / path
        if full.is_dir() and not full.is_symlink():
            out.update(_files_under(root, path, walked))
        else:
            out.add(path)
        if is_tree(tree, path):
            out.update(_tree_files(worktree, tree, path))
    return out


def _files_under(root: Path, folder: str, walked: set[str]) -> list[str]:
    """The paths of everything but folders under ``folder``, at any depth (no recursion).

    Not entered: ``.git`` in any spelling, and what is too long to name (see
    changed_paths). A folder that vanishes or cannot be read meanwhile is
    skipped. Each folder entered is added to ``walked``.
    """
    found: list[str] = []
    pending = [folder]
    while pending:
        current = pending.pop()
        walked.add(current)
        try:
            entries = os.scandir(root / current)
        except OSError:
            continue
        with entries:
            for entry in entries:
                path = f"{current}/{entry.name}"
                if is_git_name(entry.name) or not _fits(path):
                    continue
                try:
                    is_folder = entry.is_dir(follow_symlinks=False)
                except OSError:
                    continue
                (pending if is_folder else found).append(path)
    return found


def _fits(path: str) -> bool:
    """Whether ``path`` is within the limits every request's path is held to."""
    if len(path) * 4 <= NAME_MAX:  # UTF-8 takes at most 4 bytes a character
        return True
    return len(path.encode("utf-8", "surrogateescape")) <= PATH_MAX and all(
        len(part.encode("utf-8", "surrogateescape")) <= NAME_MAX for part in path.split("/")
    )


def _tree_files(repo: pygit2.Repository, tree: pygit2.Tree, prefix: str) -> list[str]:
    """Every file of ``tree`` under the folder ``prefix`` (a stack, not recursion)."""
    files: list[str] = []
    found = entry_at(tree, prefix)
    assert found is not None
    top = repo[found.id]
    assert isinstance(top, pygit2.Tree)
    pending = [(prefix, top)]
    while pending:
        folder, sub = pending.pop()
        for entry in sub:
            path = f"{folder}/{entry.name}"
            if entry.filemode == TREE:
                inner = repo[entry.id]
                assert isinstance(inner, pygit2.Tree)
                pending.append((path, inner))
            else:
                files.append(path)
    return files


def _ignored(worktree: pygit2.Repository, path: str) -> bool:
    try:
        return bool(worktree.path_is_ignored(path))
    except pygit2.GitError:
        return False
