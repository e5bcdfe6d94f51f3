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
    entries = [_entry(repo, commit) for commit in commits(repo, branch, base)]
    return History(name, f"{BRANCH_PREFIX}{name}", base, session is not None, entries)


def commits(repo: pygit2.Repository, branch: str, base: str) -> list[pygit2.Commit]:
    """The commits on ``branch`` after ``base``, newest first."""
    tip = notes.ref_target(repo, branch)
    if tip is None:
        return []
    start = pygit2.Oid(hex=base)
    out = []
    for commit in repo.walk(tip, pygit2.enums.SortMode.TOPOLOGICAL):
        if commit.id == start or repo.descendant_of(start, commit.id):
            break
        out.append(commit)
    return out


def _entry(repo: pygit2.Repository, commit: pygit2.Commit) -> dict[str, Any]:
    note = notes.read_note(repo, commit.id) or {}
    return {
        "commit": str(commit.id),
        "summary": commit.message.splitlines()[0] if commit.message else "",
        "edit": note.get("edit"),
        "source": note.get("source"),
        "tool": note.get("tool"),
        "operations": note.get("operations", []),
    }
