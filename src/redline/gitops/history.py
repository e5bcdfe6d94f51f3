"""What sessions did, read from the repository alone: records, branches and notes.

Read-only and daemon-free: ``redline log`` and ``redline session list`` call
these in their own process (no daemon is started to read), and the daemon's
``log`` and ``session.list`` methods answer with the same functions.

A session's history is the commits on its branch after its base: the base in
its record while it is open, or in the record kept when it was closed with its
branch; a branch with no record at all (fetched from a teammate, say) starts
below the commits whose notes name the session.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pygit2

from redline.gitops import notes
from redline.gitops import session as sessions
from redline.gitops.errors import SessionError
from redline.gitops.repo import BRANCH_PREFIX, Layout


@dataclass(frozen=True)
class History:
    name: str
    branch: str  # short name, redline/<name>
    base: str
    open: bool
    entries: list[dict[str, Any]]  # newest first, as `log` prints them


def open_sessions(repo: pygit2.Repository, layout: Layout) -> list[dict[str, Any]]:
    """The open sessions with their tip and number of commits (``session.list``)."""
    out = []
    for session in sessions.all_sessions(layout):
        tip = notes.ref_target(repo, session.branch)
        out.append(
            {
                "name": session.name,
                "branch": session.short_branch,
                "worktree": session.worktree,
                "base": session.base,
                "tip": str(tip) if tip else None,
                "edits": len(commits(repo, session.branch, session.base)),
            }
        )
    return out


def session_history(repo: pygit2.Repository, layout: Layout, name: str) -> History:
    """The commits of session ``name``, open or closed with its branch kept, with evidence."""
    branch = f"refs/heads/{BRANCH_PREFIX}{name}"
    session = sessions.find(layout, name)
    if session is not None:
        base = session.base
    else:
        tip = notes.ref_target(repo, branch)
        if tip is None:
            raise SessionError(
                f"no session named {name!r}: none is open and there is no branch "
                f"{BRANCH_PREFIX}{name}; `redline session list` shows the open sessions, "
                f"`git branch --list '{BRANCH_PREFIX}*'` the branches of closed ones"
            )
        base = str(sessions.closed_base(repo, layout, name, tip))
    entries = [e for commit in commits(repo, branch, base) for e in _entries(repo, commit)]
    _mark_undone(entries)
    return History(name, f"{BRANCH_PREFIX}{name}", base, session is not None, entries)


def range_history(
    repo: pygit2.Repository, base: pygit2.Oid, head: pygit2.Oid
) -> list[dict[str, Any]]:
    """The edits the commits of ``base..head`` carry (a squash's, each), newest first."""
    walker = repo.walk(head, pygit2.enums.SortMode.TOPOLOGICAL)
    walker.hide(base)
    entries = [e for commit in walker for e in _entries(repo, commit)]
    _mark_undone(entries)
    return entries


def commits(repo: pygit2.Repository, branch: str, base: str) -> list[pygit2.Commit]:
    """The commits on ``branch`` after ``base``, newest first."""
    tip = notes.ref_target(repo, branch)
    if tip is None:
        return []
    start = pygit2.Oid(hex=base)
    # The commits ``base`` does not reach, found in one walk: asking of each commit
    # whether it is an ancestor of ``base`` walked the history again for each one
    # (10 s for a session of 500 commits, minutes for 6,400).
    beyond = repo.walk(tip, pygit2.enums.SortMode.TOPOLOGICAL)
    beyond.hide(start)
    after_base = {commit.id for commit in beyond}
    out = []
    for commit in repo.walk(tip, pygit2.enums.SortMode.TOPOLOGICAL):
        if commit.id not in after_base:  # ``base`` itself or one of its ancestors
            break
        out.append(commit)
    return out


def _entries(repo: pygit2.Repository, commit: pygit2.Commit) -> list[dict[str, Any]]:
    """The edit ``commit`` records, or for a squash commit each edit its note carries."""
    note = notes.read_note(repo, commit.id) or {}
    summary = commit.message.splitlines()[0] if commit.message else ""
    carried = notes.squashed(note)
    return [_entry(str(commit.id), summary, item) for item in carried or [note]]


def _entry(commit: str, summary: str, note: dict[str, Any]) -> dict[str, Any]:
    state, by = edit_state(note)
    return {
        "commit": commit,
        "summary": summary,
        "edit": note.get("edit"),
        "source": note.get("source"),
        "tool": note.get("tool"),
        "operations": note.get("operations", []),
        "state": state,
        "approved_by": by,
        "undoes": (note.get("undoes") or {}).get("edit"),
        "tolerated": [t for op in note.get("operations") or [] for t in op.get("tolerated") or []],
    }


def edit_state(note: dict[str, Any]) -> tuple[str, list[str]]:
    """An edit's state by its note: ``flagged`` (waiting for a person), ``approved`` (with
    who approved it), or ``clean`` (nothing to approve); ``unknown`` without a note.
    (``undone`` is known from later commits: see :func:`_mark_undone`.)"""
    if not note:
        return "unknown", []
    by = [str(a.get("by", "")) for a in note.get("approvals") or [] if isinstance(a, dict)]
    policy = note.get("policy") or {}
    if policy.get("verdict") == "flagged":
        return ("approved" if by else "flagged"), by
    return "clean", by


def _mark_undone(entries: list[dict[str, Any]]) -> None:
    """Mark the edits a later undo in ``entries`` reverted."""
    undone = {e["undoes"] for e in entries if e.get("undoes")}
    for entry in entries:
        if entry.get("edit") in undone:
            entry["state"] = "undone"
