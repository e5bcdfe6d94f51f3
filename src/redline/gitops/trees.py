"""Building a new tree from an old one and a set of path changes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pygit2

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


def with_entries(
    repo: pygit2.Repository, tree: pygit2.Tree | None, changes: Mapping[str, Entry | None]
) -> pygit2.Oid:
    """Write the tree that is ``tree`` with ``changes`` applied (None deletes a path).

    Only the trees along changed paths are rewritten; empty directories vanish.
    """
    nested: dict[str, dict[str, Entry | None]] = {}
    direct: dict[str, Entry | None] = {}
    for path, entry in changes.items():
        head, _, rest = path.partition("/")
        if rest:
            nested.setdefault(head, {})[rest] = entry
        else:
            direct[head] = entry
    builder = repo.TreeBuilder(tree) if tree is not None else repo.TreeBuilder()
    for name, entry in direct.items():
        if entry is None:
            if builder.get(name) is not None:
                builder.remove(name)
        else:
            builder.insert(name, entry.oid, entry.mode)
    for name, sub_changes in nested.items():
        existing = builder.get(name)
        subtree = None
        if existing is not None and existing.filemode == TREE:
            found = repo[existing.id]
            assert isinstance(found, pygit2.Tree)
            subtree = found
        new_id = with_entries(repo, subtree, sub_changes)
        written = repo[new_id]
        assert isinstance(written, pygit2.Tree)
        if len(written) == 0:
            if existing is not None:
                builder.remove(name)
        else:
            builder.insert(name, new_id, TREE)
    return builder.write()
