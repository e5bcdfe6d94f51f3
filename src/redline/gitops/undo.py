"""Undoing one edit of a session: its commit reverted on top of the session's tip.

The edit is named by its id (its ``Redline-Edit:`` trailer and note) or by its
commit. The revert is git's own three-way merge (libgit2's ``revert_commit``):
the edit's changes are taken back wherever later edits left them alone. When a
later edit changed the same lines, the revert conflicts and nothing is done:
the conflicting lines of the file as it is now are named, with the edits
(``git blame`` over the session's commits since the undone one) that last
changed them. The undo itself becomes a commit of the session, made and
published like an edit's (:func:`undo_edit`, through gitops.transaction).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Any

import pygit2

from redline.engine.paths import shown_path
from redline.gitops import evidence, history, notes
from redline.gitops.carried import carried_flag
from redline.gitops.errors import SessionError
from redline.gitops.notes import NoteOperation
from redline.gitops.session import Session
from redline.gitops.transaction import Group, Prepared, Transaction, settings_blobs
from redline.gitops.trees import LINK, Entry
from redline.gitops.verdict import blob_data, rejection

UNDO_TOOL = "undo"


@dataclass(frozen=True)
class Conflict:
    """Lines of ``path`` (as the session has it now) that the edit and a later one changed."""

    path: str
    start_line: int | None  # None: the whole file (deleted or added on one side)
    end_line: int | None
    changed_by: list[dict[str, str]] = field(default_factory=list)  # {edit, commit}

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "changed_by": list(self.changed_by),
        }

    def describe(self) -> str:
        path = shown_path(self.path)
        if self.start_line is None:
            where = f"{path} (the whole file)"
        elif self.start_line == self.end_line:
            where = f"{path} line {self.start_line}"
        else:
            where = f"{path} lines {self.start_line}-{self.end_line}"
        by = ", ".join(f"edit {c['edit']} (commit {c['commit'][:12]})" for c in self.changed_by)
        return where + (f", changed since by {by}" if by else "")


@dataclass(frozen=True)
class Reverted:
    """The files an undo writes (None: deleted), or why it cannot be done."""

    files: dict[str, Entry | None]
    conflicts: list[Conflict]


def find_edit(repo: pygit2.Repository, session: Session, edit: str) -> pygit2.Commit:
    """The session's commit of ``edit`` (an edit id, or a commit id or prefix of 7+)."""
    for commit in history.commits(repo, session.branch, session.base):
        note = notes.read_note(repo, commit.id) or {}
        named = note.get("edit") == edit or edit in notes.trailer_edits(commit.message or "")
        if named or (len(edit) >= 7 and str(commit.id).startswith(edit.lower())):
            if len(commit.parent_ids) != 1:
                raise SessionError(
                    f"commit {str(commit.id)[:12]} of session {session.name!r} is a merge, not "
                    "an edit; undo the edits it brought one by one"
                )
            return commit
    raise SessionError(
        f"session {session.name!r} has no edit {edit!r}; `redline log {session.name}` lists its "
        "edits (the id in [..., edit ID], or the commit)"
    )


def revert(repo: pygit2.Repository, commit: pygit2.Commit, tip: pygit2.Oid) -> Reverted:
    """``commit``'s changes taken back from the tree of ``tip``."""
    ours = repo[tip]
    assert isinstance(ours, pygit2.Commit)
    index = repo.revert_commit(commit, ours)
    if index.conflicts is not None:
        conflicts = [
            _conflict(repo, commit, tip, ancestor, mine, theirs)
            for ancestor, mine, theirs in index.conflicts
        ]
        return Reverted({}, sorted(conflicts, key=lambda c: (c.path, c.start_line or 0)))
    tree = repo[index.write_tree(repo)]
    assert isinstance(tree, pygit2.Tree)
    files: dict[str, Entry | None] = {}
    for delta in ours.tree.diff_to_tree(tree).deltas:
        if delta.status == pygit2.enums.DeltaStatus.DELETED:
            files[delta.old_file.path] = None
        else:
            files[delta.new_file.path] = Entry(delta.new_file.id, delta.new_file.mode)
    return Reverted(files, [])


def _conflict(
    repo: pygit2.Repository,
    commit: pygit2.Commit,
    tip: pygit2.Oid,
    ancestor: pygit2.IndexEntry | None,
    mine: pygit2.IndexEntry | None,
    theirs: pygit2.IndexEntry | None,
) -> Conflict:
    """The lines of the file at ``tip`` the revert cannot take back, and who changed them."""
    path = str(next(e.path for e in (mine, theirs, ancestor) if e is not None))
    if ancestor is None or mine is None or theirs is None:
        start = end = None
        changed = _changed_by(repo, commit, tip, path, None)
    else:
        merged = repo.merge_file_from_index(ancestor, mine, theirs)
        ranges = conflict_ranges(merged.contents)
        start = ranges[0][0] if ranges else None
        end = ranges[-1][1] if ranges else None
        changed = _changed_by(repo, commit, tip, path, ranges)
    return Conflict(path, start, end, changed)


def conflict_ranges(merged: str) -> list[tuple[int, int]]:
    """The line ranges (1-based, of "our" side: the file as it is) that conflict markers
    enclose in ``merged``."""
    ranges: list[tuple[int, int]] = []
    line = 0  # lines of ours seen so far
    side: str | None = None  # None: common text; "ours"; "base"/"theirs": the other sides
    start = 0
    for text in merged.splitlines():
        if text.startswith("<<<<<<<") and side is None:
            side, start = "ours", line + 1
        elif text.startswith("|||||||") and side == "ours":
            side = "base"
        elif text.startswith("=======") and side in ("ours", "base"):
            ranges.append((start, max(start, line)))
            side = "theirs"
        elif text.startswith(">>>>>>>") and side == "theirs":
            side = None
        elif side in (None, "ours"):
            line += 1
    return ranges


def _changed_by(
    repo: pygit2.Repository,
    commit: pygit2.Commit,
    tip: pygit2.Oid,
    path: str,
    ranges: list[tuple[int, int]] | None,
) -> list[dict[str, str]]:
    """The commits after ``commit`` up to ``tip`` that last changed those lines of ``path``
    (every one that touched the file when ``ranges`` is None), with their edit ids."""
    found: dict[str, str] = {}
    if ranges is None:
        walker = repo.walk(tip, pygit2.enums.SortMode.TOPOLOGICAL)
        walker.hide(commit.id)
        for later in walker:
            before = later.parents[0].tree if later.parents else None
            if _entry_id(before, path) != _entry_id(later.tree, path):
                found[str(later.id)] = _edit_of(repo, later)
    else:
        for first, last in ranges:
            try:
                blame = repo.blame(path, newest_commit=tip, min_line=first, max_line=last)
            except (KeyError, ValueError, pygit2.GitError):
                continue
            for hunk in blame:
                oid = hunk.final_commit_id
                if oid == commit.id or not repo.descendant_of(oid, commit.id):
                    continue
                blamed = repo[oid]
                assert isinstance(blamed, pygit2.Commit)
                found[str(oid)] = _edit_of(repo, blamed)
    return [{"edit": edit, "commit": sha} for sha, edit in found.items()]


def _edit_of(repo: pygit2.Repository, commit: pygit2.Commit) -> str:
    note = notes.read_note(repo, commit.id) or {}
    named = notes.trailer_edits(commit.message or "")
    return str(note.get("edit") or (named[0] if named else str(commit.id)[:12]))


def _entry_id(tree: pygit2.Tree | None, path: str) -> pygit2.Oid | None:
    if tree is None:
        return None
    try:
        return tree[path].id
    except KeyError:
        return None


@dataclass
class UndoResult:
    """The answer to an undo (the JSON ``redline undo --json`` prints)."""

    status: str  # undone | conflict | no_change | rejected
    session: str
    edit: str  # the edit undone (or asked to be)
    commit: str  # its commit
    # the commits made: {commit, edit, paths, source}
    commits: list[dict[str, Any]] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    flags: list[dict[str, str]] = field(default_factory=list)
    error: str | None = None
    hint: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "session": self.session,
            "edit": self.edit,
            "commit": self.commit,
            "commits": list(self.commits),
            "conflicts": [c.to_dict() for c in self.conflicts],
            "flags": list(self.flags),
            "error": self.error,
            "hint": self.hint,
        }


def conflict_message(edit: str, conflicts: list[Conflict]) -> str:
    lines = [
        f"edit {edit} cannot be undone: later edits changed the same lines, so taking it back "
        "would need a guess:"
    ]
    lines += [f"  {c.describe()}" for c in conflicts]
    lines.append(
        "Undo those later edits first (newest first), or change the lines by a new edit; "
        "nothing was changed."
    )
    return "\n".join(lines)


def undo_edit(tx: Transaction, edit: str) -> UndoResult:
    """Revert the commit of ``edit`` in a new commit of the session, published like an
    edit's (on the git thread: the caller is the worker). Judged as an edit is: the
    guard's own files always need a person, and taking back lines an unapproved
    flagged edit depends on carries its flag; so an undo can never clear a flag."""
    repo, session = tx.repo, tx.session
    target = find_edit(repo, session, edit)
    parent = target.parents[0].tree
    paths = sorted({p for d in parent.diff_to_tree(target.tree).deltas
                    for p in (d.old_file.path, d.new_file.path)})  # fmt: skip
    outcome = UndoResult("no_change", session.name, edit, str(target.id))
    note = notes.read_note(repo, target.id) or {}
    outcome.edit = str(note.get("edit") or edit)
    with tx.open(paths, dry_run=False) as prepared:
        if prepared.refused is not None:
            outcome.status, outcome.error = "rejected", prepared.refused.error
            return outcome
        reverted = revert(repo, target, prepared.tip)
        if reverted.conflicts:
            outcome.status, outcome.conflicts = "conflict", reverted.conflicts
            outcome.error = conflict_message(outcome.edit, reverted.conflicts)
            return outcome
        if not reverted.files:
            outcome.error = (
                f"edit {outcome.edit}'s changes are no longer in the session (undone "
                "already, or changed back since): nothing to undo"
            )
            return outcome
        group = _undo_group(tx, prepared, target, outcome.edit, reverted.files)
        verdict = group.note.policy.violations if group.note.policy else []
        if tx.judge.refuses(verdict):
            outcome.status, outcome.flags = "rejected", verdict
            outcome.error = rejection(verdict)
            return outcome
        tip, _tree = tx.commit(prepared.tip, prepared.tree, group)
        chain = [*prepared.chain, (tip, group)]
        outcome.hint = tx.publish(prepared, chain, reverted.files)
        outcome.status, outcome.flags = "undone", verdict
        outcome.commits = [
            {"commit": str(oid), "edit": g.note.edit, "paths": g.paths,
             "source": g.note.source}
            for oid, g in chain
        ]  # fmt: skip
        return outcome


def _undo_group(
    tx: Transaction,
    prepared: Prepared,
    target: pygit2.Commit,
    edit: str,
    files: dict[str, Entry | None],
) -> Group:
    """The commit that reverts ``target`` (the edit ``edit``), with its note."""
    repo = tx.repo
    paths = sorted(files)
    operations = [NoteOperation(p, "undo") for p in paths]
    carried = []
    for path in paths:
        entry = files[path]
        after = repo.get(entry.oid) if entry is not None else None
        if entry is None or entry.mode == LINK or not isinstance(after, pygit2.Blob):
            continue
        before = blob_data(repo, prepared.tree, path)
        earlier = tx.flagged.rewritten_by(path, before, after.data)
        # Taking back the undone edit's own lines launders nothing: they go.
        carried += [carried_flag(path, e) for e in earlier if e.commit != target.id]
    new = evidence.new_edit()
    note = evidence.note(
        new, prepared.request_id, tx.session.name, UNDO_TOOL, None, "undo", operations
    )
    note.undoes = {"edit": edit, "commit": str(target.id)}
    carried += tx.judge.settings_changed(
        partial(blob_data, repo, prepared.tree), settings_blobs(repo, files)
    )
    note.policy = tx.judge.verdict(tx.judge.judge(operations) + carried)
    summary = target.message.splitlines()[0] if target.message else ""
    message = evidence.undo_message(tx.session.name, edit, str(target.id), summary, new)
    return Group(paths, dict(files), note, message, carried)
