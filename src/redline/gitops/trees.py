"""Building a new tree from an old one and a set of path changes."""

from __future__ import annotations

from collections.abc import Mapping

import pygit2

from redline.engine.records import field, record

FILE = pygit2.enums.FileMode.BLOB
EXECUTABLE = pygit2.enums.FileMode.BLOB_EXECUTABLE
LINK = pygit2.enums.FileMode.LINK
TREE = pygit2.enums.FileMode.TREE


@record(frozen=True)
class Entry:
    oid: pygit2.Oid
    mode: int


# pygit2 (1.21 at least) keeps one reference to every path string it is given to look
# up in a tree or a tree builder (``pgit_borrow_fsdefault`` never releases what
# ``PyOS_FSPath`` returned): a daemon that looks up a new string object per request
# grows without end. So paths are handed over as one canonical object per distinct
# path — what stays is one string per path of the repository, as a set of them would
# be — and names that are new with every commit (notes), or that no tree holds (a
# temporary file the watcher saw come and go, new with every request), are found by
# position instead (:func:`child_named`).
_CANONICAL: dict[str, str] = {}


def held(path: str) -> str:
    """The one string object handed to pygit2 for ``path`` (see above)."""
    return _CANONICAL.setdefault(path, path)


def entry_at(tree: pygit2.Tree, path: str) -> pygit2.Object | None:
    """The entry at ``path`` in ``tree`` (any depth), or None."""
    canonical = _CANONICAL.get(path)
    if canonical is not None:
        try:
            return tree[canonical]
        except KeyError:
            return None
    # A path not looked up before: found name by name, and held only once a tree has it.
    folder, _, name = path.rpartition("/")
    parent = entry_at(tree, folder) if folder else tree
    if not isinstance(parent, pygit2.Tree):
        return None
    found = child_named(parent, name)
    if found is not None:
        held(path)
    return found


def child_named(tree: pygit2.Tree, name: str) -> pygit2.Object | None:
    """The entry called ``name`` directly in ``tree``, found by bisecting its entries
    (git sorts a tree's entries by name, a folder's as if it ended in '/') — for
    names looked up once each, which :func:`held` would keep forever."""
    if not name or "/" in name:
        return None
    key = name.encode("utf-8", "surrogateescape")
    return _bisect(tree, key) or _bisect(tree, key + b"/")  # a file, or else a folder


def _bisect(tree: pygit2.Tree, key: bytes) -> pygit2.Object | None:
    low, high = 0, len(tree)
    while low < high:
        middle = (low + high) // 2
        entry = tree[middle]
        found = _sort_key(entry)
        if found == key:
            return entry
        if found < key:
            low = middle + 1
        else:
            high = middle
    return None


def _sort_key(entry: pygit2.Object) -> bytes:
    name = (entry.name or "").encode("utf-8", "surrogateescape")
    return name + b"/" if entry.filemode == TREE else name


def lookup(repo: pygit2.Repository, tree: pygit2.Tree, path: str) -> Entry | None:
    """The blob entry at ``path`` in ``tree``, or None."""
    obj = entry_at(tree, path)
    if obj is None or obj.filemode == TREE:
        return None
    return Entry(obj.id, obj.filemode)


def is_tree(tree: pygit2.Tree, path: str) -> bool:
    obj = entry_at(tree, path)
    return obj is not None and obj.filemode == TREE


def with_entries(
    repo: pygit2.Repository, tree: pygit2.Tree | None, changes: Mapping[str, Entry | None]
) -> pygit2.Oid:
    """Write the tree that is ``tree`` with ``changes`` applied (None deletes a path).

    Only the trees along changed paths are rewritten; empty directories vanish.
    Folders are visited with a stack of their own, not by recursion: a path may
    nest 2,000 folders (4,096 bytes), past Python's recursion limit.
    """
    root = _Changes()
    for path, entry in changes.items():
        *folders, name = path.split("/")
        node = root
        for folder in folders:
            node = node.nested.setdefault(folder, _Changes())
        node.direct[name] = entry
    stack = [_Level(repo, tree, root)]
    while True:
        level = stack[-1]
        step = next(level.pending, None)
        if step is not None:  # go down into the next changed folder
            name, node = step
            existing = level.builder.get(held(name))
            subtree = None
            if existing is not None and existing.filemode == TREE:
                found = repo[existing.id]
                assert isinstance(found, pygit2.Tree)
                subtree = found
            level.child = (name, existing)
            stack.append(_Level(repo, subtree, node))
            continue
        new_id = level.builder.write()
        stack.pop()
        if not stack:
            return new_id
        parent = stack[-1]  # put the folder just written into its parent
        assert parent.child is not None
        name, before = parent.child
        written = repo[new_id]
        assert isinstance(written, pygit2.Tree)
        if len(written) == 0:
            if before is not None:
                parent.builder.remove(held(name))
        else:
            parent.builder.insert(name, new_id, TREE)


@record
class _Changes:
    """The changes inside one folder: to its own entries, and below each sub-folder."""

    direct: dict[str, Entry | None] = field(default_factory=dict)
    nested: dict[str, _Changes] = field(default_factory=dict)


class _Level:
    """One folder being rewritten: its builder with the direct changes made, and
    the sub-folders still to visit."""

    def __init__(
        self, repo: pygit2.Repository, tree: pygit2.Tree | None, changes: _Changes
    ) -> None:
        self.builder = repo.TreeBuilder(tree) if tree is not None else repo.TreeBuilder()
        for name, entry in changes.direct.items():
            if entry is None:
                if self.builder.get(held(name)) is not None:
                    self.builder.remove(held(name))
            else:
                self.builder.insert(name, entry.oid, entry.mode)
        self.pending = iter(changes.nested.items())
        self.child: tuple[str, pygit2.Object | None] | None = None  # the one being written
