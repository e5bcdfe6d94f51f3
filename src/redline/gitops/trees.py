"""Building a new tree from an old one and a set of path changes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pygit2

from redline.gitops.objects import write_tree

FILE = pygit2.enums.FileMode.BLOB
EXECUTABLE = pygit2.enums.FileMode.BLOB_EXECUTABLE
LINK = pygit2.enums.FileMode.LINK
TREE = pygit2.enums.FileMode.TREE


@dataclass(frozen=True)
class Entry:
    oid: pygit2.Oid
    mode: int


def lookup(repo: pygit2.Repository, tree: pygit2.Tree, path: str) -> Entry | None:
    """The blob entry at ``path`` in ``tree``, or None."""
    try:
        obj = tree[path]
    except KeyError:
        return None
    if obj.filemode == TREE:
        return None
    return Entry(obj.id, obj.filemode)


def is_tree(tree: pygit2.Tree, path: str) -> bool:
    try:
        return bool(tree[path].filemode == TREE)
    except KeyError:
        return False


def update(
    repo: pygit2.Repository, tree: pygit2.Tree | None, changes: Mapping[str, Entry | None]
) -> pygit2.Oid:
    """Write the tree that is ``tree`` with ``changes`` applied (None deletes a path).

    Only the trees along changed paths are rewritten; empty directories vanish.
    """
    return _update(repo, tree, changes)[0]


def _update(
    repo: pygit2.Repository, tree: pygit2.Tree | None, changes: Mapping[str, Entry | None]
) -> tuple[pygit2.Oid, int]:
    """The new tree's id and its number of entries."""
    nested: dict[str, dict[str, Entry | None]] = {}
    direct: dict[str, Entry | None] = {}
    for path, entry in changes.items():
        head, _, rest = path.partition("/")
        if rest:
            nested.setdefault(head, {})[rest] = entry
        else:
            direct[head] = entry
    entries: dict[str, tuple[int, pygit2.Oid]] = {}
    if tree is not None:
        for item in tree:
            raw = item.raw_name or b""  # a tree entry always has a name
            name = raw.decode("utf-8", "surrogateescape")
            entries[name] = (int(item.filemode), item.id)
    for name, entry in direct.items():
        if entry is None:
            entries.pop(name, None)
        else:
            entries[name] = (int(entry.mode), entry.oid)
    for name, sub_changes in nested.items():
        existing = entries.get(name)
        subtree = None
        if existing is not None and existing[0] == TREE:
            found = repo[existing[1]]
            assert isinstance(found, pygit2.Tree)
            subtree = found
        new_id, count = _update(repo, subtree, sub_changes)
        if count:
            entries[name] = (int(TREE), new_id)
        else:
            entries.pop(name, None)
    oid = write_tree(repo, [(name, mode, oid) for name, (mode, oid) in entries.items()])
    return oid, len(entries)
