"""Edit commits whose evidence is gone: a ``Redline-Edit:`` trailer, and no note.

Every commit redline makes names its edit in a ``Redline-Edit: <id>`` trailer,
and the edit's note in ``refs/notes/redline`` holds its evidence: the match,
the verdict, the approvals. Without a note the guard cannot tell a flagged edit
from a clean one, so it fails closed: a commit whose trailer names an edit that
no readable note records — not its own note, not a copy's (cherry-pick and
rebase copies keep the edit id) — counts as an unapproved flagged edit of what
it changed. Deleting ``refs/notes/redline``, or one note, lets nothing through.

A person clears it by fetching the notes again, or by approving the commit
(``redline approve <commit>``), which writes a new note recording the approval
and that the evidence was missing (hooks.approve).
"""

from __future__ import annotations

from collections.abc import Iterable

import pygit2

from redline.engine.records import record
from redline.gitops.follow import Follower, added_paths
from redline.gitops.notes import trailer_edits
from redline.hooks.guard import changed_paths
from redline.hooks.ledger import Ledger

MISSING_RULE = "evidence missing"
MISSING_REASON = (
    "no note in refs/notes/redline records this edit, so nothing tells whether it was "
    "flagged: fetch the notes, or approve the commit without them"
)


@record(frozen=True)
class Missing:
    """An edit a commit names whose evidence is gone."""

    edit: str
    commit: str


def message_of(commit: pygit2.Commit) -> str:
    return commit.raw_message.decode("utf-8", errors="replace")


def lacking(ledger: Ledger, commit: pygit2.Commit, noted: set[str]) -> list[str]:
    """The edits ``commit`` names that no readable note records (none when the commit
    has a note of its own: it speaks for the commit; an unreadable one is reported
    as such)."""
    sha = str(commit.id)
    if sha in ledger.edits or sha in ledger.unreadable:
        return []
    return [edit for edit in trailer_edits(message_of(commit)) if edit not in noted]


def missing_evidence(
    repo: pygit2.Repository,
    ledger: Ledger,
    commits: Iterable[pygit2.Commit],
    parent: pygit2.Tree | None,
    new: pygit2.Tree | pygit2.Index,
    follower: Follower | None = None,
) -> list[Missing]:
    """The edits without evidence among ``commits`` (oldest first) that the change
    ``parent`` → ``new`` carries: what such a commit did to each file is followed into
    ``new`` as a flagged edit is (gitops.follow), its moves and copies included."""
    noted = ledger.noted_edits()
    commits = list(commits)
    changed: set[str] | None = None
    adds = False
    found: list[Missing] = []
    for commit in commits:
        edits = lacking(ledger, commit, noted)
        if not edits:
            continue
        if changed is None:
            changed = changed_paths(repo, parent, new)
            adds = bool(added_paths(new, parent))
            follower = follower or Follower(repo)
        assert follower is not None
        before = commit.parents[0].tree if commit.parents else None
        for path in sorted(changed_paths(repo, before, commit.tree)):
            edit = follower.edit(commit, path)
            names = follower.names(edit, commits, parent, new) if adds else list(edit.names)
            if changed.isdisjoint(names):
                continue
            if follower.brought(edit, parent, new, names) is not None:
                found += [Missing(edit_id, str(commit.id)) for edit_id in edits]
                break
    return list(dict.fromkeys(found))


def unnoted_commits(
    repo: pygit2.Repository, ledger: Ledger, tips: Iterable[pygit2.Oid], hide: Iterable[pygit2.Oid]
) -> list[tuple[pygit2.Commit, list[str]]]:
    """Each commit reachable from ``tips`` and not from ``hide`` whose evidence is gone,
    with the edits it names, newest first (for ``redline review``)."""
    walker = _walker(repo, tips, hide)
    if walker is None:
        return []
    noted = ledger.noted_edits()
    out = []
    for commit in walker:
        edits = lacking(ledger, commit, noted)
        if edits:
            out.append((commit, edits))
    return out


def find_commit(
    repo: pygit2.Repository, edit: str, tips: Iterable[pygit2.Oid], hide: Iterable[pygit2.Oid] = ()
) -> pygit2.Commit | None:
    """The newest commit reachable from ``tips`` (not from ``hide``) naming ``edit``."""
    walker = _walker(repo, tips, hide)
    for commit in walker or ():
        if edit in trailer_edits(message_of(commit)):
            return commit
    return None


def _walker(
    repo: pygit2.Repository, tips: Iterable[pygit2.Oid], hide: Iterable[pygit2.Oid]
) -> pygit2.Walker | None:
    walker = None
    for tip in tips:
        if walker is None:
            walker = repo.walk(tip, pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.TIME)
        else:
            walker.push(tip)
    if walker is None:
        return None
    for oid in hide:
        walker.hide(oid)
    return walker
