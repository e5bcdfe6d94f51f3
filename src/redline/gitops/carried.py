"""A session's flagged edits, and which of them a new change carries on.

A change that rewrites lines of an unapproved flagged edit would launder it:
the flagged lines leave the diff, and the rewrite — exact, or made with
another tool — passes. So the change carries the earlier flag: its note is
flagged with a violation naming the earlier edit (``edit`` and ``commit``
keys), and the guard clears it when either edit is approved. The same holds
for a file moved or copied (an apply_patch ``*** Move to``, a ``write`` of the
flagged file's content elsewhere, the agent's own copy in its worktree): the
new file carries the flags of the edits it holds.

Whether a version of a file holds an edit, and where, is gitops.follow's
decision — the one the guard uses: by position and exact bytes, not by equal
lines somewhere in the file. A change rewrites an edit when it touches the
edit's places in the file and does not undo the edit; taking an edit back
launders nothing.

:class:`FlaggedEdits` keeps, for one session, the commits of its branch whose
notes are flagged, by path; it learns each new commit as the session makes it,
and reads the branch again when the branch moved some other way. Whether an
earlier edit is approved is read from the notes each time (approvals are added
by ``redline approve``, in another process).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pygit2

from redline.engine.follow import touches
from redline.gitops import notes
from redline.gitops.follow import Edit, Follower

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
        self.follower = Follower(repo)

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

    def any(self) -> bool:
        """Whether the branch holds a flagged edit at all (as of the last sync or commit):
        when not, no change carries anything."""
        return bool(self._by_path)

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
        """The unapproved flagged edits of ``path`` whose places, in the file as it is now
        (``before``), the change to ``after`` rewrites or deletes without undoing them."""
        candidates = self._by_path.get(path)
        if not candidates:
            return []
        diffs = self.follower.diffs
        now, then = diffs.remember(before), diffs.remember(after)
        change = diffs.hunks(now, then)
        if not change:
            return []
        found = []
        for earlier in candidates:
            edit = self._edit(earlier, path)
            if edit is None:
                continue
            state, spans = self.follower.state(edit, now)
            if state == "undone" or not touches(spans, change):
                continue
            if self.follower.state(edit, then)[0] != "undone" and not self.cleared(earlier.commit):
                found.append(earlier)
        return found

    def copied_into(self, source: str, now: bytes | None, after: bytes | None) -> list[Earlier]:
        """The unapproved flagged edits of ``source`` (its file as it is now: ``now``) whose
        lines ``after``, a file moved or copied from it, has as they were written."""
        if now is None or after is None or source not in self._by_path:
            return []
        diffs = self.follower.diffs
        held, copy = diffs.remember(now), diffs.remember(after)
        if not diffs.similar(held, copy):
            return []
        found = []
        for earlier in self._by_path[source]:
            edit = self._edit(earlier, source)
            if edit is None or self.follower.state(edit, held)[0] == "undone":
                continue
            if self.follower.kept(edit, copy) and not self.cleared(earlier.commit):
                found.append(earlier)
        return found

    def copied_from(
        self, path: str, after: bytes | None, read: Callable[[str], bytes | None]
    ) -> list[tuple[str, Earlier]]:
        """The unapproved flagged edits of other files of the session that ``after``, the
        new content of ``path``, copies (half its content in common with one of them, as
        it is now — ``read`` gives that — and holding the edit), with their paths."""
        if after is None:
            return []
        found = []
        for source in sorted(self._by_path):
            if source == path:
                continue
            found += [(source, e) for e in self.copied_into(source, read(source), after)]
        return found

    def carried_by(
        self,
        path: str,
        before: bytes | None,
        after: bytes | None,
        read: Callable[[str], bytes | None],
        origin: str | None = None,
        whole: bool = False,
    ) -> list[tuple[Earlier, str | None]]:
        """Every unapproved flagged edit the change of ``path`` (``before`` → ``after``)
        carries on, each with the file it was copied from (None: rewritten in place).

        Rewritten: the change touches the edit's places (a file moved from ``origin`` is
        compared with its source). Copied: a new file, a moved one or — ``whole`` — a
        file rewritten from scratch that holds the edit of another file of the session
        (``read`` gives the files as they are now).
        """
        if after is None:
            return []
        source = origin or path
        old = before if source == path else read(source)
        found: list[tuple[Earlier, str | None]] = [
            (e, None) for e in self.rewritten_by(source, old, after)
        ]
        diffs = self.follower.diffs
        fresh = before is None or source != path
        if fresh or (whole and not diffs.similar(diffs.remember(before), diffs.remember(after))):
            done = {e for e, _ in found}
            found += [(e, p) for p, e in self.copied_from(path, after, read) if e not in done]
        return found

    def _edit(self, earlier: Earlier, path: str) -> Edit | None:
        """What the edit of ``earlier`` did to ``path``."""
        commit = self.repo.get(earlier.commit)
        if not isinstance(commit, pygit2.Commit):
            return None
        return self.follower.edit(commit, path)

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


def carried_flag(path: str, earlier: Earlier, copied: str | None = None) -> dict[str, str]:
    """The violation a change carries over from ``earlier`` (recorded in its note);
    ``copied``: the file it moved or copied the edit's lines from."""
    commit = str(earlier.commit)
    how = (
        f"moves or copies lines of {copied} written by edit"
        if copied is not None
        else "rewrites lines inserted by edit"
    )
    return {
        "rule": CARRIED_FLAG,
        "path": path,
        "reason": (
            f"{how} {earlier.edit} (commit {commit[:12]}), which is flagged and not yet "
            "approved; approving either edit clears this one"
        ),
        "edit": earlier.edit,
        "commit": commit,
    }
