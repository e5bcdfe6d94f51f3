"""Following edits through git: whether a tree still holds an edit, where its file went,
and how many of the lines it wrote later commits changed.

One edit of one file is an :class:`Edit`: the commit that made it, the file's
name before and after (a move in the edit itself is followed), and the blobs
before and after. :meth:`Follower.state` is the one decision every gate shares
— the commit, merge and push hooks, ``redline guard --range``, ``redline land``,
``redline review`` and the edit-time carried flags — of whether a version of
the file holds the edit. It aligns that version against the edit's texts
(engine.follow, with libgit2's xdiff, the diff git's own merge uses), so it
answers alike for a tree that descends from the edit commit and for one that
does not (a squash, a cherry-pick, a rebase, an amend): the edit is *undone*
when taking it back would change nothing, *intact* when making it again would
change nothing, and otherwise *other* — rewritten since, or a file of another
history. A file that is gone undoes the edit that wrote it, and keeps an edit
that deleted it.

:meth:`Follower.brought` judges a change (parent tree → new tree): it carries
the edit when the new tree does not undo it while the parent does not hold it
intact — unless the parent holds something else there and the change leaves
that place alone. Moves and copies carry the edit along: its file's other
names are found, as ``git diff -M -C`` pairs files (half the content in
common), in each commit the change brings that adds a file, and in the change
itself.

:class:`Survival` follows the lines an edit inserted forward through later
commits for the statistics (``redline stats``): the same diffs, mapped with
engine.follow.carry.

Diffs are cached by blob pair and the files each commit adds by commit id, so
a change is followed commit by commit once, whatever the number of edits.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

import pygit2

from redline.engine.follow import (
    SIMILAR,
    Hunk,
    Span,
    carry,
    kept,
    similarity,
    split,
    touches,
    would_change,
)
from redline.engine.records import record

Side = pygit2.Tree | pygit2.Index
State = Literal["intact", "undone", "other"]
_TEXT = pygit2.enums.DiffOption.FORCE_TEXT
_CACHE = 4096  # blobs and diffs kept (a gate reads a few per edit)


def blob_id(side: Side | None, path: str) -> pygit2.Oid | None:
    """The blob at ``path`` in a tree or an index (None: no file there)."""
    if side is None:
        return None
    try:
        entry = side[path]
    except (KeyError, ValueError):
        return None
    if isinstance(entry, pygit2.IndexEntry):
        return entry.id
    return entry.id if entry.type_str == "blob" else None


def hunks_of(a: pygit2.Blob | bytes | None, b: pygit2.Blob | bytes | None) -> list[Hunk]:
    """The changes from ``a`` to ``b`` as libgit2's xdiff finds them (git's merge aligns
    with the same diff), every file read as text."""
    patch = pygit2.Patch.create_from(a, b, flag=_TEXT, context_lines=0, interhunk_lines=0)
    return [
        Hunk(
            h.old_start - 1 if h.old_lines else h.old_start,
            h.old_lines,
            h.new_start - 1 if h.new_lines else h.new_start,
            h.new_lines,
        )
        for h in patch.hunks
    ]


class Diffs:
    """Blobs' lines and the diffs between blobs, cached by id. Texts not yet written to
    the repository (an edit being planned) are :meth:`remember`-ed under their blob id."""

    def __init__(self, repo: pygit2.Repository) -> None:
        self.repo = repo
        self._lines: dict[pygit2.Oid, list[bytes]] = {}
        self._hunks: dict[tuple[pygit2.Oid | None, pygit2.Oid | None], list[Hunk]] = {}
        self._texts: dict[pygit2.Oid, bytes] = {}
        self._blobs: dict[pygit2.Oid, pygit2.Blob] = {}

    def remember(self, data: bytes | None) -> pygit2.Oid | None:
        """The blob id of ``data`` (None for no file), readable here from now on."""
        if data is None:
            return None
        oid = pygit2.hash(data)
        if oid not in self._texts and self.repo.get(oid) is None:
            if len(self._texts) >= _CACHE:
                self._texts.clear()
            self._texts[oid] = data
        return oid

    def _source(self, oid: pygit2.Oid | None) -> pygit2.Blob | bytes | None:
        if oid is None:
            return None
        found = self._texts.get(oid) or self._blobs.get(oid)
        if found is not None:
            return found
        obj = self.repo.get(oid)
        if not isinstance(obj, pygit2.Blob):
            return None
        if len(self._blobs) >= _CACHE:
            self._blobs.clear()
        self._blobs[oid] = obj
        return obj

    def _size(self, oid: pygit2.Oid) -> int:
        source = self._source(oid)
        if isinstance(source, pygit2.Blob):
            return source.size
        return len(source) if source is not None else 0

    def lines(self, oid: pygit2.Oid | None) -> list[bytes]:
        if oid is None:
            return []
        found = self._lines.get(oid)
        if found is None:
            if len(self._lines) >= _CACHE:
                self._lines.clear()
            source = self._source(oid)
            data = source.data if isinstance(source, pygit2.Blob) else source
            found = self._lines[oid] = split(data)
        return found

    def hunks(self, a: pygit2.Oid | None, b: pygit2.Oid | None) -> list[Hunk]:
        if a == b:
            return []
        key = (a, b)
        found = self._hunks.get(key)
        if found is None:
            if len(self._hunks) >= _CACHE:
                self._hunks.clear()
            found = self._hunks[key] = hunks_of(self._source(a), self._source(b))
        return found

    def similar(self, a: pygit2.Oid | None, b: pygit2.Oid | None) -> bool:
        """Whether ``b`` is a rename or copy of ``a`` as git pairs them (-M50%, -C50%)."""
        if a is None or b is None:
            return False
        if a == b:
            return True
        small, large = sorted(map(self._size, (a, b)))
        if small < large * SIMILAR:  # too far apart in size to share half: no diff needed
            return False
        return similarity(self.lines(a), self.lines(b), self.hunks(a, b)) >= SIMILAR


@record(frozen=True)
class Edit:
    """What one edit did to one file."""

    commit: str  # the commit that made it
    path: str  # the file's name after it (its new name when the edit moved it)
    before: pygit2.Oid | None  # None: the edit created the file
    after: pygit2.Oid | None  # None: the edit deleted the file
    source: str  # the file's name before it

    @property
    def names(self) -> tuple[str, ...]:
        return (self.path,) if self.path == self.source else (self.path, self.source)


@record(frozen=True)
class Found:
    """Where a tree holds an edit: the file (by its name there) and its places in it."""

    path: str
    spans: tuple[Span, ...]


class Follower:
    """Edits followed through trees and commits (see the module doc), with caches."""

    def __init__(self, repo: pygit2.Repository) -> None:
        self.repo = repo
        self.diffs = Diffs(repo)
        self._added: dict[pygit2.Oid, list[tuple[str, pygit2.Oid]]] = {}

    # -- an edit ---------------------------------------------------------------------

    def edit(self, commit: pygit2.Commit, path: str, moved: bool = True) -> Edit:
        """What ``commit`` did to ``path`` (against its first parent). When the commit
        removed ``path`` and added a file with half its content in common, the edit
        moved it there: that file is the edit's result (unless ``moved`` is false: then
        the removal itself is the edit, as for the deletion of a guard file)."""
        parent = commit.parents[0].tree if commit.parents else None
        before = blob_id(parent, path)
        after = blob_id(commit.tree, path)
        name = path
        if after is None and before is not None and moved:
            for added, blob in self.added(commit):
                if self.diffs.similar(before, blob):
                    name, after = added, blob
                    break
        return Edit(str(commit.id), name, before, after, path)

    # -- the decision ----------------------------------------------------------------

    def state(self, edit: Edit, blob: pygit2.Oid | None) -> tuple[State, tuple[Span, ...]]:
        """Whether a version of the edit's file (``blob``; None: no file) holds the edit,
        and the places where taking it back would change that version."""
        if blob is None:
            return ("intact", ()) if edit.after is None else ("undone", ())
        if blob == edit.before:
            return "undone", ()
        spans = self._places(edit, blob)
        if not spans:
            return "undone", ()
        return ("intact" if self.intact(edit, blob) else "other"), spans

    def intact(self, edit: Edit, blob: pygit2.Oid | None) -> bool:
        """Whether making the edit again would change nothing in this version of its file."""
        if blob is None:
            return edit.after is None
        if blob == edit.after:
            return True
        if blob == edit.before:
            return False
        before, after, now = (self.diffs.lines(b) for b in (edit.before, edit.after, blob))
        to_after = self.diffs.hunks(edit.before, edit.after)
        return not would_change(before, after, now, to_after, self.diffs.hunks(edit.before, blob))

    def kept(self, edit: Edit, blob: pygit2.Oid | None) -> bool:
        """Whether this version of the file has the lines the edit wrote, as it wrote them,
        at their places (changes beside them allowed; engine.follow.kept)."""
        if blob is None:
            return edit.after is None
        if blob == edit.after:
            return True
        if blob == edit.before:
            return False
        return kept(self.diffs.hunks(edit.after, edit.before), self.diffs.hunks(edit.after, blob))

    def _places(self, edit: Edit, blob: pygit2.Oid) -> tuple[Span, ...]:
        """The places taking the edit back would change in this version of its file."""
        after, before, now = (self.diffs.lines(b) for b in (edit.after, edit.before, blob))
        to_before = self.diffs.hunks(edit.after, edit.before)
        to_now = self.diffs.hunks(edit.after, blob)
        return tuple(would_change(after, before, now, to_before, to_now))

    def holds(self, edit: Edit, side: Side | None, names: Iterable[str] = ()) -> Found | None:
        """Where ``side`` (a tree or an index) holds ``edit`` — the first of the file's
        names there that does not undo it — or None when it undoes the edit."""
        for name in _names(edit, names):
            blob = blob_id(side, name)
            if blob is None and edit.after is not None:
                continue
            spans = self.places(edit, blob)
            if spans is not None:
                return Found(name, spans)
        return None

    def brought(
        self,
        edit: Edit,
        parent: pygit2.Tree | None,
        new: Side,
        names: Iterable[str] = (),
    ) -> Found | None:
        """Where the change ``parent`` → ``new`` carries ``edit`` (None: it does not).

        Carried: ``new`` does not undo it, and ``parent`` does not have it already — the
        lines it wrote, at their places (:meth:`kept`). When ``parent`` holds something
        else there, neither the edit nor the text from before it (lines rewritten since,
        or a file of another history that never had the edit), the change carries the
        edit if it touches those places.
        """
        every = _names(edit, names)
        pairs = [(name, blob_id(parent, name), blob_id(new, name)) for name in every]
        if all(old == now for _, old, now in pairs):
            return None  # the change leaves the edit's files alone
        undone_before = True
        for _, old, _ in pairs:
            if old is None and edit.after is not None:
                continue
            similar = self.diffs.similar
            if old is not None and not (similar(edit.after, old) or similar(edit.before, old)):
                # Another file by that name, less than half of it in common with the
                # edit's texts: it has nothing of the edit, as if there were no file —
                # lines it happens to share at the edit's places prove nothing.
                continue
            if self.kept(edit, old):
                return None
            undone_before = undone_before and self.state(edit, old)[0] == "undone"
        for name, old, now in pairs:
            if now is None and edit.after is not None:
                continue
            spans = self.places(edit, now)
            if spans is None:
                continue  # undone here
            if undone_before:
                return Found(name, spans)
            # The change seen from ``new`` (the spans are places in ``new``): what it wrote
            # or deleted there.
            if old is None or now is None or touches(spans, self.diffs.hunks(now, old)):
                return Found(name, spans)
        return None

    def places(self, edit: Edit, blob: pygit2.Oid | None) -> tuple[Span, ...] | None:
        """Where a version of the edit's file holds the edit (None: it undoes it)."""
        if blob is None:
            return () if edit.after is None else None
        if blob == edit.before:
            return None
        return self._places(edit, blob) or None

    # -- where the file went ---------------------------------------------------------

    def added(self, commit: pygit2.Commit) -> list[tuple[str, pygit2.Oid]]:
        """The files ``commit`` adds: in its tree and in none of its parents' (cached)."""
        found = self._added.get(commit.id)
        if found is None:
            parents = [p.tree for p in commit.parents]
            if not parents:
                diff = commit.tree.diff_to_tree(swap=True)
            else:
                diff = parents[0].diff_to_tree(commit.tree)
            found = []
            for delta in diff.deltas:
                if delta.status != pygit2.enums.DeltaStatus.ADDED:
                    continue
                path = delta.new_file.path
                if any(blob_id(tree, path) is not None for tree in parents[1:]):
                    continue  # brought in by a merge, not created here
                found.append((path, delta.new_file.id))
            self._added[commit.id] = found
        return found

    def names(
        self,
        edit: Edit,
        commits: Sequence[pygit2.Commit],
        parent: pygit2.Tree | None = None,
        new: Side | None = None,
    ) -> list[str]:
        """The names the edit's file goes by: its own, and each file that ``commits``
        (oldest first) or the change ``parent`` → ``new`` add as a rename or a copy of
        one of them — half the content in common with it where it came from, or with
        what the edit wrote. A file the edit deleted has no other name."""
        names = list(edit.names)
        if edit.after is None:
            return names
        ids = [str(c.id) for c in commits]
        if edit.commit in ids:  # what came before the edit holds no copy of it
            commits = commits[ids.index(edit.commit) + 1 :]
        for commit in commits:
            for path, blob in self.added(commit):
                if path in names:
                    continue
                if self._copies(names, [p.tree for p in commit.parents], blob, edit):
                    names.append(path)
        if new is not None:
            for path, blob in added_paths(new, parent):
                if path not in names and self._copies(names, [parent], blob, edit):
                    names.append(path)
        return names

    def _copies(
        self,
        names: list[str],
        trees: Sequence[pygit2.Tree | None],
        blob: pygit2.Oid,
        edit: Edit,
    ) -> bool:
        if self.diffs.similar(edit.after, blob):
            return True
        return any(
            self.diffs.similar(blob_id(tree, name), blob) for tree in trees for name in names
        )


def _names(edit: Edit, names: Iterable[str]) -> list[str]:
    found = list(edit.names)
    found += [n for n in names if n not in found]
    return found


def added_paths(new: Side, parent: pygit2.Tree | None) -> list[tuple[str, pygit2.Oid]]:
    """The files ``new`` has and ``parent`` lacks."""
    if isinstance(new, pygit2.Index):
        diff = new.diff_to_tree(parent) if parent is not None else None
        if diff is None:
            return [(e.path, e.id) for e in new]
    elif parent is not None:  # two trees: only the folders they do not share are read
        from redline.gitops.tree_diff import differing

        added = [(path, now[0]) for path, was, now in differing(parent, new) if was is None and now]
        return sorted(added)  # in path order, as libgit2's diff gives them
    else:
        diff = new.diff_to_tree(swap=True)
    return [
        (d.new_file.path, d.new_file.id)
        for d in diff.deltas
        if d.status == pygit2.enums.DeltaStatus.ADDED
    ]


# --- the statistics: inserted lines followed forward -------------------------------------


@record(frozen=True)
class Inserted:
    """What a commit did to one file: its diff hunks and the lines each inserted."""

    hunks: list[Hunk]
    lines: list[list[int]]  # per hunk: the inserted lines (from 0) in the new file


def descendants_graph(
    repo: pygit2.Repository, tips: Iterable[pygit2.Oid], wanted: Iterable[pygit2.Oid]
) -> tuple[dict[pygit2.Oid, list[pygit2.Oid]], set[pygit2.Oid]]:
    """The children of every commit reachable from ``tips`` down to the oldest of
    ``wanted`` (topological order: a commit comes after all its children, so once
    every wanted commit is seen, their descendants are all known); and which of
    ``wanted`` are reachable."""
    pending = set(wanted)
    children: dict[pygit2.Oid, list[pygit2.Oid]] = {}
    seen: set[pygit2.Oid] = set()
    walker = None
    for tip in tips:
        if walker is None:
            walker = repo.walk(tip, pygit2.enums.SortMode.TOPOLOGICAL)
        else:
            walker.push(tip)
    for commit in walker or ():
        for parent in commit.parent_ids:
            children.setdefault(parent, []).append(commit.id)
        if commit.id in pending:
            pending.discard(commit.id)
            seen.add(commit.id)
            if not pending:
                break
    return children, seen


class Survival:
    """The lines edit commits inserted, and which of them later commits changed.

    Each later commit is compared with the commit before it on the way (for a merge,
    the parent the edit came through), for the edit's file only: a line the diff
    deletes or rewrites is *changed*; the others are carried to their new places
    (and to a new path when git pairs the file with a rename; a deleted file changes
    them all). Following stops ``window`` commits after the edit, on every way
    forward: a line changed on any branch that took the edit is changed.
    """

    def __init__(
        self,
        repo: pygit2.Repository,
        children: Mapping[pygit2.Oid, list[pygit2.Oid]],
        window: int,
        diffs: Diffs | None = None,
    ) -> None:
        self.repo = repo
        self.children = children
        self.window = window
        self.diffs = diffs or Diffs(repo)
        self._renames: dict[tuple[pygit2.Oid, pygit2.Oid], dict[str, str]] = {}
        self._trees: dict[pygit2.Oid, pygit2.Tree] = {}

    def inserted(self, commit: pygit2.Commit, path: str) -> Inserted:
        """The hunks of ``commit``'s change to ``path`` and the lines each inserted."""
        before = blob_id(commit.parents[0].tree, path) if commit.parents else None
        after = blob_id(commit.tree, path)
        if after is None or before == after:
            return Inserted([], [])
        hunks = self.diffs.hunks(before, after)
        return Inserted(hunks, [list(range(h.b, h.b + h.b_len)) for h in hunks])

    def changed(self, commit: pygit2.Oid, path: str, lines: Iterable[int]) -> set[int]:
        """Which of ``lines`` (of ``path`` at ``commit``, from 0) a commit at most
        ``window`` commits later changed or removed, on any way forward."""
        gone: set[int] = set()
        start = {line: line for line in lines}  # line now -> line at the edit
        stack = [(commit, path, blob_id(self._tree(commit), path), start, 0)]
        visited = {commit}
        while stack:
            oid, at, blob, live, depth = stack.pop()
            if depth >= self.window or not live:
                continue
            for child in self.children.get(oid, ()):
                if child in visited:  # reached already on another way
                    continue
                visited.add(child)
                new_path, new_blob, kept, removed = self._step(oid, child, at, blob, live)
                gone.update(removed)
                stack.append((child, new_path, new_blob, kept, depth + 1))
        return gone

    def _step(
        self,
        parent: pygit2.Oid,
        child: pygit2.Oid,
        path: str,
        before: pygit2.Oid | None,
        live: dict[int, int],
    ) -> tuple[str, pygit2.Oid | None, dict[int, int], list[int]]:
        """``live`` lines of ``path`` (blob ``before`` in ``parent``) carried to ``child``:
        where the path went, its blob there, the lines that remain and those removed."""
        new_tree = self._tree(child)
        new_path = path
        after = blob_id(new_tree, path)
        if after is None:
            renamed = self._renamed(parent, child).get(path)
            if renamed is None:  # deleted: every line went with it
                return path, None, {}, list(live.values())
            new_path, after = renamed, blob_id(new_tree, renamed)
        if before == after:
            return new_path, after, live, []
        kept, removed = carry(live, self.diffs.hunks(before, after))
        return new_path, after, kept, removed

    def _tree(self, oid: pygit2.Oid) -> pygit2.Tree:
        tree = self._trees.get(oid)
        if tree is None:
            commit = self.repo[oid]
            assert isinstance(commit, pygit2.Commit)
            tree = self._trees[oid] = commit.tree
        return tree

    def _renamed(self, parent: pygit2.Oid, child: pygit2.Oid) -> dict[str, str]:
        key = (parent, child)
        if key not in self._renames:
            diff = self._tree(parent).diff_to_tree(self._tree(child))
            diff.find_similar()
            self._renames[key] = {
                d.old_file.path: d.new_file.path
                for d in diff.deltas
                if d.status == pygit2.enums.DeltaStatus.RENAMED
            }
        return self._renames[key]
