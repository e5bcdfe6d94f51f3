"""Following an edit's inserted lines forward through the commits that came after it.

An edit commit inserts lines into a file. Each later commit is compared with
the commit before it on the way (its parent on that path, for a merge the
parent the edit came through), for that file only: a line the comparison
deletes or rewrites is *changed*; the others are carried to their new line
numbers (and to a new path when the file is renamed; a deleted file changes
them all). Following stops ``window`` commits after the edit, on every way
forward: every child of every commit, so a branch that took the edit and moved
on (a fast-forward, a merge, commits on top of the session) counts as well as
the session branch itself. A line changed on any of those ways is changed.

The commit graph comes from :func:`descendants_graph`, one walk from the
branch tips; diffs are cached by blob pair and renames by commit pair, since
the edits of one session share their later commits.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import pygit2

Hunk = tuple[int, int, int, int]  # old_start, old_lines, new_start, new_lines (diff -U0)


@dataclass(frozen=True)
class Inserted:
    """What a commit did to one file: its diff hunks and the lines it inserted."""

    hunks: list[Hunk]
    lines: list[list[int]]  # per hunk: the inserted lines' numbers in the new file


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


class Follower:
    """Inserted lines of edit commits, and which of them later commits changed."""

    def __init__(
        self,
        repo: pygit2.Repository,
        children: Mapping[pygit2.Oid, list[pygit2.Oid]],
        window: int,
    ) -> None:
        self.repo = repo
        self.children = children
        self.window = window
        self._diffs: dict[tuple[pygit2.Oid | None, pygit2.Oid | None], Inserted | None] = {}
        self._renames: dict[tuple[pygit2.Oid, pygit2.Oid], dict[str, str]] = {}
        self._trees: dict[pygit2.Oid, pygit2.Tree] = {}

    # -- what an edit inserted --------------------------------------------------------

    def inserted(self, commit: pygit2.Commit, path: str) -> Inserted:
        """The hunks of ``commit``'s change to ``path`` and the lines each inserted."""
        before = _blob_id(commit.parents[0].tree, path) if commit.parents else None
        after = _blob_id(commit.tree, path)
        if after is None or before == after:
            return Inserted([], [])
        return self._diff(before, after) or Inserted([], [])  # binary: no lines to follow

    # -- following them ---------------------------------------------------------------

    def changed(self, commit: pygit2.Oid, path: str, lines: Iterable[int]) -> set[int]:
        """Which of ``lines`` (numbers in ``path`` at ``commit``) a commit at most
        ``window`` commits later changed or removed, on any way forward."""
        gone: set[int] = set()
        start = {line: line for line in lines}  # line number now -> line number at the edit
        stack = [(commit, path, _blob_id(self._tree(commit), path), start, 0)]
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
        where the path went, its blob there, the lines that remain (new number ->
        original) and the originals removed."""
        new_tree = self._tree(child)
        new_path = path
        after = _blob_id(new_tree, path)
        if after is None:
            renamed = self._renamed(parent, child).get(path)
            if renamed is None:  # deleted: every line went with it
                return path, None, {}, list(live.values())
            new_path, after = renamed, _blob_id(new_tree, renamed)
        if before == after:
            return new_path, after, live, []
        hunks = self._hunks(before, after)
        if hunks is None:
            return new_path, after, {}, list(live.values())
        kept, removed = carry(live, hunks)
        return new_path, after, kept, removed

    def _tree(self, oid: pygit2.Oid) -> pygit2.Tree:
        tree = self._trees.get(oid)
        if tree is None:
            commit = self.repo[oid]
            assert isinstance(commit, pygit2.Commit)
            tree = self._trees[oid] = commit.tree
        return tree

    def _hunks(self, before: pygit2.Oid | None, after: pygit2.Oid | None) -> list[Hunk] | None:
        diff = self._diff(before, after)
        return diff.hunks if diff is not None else None

    def _diff(self, before: pygit2.Oid | None, after: pygit2.Oid | None) -> Inserted | None:
        """The ``-U0`` diff of two blobs (None when binary), cached: an edit's own diff
        is a step of the edits before it that touched the file."""
        key = (before, after)
        if key not in self._diffs:
            patch = pygit2.Patch.create_from(
                self._blob(before), self._blob(after), context_lines=0, interhunk_lines=0
            )
            if patch.delta.is_binary:
                self._diffs[key] = None
            else:
                hunks = patch.hunks
                self._diffs[key] = Inserted(
                    [(h.old_start, h.old_lines, h.new_start, h.new_lines) for h in hunks],
                    [[ln.new_lineno for ln in h.lines if ln.origin == "+"] for h in hunks],
                )
        return self._diffs[key]

    def _blob(self, oid: pygit2.Oid | None) -> pygit2.Blob | None:
        if oid is None:
            return None
        blob = self.repo[oid]
        assert isinstance(blob, pygit2.Blob)
        return blob

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


def carry(live: Mapping[int, int], hunks: list[Hunk]) -> tuple[dict[int, int], list[int]]:
    """Carry line numbers through a ``-U0`` diff: the lines a hunk deletes or rewrites
    are removed (their originals returned), the others move by the lines added and
    removed above them."""
    # For each hunk: the first old line after it, and the shift from then on.
    ends: list[int] = []
    shifts: list[int] = []
    shift = 0
    removed_ranges: list[tuple[int, int]] = []
    for old_start, old_lines, _new_start, new_lines in hunks:
        if old_lines:
            removed_ranges.append((old_start, old_start + old_lines - 1))
            end = old_start + old_lines
        else:
            end = old_start + 1  # a pure insertion goes after line old_start
        shift += new_lines - old_lines
        ends.append(end)
        shifts.append(shift)
    starts = [r[0] for r in removed_ranges]
    kept: dict[int, int] = {}
    removed: list[int] = []
    for line, original in live.items():
        i = bisect.bisect_right(starts, line) - 1
        if i >= 0 and removed_ranges[i][0] <= line <= removed_ranges[i][1]:
            removed.append(original)
            continue
        j = bisect.bisect_right(ends, line) - 1
        kept[line + (shifts[j] if j >= 0 else 0)] = original
    return kept, removed


def _blob_id(tree: pygit2.Tree, path: str) -> pygit2.Oid | None:
    try:
        entry = tree[path]
    except KeyError:
        return None
    return entry.id if entry.type_str == "blob" else None
