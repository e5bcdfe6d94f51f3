"""Approving flagged edits: the reviewer and time go into the edit's notes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pygit2

from redline.engine.errors import RedlineError
from redline.engine.policy import Policy
from redline.gitops import notes
from redline.gitops.repo import signature
from redline.gitops.writer import PLAIN, Writer
from redline.hooks import ledger as ledgers
from redline.hooks.guard import carrying_commit, edit_lines, flagged_operations


class ApprovalError(RedlineError):
    pass


@dataclass(frozen=True)
class Approved:
    edit: str
    commits: list[str]
    by: str


def approve(repo: pygit2.Repository, names: list[str], writer: Writer = PLAIN) -> list[Approved]:
    """Record an approval for each edit id (or commit carrying one) in ``names``."""
    ledger = ledgers.load(repo)
    targets: dict[str, list[str]] = {}
    for name in names:
        edit, commits = _resolve(repo, ledger, name)
        targets.setdefault(edit, [])
        targets[edit] += [c for c in commits if c not in targets[edit]]
    sig = signature(repo)
    reviewer = f"{sig.name} <{sig.email}>"
    stamp = notes.Approval(reviewer, notes.utc_now())

    def approved(tip: pygit2.Oid | None) -> dict[pygit2.Oid, dict[str, Any]]:
        # Made again on each try, from the notes as they are then: a daemon (or git)
        # adding notes at the same moment loses nothing, and neither does this.
        updated: dict[pygit2.Oid, dict[str, Any]] = {}
        for commits in targets.values():
            for commit in commits:
                oid = pygit2.Oid(hex=commit)
                data = notes.read_note(repo, oid, at=tip)
                if data is None:
                    continue
                note = notes.Note.from_json(data)
                note.approvals.append(stamp)
                updated[oid] = {**data, "approvals": [a.to_json() for a in note.approvals]}
        return updated

    notes.publish(repo, approved, sig, writer)
    return [Approved(edit, commits, reviewer) for edit, commits in targets.items()]


def _resolve(repo: pygit2.Repository, ledger: ledgers.Ledger, name: str) -> tuple[str, list[str]]:
    if name in ledger.entries:
        return name, list(ledger.entries[name].commits)
    try:
        commit = repo.revparse_single(name).peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
        commit = None
    if commit is not None and str(commit.id) in ledger.unreadable:
        raise ApprovalError(
            f"the evidence note of commit {str(commit.id)[:12]} cannot be read "
            f"({ledger.unreadable[str(commit.id)]}), so there is no edit to approve; repair "
            f"it (`git notes --ref=redline edit {str(commit.id)[:12]}`) or restore "
            "refs/notes/redline from a good copy, then approve again"
        )
    if commit is not None:
        note = notes.read_note(repo, commit.id)
        if note is not None and note.get("edit"):
            edit = str(note["edit"])
            entry = ledger.entries.get(edit)
            commits = list(entry.commits) if entry else []
            if str(commit.id) not in commits:
                commits.append(str(commit.id))
            return edit, commits
    raise ApprovalError(
        f"no redline edit or edit commit named {name!r}; `redline review` lists the edits "
        "waiting for approval"
    )


def waiting(
    repo: pygit2.Repository, policy: Policy, ledger: ledgers.Ledger | None = None
) -> list[dict[str, Any]]:
    """Flagged, unapproved edits with their diffs, oldest first."""
    ledger = ledger or ledgers.load(repo)
    out = []
    for entry in ledger.entries.values():
        if entry.approved:
            continue
        flags = flagged_operations(entry, policy)
        if not flags:
            continue
        commit = carrying_commit(repo, entry)
        if commit is None:
            continue
        for op, rule, reason in flags:
            inserted, _ = edit_lines(repo, commit, op.path)
            out.append(
                {
                    "edit": entry.edit,
                    "commit": str(commit.id),
                    "path": op.path,
                    "start_line": op.start_line,
                    "end_line": op.end_line,
                    "match_type": op.match_type,
                    "confidence": op.confidence,
                    "rule": rule,
                    "reason": reason,
                    "time": commit.commit_time,
                    "diff": _diff(repo, commit, op.path),
                    "inserted": len(inserted),
                }
            )
    return sorted(out, key=lambda item: (item["time"], item["path"]))


def _diff(repo: pygit2.Repository, commit: pygit2.Commit, path: str) -> str:
    parent = commit.parents[0].tree if commit.parents else None
    diff = (
        parent.diff_to_tree(commit.tree)
        if parent is not None
        else commit.tree.diff_to_tree(swap=True)
    )
    for patch in diff:
        if patch is not None and patch.delta.new_file.path == path:
            return str(patch.text or "")
    return ""
