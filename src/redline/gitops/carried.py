"""A session's flagged edits, and which of them a new change rewrites.

A change that rewrites lines an unapproved flagged edit inserted would launder
it: the flagged lines leave the diff, and the rewrite — exact, or made with
another tool — passes. So the change carries the earlier flag: its note is
flagged with a violation naming the earlier edit (``edit`` and ``commit``
keys), and the guard clears it when either edit is approved.

:class:`FlaggedEdits` keeps, for one session, the commits of its branch whose
notes are flagged, by path; it learns each new commit as the session makes it,
and reads the branch again when the branch moved some other way. Whether an
earlier edit is approved is read from the notes each time (approvals are added
by ``redline approve``, in another process).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pygit2

from redline.engine import lineage
from redline.gitops import notes

CARRIED_FLAG = "carried flag"  # the rule name of a flag carried over from an earlier edit
_DEPTH = 64  # how far a chain of carried flags is followed before it counts as uncleared


@dataclass(frozen=True)
class Earlier:
    """A flagged edit of the session: its id and its commit."""

    edit: str
    commit: pygit2.Oid


class FlaggedEdits:
    def __init__(self, repo: pygit2.Repository, base: str) -> None:
        self.repo = repo
        self.base = base
        self._tip: pygit2.Oid | None = None
        self._by_path: dict[str, list[Earlier]] = {}

    def sync(self, tip: pygit2.Oid) -> None:
        """Know the flagged edits of the branch at ``tip`` (read again when it moved)."""
        if tip == self._tip:
            return
        self._by_path = {}
        walker = self.repo.walk(tip, pygit2.enums.SortMode.TOPOLOGICAL)
        # When the base is gone, every commit of the branch is looked at.
        with contextlib.suppress(ValueError, KeyError, pygit2.GitError):
            walker.hide(pygit2.Oid(hex=self.base))
        for commit in walker:
            note = notes.read_note(self.repo, commit.id)
            if note is not None:
                self._learn(commit.id, note)
        self._tip = tip

    def learned(self, commits: list[tuple[pygit2.Oid, Mapping[str, Any]]]) -> None:
        """The session committed these (oldest first), each with its note."""
        for oid, note in commits:
            self._learn(oid, note)
        if commits:
            self._tip = commits[-1][0]

    def _learn(self, commit: pygit2.Oid, note: Mapping[str, Any]) -> None:
        policy = note.get("policy")
        if not isinstance(policy, Mapping) or policy.get("verdict") != "flagged":
            return
        paths = {str(op.get("path")) for op in note.get("operations", []) if isinstance(op, dict)}
        paths |= {str(v.get("path")) for v in policy.get("violations", []) if isinstance(v, dict)}
        earlier = Earlier(str(note.get("edit", "")), commit)
        for path in paths:
            self._by_path.setdefault(path, []).append(earlier)

    def rewritten_by(self, path: str, before: bytes | None, after: bytes | None) -> list[Earlier]:
        """The unapproved flagged edits whose inserted lines, in ``path`` as it is now
        (``before``), the change to ``after`` replaces or deletes."""
        candidates = self._by_path.get(path)
        if not candidates:
            return []
        now = lineage.lines(before)
        changed = lineage.rewritten(now, lineage.lines(after))
        if not changed:
            return []
        found = []
        for earlier in candidates:
            theirs, written = self._inserted(earlier.commit, path)
            if lineage.followed(theirs, written, now) & changed and not self.cleared(
                earlier.commit
            ):
                found.append(earlier)
        return found

    def _inserted(self, commit_id: pygit2.Oid, path: str) -> tuple[set[int], list[str]]:
        """The lines the edit of ``commit_id`` inserted into ``path``, and the file it wrote."""
        commit = self.repo.get(commit_id)
        if not isinstance(commit, pygit2.Commit):
            return set(), []
        before = _blob(self.repo, commit.parents[0].tree if commit.parents else None, path)
        written = lineage.lines(_blob(self.repo, commit.tree, path))
        return lineage.inserted(lineage.lines(before), written), written

    def cleared(self, commit: pygit2.Oid, depth: int = 0) -> bool:
        """Whether the flagged edit of ``commit`` no longer needs a person: it is
        approved, or each of its flags was carried over from an edit that is."""
        note = notes.read_note(self.repo, commit)
        if note is None or depth > _DEPTH:
            return False  # evidence gone, or a chain too long to trust: fail closed
        if note.get("approvals"):
            return True
        policy = note.get("policy") or {}
        if policy.get("verdict") != "flagged":
            return True
        violations = policy.get("violations") or []
        sources = [v.get("commit") if isinstance(v, dict) else None for v in violations]
        if not sources:
            return False
        try:
            return all(
                isinstance(s, str) and self.cleared(pygit2.Oid(hex=s), depth + 1) for s in sources
            )
        except ValueError:
            return False


def carried_flag(path: str, earlier: Earlier) -> dict[str, str]:
    """The violation a change carries over from ``earlier`` (recorded in its note)."""
    commit = str(earlier.commit)
    return {
        "rule": CARRIED_FLAG,
        "path": path,
        "reason": (
            f"rewrites lines inserted by edit {earlier.edit} (commit {commit[:12]}), which is "
            "flagged and not yet approved; approving either edit clears this one"
        ),
        "edit": earlier.edit,
        "commit": commit,
    }


def _blob(repo: pygit2.Repository, tree: pygit2.Tree | None, path: str) -> bytes | None:
    if tree is None:
        return None
    try:
        obj = repo.get(tree[path].id)
    except KeyError:
        return None
    return obj.data if isinstance(obj, pygit2.Blob) else None
