"""Approving flagged edits: the reviewer and time go into the edit's notes.

Approval is a person's action at the command line (``redline approve``): it runs
here, in the person's process, and writes through the compare-and-swap
``notes.publish``. It is not offered on the daemon's socket, the channel agents
use. An edit commit whose evidence note is gone (hooks.evidence) is approved by
writing it a new note: flagged ("evidence missing"), with the approval.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pygit2

from redline.engine.errors import RedlineError
from redline.engine.policy import Policy
from redline.gitops import notes
from redline.gitops.follow import Edit, Follower
from redline.gitops.repo import signature
from redline.gitops.signing import Signer, signer
from redline.gitops.writer import PLAIN, Writer
from redline.hooks import ledger as ledgers
from redline.hooks.evidence import (
    MISSING_REASON,
    MISSING_RULE,
    find_commit,
    lacking,
    message_of,
    unnoted_commits,
)
from redline.hooks.guard import carrying_commit, changed_paths, flagged_operations
from redline.hooks.sent_found import sent_and_found
from redline.hooks.stages import SESSION_BRANCHES
from redline.settings.policy import PolicyError, policy_from_tree, stricter_policy

_LATER = 1000  # commits after an edit in which review looks for its file's other names


class ApprovalError(RedlineError):
    pass


@dataclass(frozen=True)
class Approved:
    """What ``approve`` did for one edit: ``status`` "approved" (recorded; ``why``, when
    set, says why the policy in HEAD would not need it), "already" (this reviewer had
    approved it: nothing added; ``at`` says when) or "not flagged" (an exact edit the
    guard can never flag: nothing to approve; ``why`` says so)."""

    edit: str
    commits: list[str]
    by: str
    unnoted: list[str] = field(default_factory=list)  # commits approved without evidence
    status: str = "approved"
    at: str | None = None
    why: str | None = None
    signed: str | None = None  # the key that signed it (None: not signed)


NEVER_FLAGGED = "it was never flagged (an exact match the policy passed), so it needs no approval"
UNFLAGGED_NOW = (
    "the policy in HEAD does not flag it; the approval counts where a stricter one does "
    "(a push or a CI check judged by the policy of the branch it goes to)"
)
CLEARED = "the flag it carried from an earlier edit is cleared already (that edit is approved)"


def approve(repo: pygit2.Repository, names: list[str], writer: Writer = PLAIN) -> list[Approved]:
    """Record an approval for each edit id (or commit carrying one) in ``names``.

    An exact edit that was never flagged is not approved (``status`` "not flagged");
    a reviewer's second approval of an edit adds nothing (``status`` "already").
    With a signing key set up (``user.signingkey``, gitops.signing), each approval is
    signed over the edit, the commit whose note it goes in, that note's evidence, the
    reviewer and the time; a policy that takes only signed approvals
    (``approvals = "signed"`` in HEAD) makes a key a must.
    """
    ledger = ledgers.load(repo)
    targets: dict[str, list[str]] = {}
    unnoted: dict[str, list[str]] = {}  # edit -> its commits whose evidence is gone
    for name in names:
        edit, commits, missing = _resolve(repo, ledger, name)
        targets.setdefault(edit, [])
        targets[edit] += [c for c in commits if c not in targets[edit]]
        unnoted.setdefault(edit, [])
        unnoted[edit] += [c for c in missing if c not in unnoted[edit]]
    sig = signature(repo)
    reviewer = f"{sig.name} <{sig.email}>"
    key = _signer(repo)
    at = notes.utc_now()
    stamper = _Stamper(reviewer, at, key)
    unflagged = {e for e in targets if not unnoted[e] and e not in ledger.entries}
    earlier: dict[str, str] = {}  # edit -> when this reviewer approved it before
    stamps: dict[tuple[str, str], notes.Approval] = {}  # (edit, commit) -> the approval

    def approved(tip: pygit2.Oid | None) -> dict[pygit2.Oid, dict[str, Any]]:
        # Made again on each try, from the notes as they are then: a daemon (or git)
        # adding notes at the same moment loses nothing, and neither does this.
        updated: dict[pygit2.Oid, dict[str, Any]] = {}
        earlier.clear()
        stamps.clear()
        for edit, commits in targets.items():
            if edit in unflagged:
                continue
            for commit in commits:
                oid = pygit2.Oid(hex=commit)
                data = notes.read_note(repo, oid, at=tip)
                if data is None:
                    if commit in unnoted[edit]:
                        updated[oid] = _without_evidence(repo, oid, edit, stamper)
                        stamps[edit, commit] = stamper.last
                    continue
                evidence = notes.evidence_of(data, edit) or data
                stamp = stamper.stamp(edit, commit, evidence)
                mine = [
                    a
                    for a in notes.approvals_of(data, edit)
                    if a.by == reviewer
                    and (key is None or a.evidence == stamp.evidence)
                    and (key is None or a.signature)
                ]
                if mine:
                    earlier.setdefault(edit, mine[0].at)
                    continue
                updated[oid] = notes.with_approval(data, edit, stamp)
                stamps[edit, commit] = stamp
        return updated

    written = notes.publish(repo, approved, sig, writer)
    done = []
    signed = _signed_with(key)
    for edit, commits in targets.items():
        if edit in unflagged:
            done.append(Approved(edit, commits, reviewer, status="not flagged", why=NEVER_FLAGGED))
        elif edit in earlier and not _wrote(repo, written, edit, commits, stamps):
            done.append(Approved(edit, commits, reviewer, status="already", at=earlier[edit]))
        else:
            why = None if unnoted[edit] else _unflagged_now(repo, ledger, edit)
            done.append(Approved(edit, commits, reviewer, unnoted[edit], why=why, signed=signed))
    return done


def _signer(repo: pygit2.Repository) -> Signer | None:
    """The reviewer's signing setup; ApprovalError when HEAD's policy takes only signed
    approvals and there is none."""
    key = signer(repo)
    if key is not None:
        return key
    try:
        head = None if repo.head_is_unborn else repo.head.peel(pygit2.Commit).tree
        required = head is not None and policy_from_tree(repo, head).approvals == "signed"
    except PolicyError:
        required = False
    if required:
        raise ApprovalError(
            'the policy in HEAD takes only signed approvals ([guard] approvals = "signed"), '
            "and no signing key is set up, so nothing was approved. Set one up as for signed "
            "commits (`git config gpg.format ssh` and `git config user.signingkey "
            "~/.ssh/id_ed25519`; its public key must be in .redline/allowed_signers), then "
            "approve again"
        )
    return None


def _signed_with(key: Signer | None) -> str | None:
    if key is None:
        return None
    return f"{key.format} key {key.key.removeprefix('key::')[:60]}"


class _Stamper:
    """Makes the approvals of one ``redline approve``: one reviewer, one time; signed
    (each signature made once, however often the notes are read again) with a key."""

    def __init__(self, by: str, at: str, key: Signer | None) -> None:
        self.by = by
        self.at = at
        self.key = key
        self._signed: dict[bytes, str] = {}
        self.last = notes.Approval(by, at)

    def stamp(self, edit: str, commit: str, evidence: Mapping[str, Any]) -> notes.Approval:
        if self.key is None:
            self.last = notes.Approval(self.by, self.at)
            return self.last
        digest = notes.evidence_digest(evidence)
        payload = notes.approval_payload(edit, commit, self.by, self.at, digest)
        if payload not in self._signed:
            self._signed[payload] = self.key.sign(payload)
        self.last = notes.Approval(
            self.by, self.at, edit, commit, digest, self.key.format, self._signed[payload]
        )
        return self.last


def _wrote(
    repo: pygit2.Repository,
    tip: pygit2.Oid | None,
    edit: str,
    commits: list[str],
    stamps: Mapping[tuple[str, str], notes.Approval],
) -> bool:
    """Whether notes commit ``tip`` holds this run's approval of ``edit`` in a note of
    ``commits``."""
    if tip is None:
        return False
    for commit in commits:
        stamp = stamps.get((edit, commit))
        data = notes.read_note(repo, pygit2.Oid(hex=commit), at=tip) or {}
        if stamp is not None and stamp in notes.approvals_of(data, edit):
            return True
    return False


def _unflagged_now(repo: pygit2.Repository, ledger: ledgers.Ledger, edit: str) -> str | None:
    """Why the approval of ``edit`` (a tolerant edit) is not needed by the policy in HEAD
    joined with the policy of its commit; None when they flag it."""
    entry = ledger.entries.get(edit)
    if entry is None:
        return None
    commit = carrying_commit(repo, entry)
    head = None if repo.head_is_unborn else repo.head.peel(pygit2.Commit).tree
    sides = [(head, "in HEAD")]
    if commit is not None:
        sides.append((commit.tree, f"in commit {str(commit.id)[:12]}"))
    try:
        policy = stricter_policy(repo, sides)
    except PolicyError:
        return None
    if flagged_operations(entry, policy, ledger):
        return None
    return CLEARED if entry.flagged else UNFLAGGED_NOW


def _without_evidence(
    repo: pygit2.Repository, commit: pygit2.Oid, edit: str, stamper: _Stamper
) -> dict[str, Any]:
    """A new note for an edit commit whose note is gone: what it changed, flagged
    because the evidence is missing, and the person's approval."""
    obj = repo[commit]
    assert isinstance(obj, pygit2.Commit)
    before = obj.parents[0].tree if obj.parents else None
    paths = sorted(changed_paths(repo, before, obj.tree))
    operations = [notes.NoteOperation(path, "write") for path in paths]
    note = notes.Note(edit, "", "", "unknown", None, "unknown", operations)
    reason = f"{MISSING_REASON} (approved by a person without it)"
    violations = [{"rule": MISSING_RULE, "path": path, "reason": reason} for path in paths]
    note.policy = notes.Verdict("flagged", MISSING_RULE, violations)
    note.files = notes.files_at(before, obj.tree, paths)
    note.approvals.append(stamper.stamp(edit, str(commit), note.to_json()))
    return note.to_json()


def _resolve(
    repo: pygit2.Repository, ledger: ledgers.Ledger, name: str
) -> tuple[str, list[str], list[str]]:
    """The edit ``name`` means, the commits of its notes, and its commits whose evidence
    is gone (approved by writing them a note)."""
    if name in ledger.entries:
        return name, list(ledger.entries[name].commits), []
    try:
        commit = repo.revparse_single(name).peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
        commit = None
    if commit is None and name in ledger.noted_edits():
        return name, [], []  # a noted edit outside the ledger: exact and never flagged
    if commit is None:
        commit = find_commit(repo, name, _branch_tips(repo))  # an edit id whose note is gone
    if commit is not None and str(commit.id) in ledger.unreadable:
        raise ApprovalError(
            f"the evidence note of commit {str(commit.id)[:12]} cannot be read "
            f"({ledger.unreadable[str(commit.id)]}), so there is no edit to approve; repair "
            f"it (`git notes --ref=redline edit {str(commit.id)[:12]}`) or restore "
            "refs/notes/redline from a good copy, then approve again"
        )
    if commit is not None:
        note = notes.read_note(repo, commit.id)
        carried = notes.squashed(note) if note is not None else []
        if carried:
            edits = " ".join(str(e.get("edit")) for e in carried)
            raise ApprovalError(
                f"commit {str(commit.id)[:12]} is a squash of {len(carried)} edit(s) ({edits}); "
                "approve each by its edit id once you have read its diff (`redline review`)"
            )
        if note is not None and note.get("edit"):
            edit = str(note["edit"])
            entry = ledger.entries.get(edit)
            if entry is None:
                return edit, [], []  # its note keeps it out of the ledger: never flagged
            commits = list(entry.commits)
            if str(commit.id) not in commits:
                commits.append(str(commit.id))
            return edit, commits, []
        gone = lacking(ledger, commit, ledger.noted_edits())
        if gone:
            return gone[0], [str(commit.id)], [str(commit.id)]
        named = [e for e in notes.trailer_edits(message_of(commit)) if e in ledger.entries]
        if named:  # a copy (cherry-pick) of a noted edit: approve that edit
            return named[0], list(ledger.entries[named[0]].commits), []
    raise ApprovalError(
        f"no redline edit or edit commit named {name!r}; `redline review` lists the edits "
        "waiting for approval"
    )


def _branch_tips(repo: pygit2.Repository) -> list[pygit2.Oid]:
    """HEAD and every local branch: where an edit commit is looked for by its id."""
    tips = [] if repo.head_is_unborn else [repo.head.peel(pygit2.Commit).id]
    for name in repo.references:
        target = repo.references[name].target if name.startswith("refs/heads/") else None
        if isinstance(target, pygit2.Oid) and target not in tips:
            tips.append(target)
    return tips


def waiting(
    repo: pygit2.Repository,
    policy: Policy,
    ledger: ledgers.Ledger | None = None,
    settled: list[str] | None = None,
) -> list[dict[str, Any]]:
    """Flagged, unapproved edits with their diffs, oldest first; with them, the edit
    commits whose evidence is gone, on HEAD or a session branch and not yet on a
    remote-tracking branch.

    A flagged edit that no branch (local or remote-tracking), HEAD or the index holds
    any more — each undoes it, as gitops.follow decides for the guard: undone
    (``redline undo``), or its places restored by hand — is left out, as the guard
    lets it pass: no commit or push from here can carry it. Its id goes to
    ``settled`` when given."""
    ledger = ledger or ledgers.load(repo)
    follower = Follower(repo)
    out = []
    sides: _Sides | None = None
    for entry in ledger.entries.values():
        if entry.approved:
            continue
        flags = flagged_operations(entry, policy, ledger)
        if not flags:
            continue
        commit = carrying_commit(repo, entry)
        if commit is None:
            continue
        if sides is None:
            sides = _sides(repo)
        held: dict[str, Edit] = {}
        for op, _, _ in flags:
            if op.path in held:
                continue
            edit = follower.edit(commit, op.path, moved=op.op != "delete")
            if any(follower.holds(edit, side) is not None for _, side in sides):
                held[op.path] = edit
                continue
            # Not under its own name anywhere: moved or copied since, perhaps.
            names = follower.names(edit, _after(repo, commit, sides))
            if any(follower.holds(edit, side, names) is not None for _, side in sides):
                held[op.path] = edit
        if not held:
            if settled is not None:
                settled.append(entry.edit)
            continue
        for op, rule, reason in flags:
            if op.path not in held:
                continue
            edit = held[op.path]
            out.append(
                {
                    "edit": entry.edit,
                    "commit": str(commit.id),
                    "path": op.path,
                    "start_line": op.start_line,
                    "end_line": op.end_line,
                    "match_type": op.match_type,
                    "confidence": op.confidence,
                    "op": op.op,
                    "rule": rule,
                    "reason": reason,
                    "time": commit.commit_time,
                    "diff": commit_diff(repo, commit, op.path),
                    "inserted": _inserted(follower, edit),
                    **sent_and_found(repo, commit, entry.edit, op.path, op.start_line),
                }
            )
    out += _unnoted(repo, ledger, follower)
    return sorted(out, key=lambda item: (item["time"], item["path"] or ""))


def _inserted(follower: Follower, edit: Edit) -> int:
    """How many lines the edit wrote (new or rewritten)."""
    return sum(h.b_len for h in follower.diffs.hunks(edit.before, edit.after))


_Sides = list[tuple[pygit2.Commit | None, pygit2.Tree | pygit2.Index]]


def _sides(repo: pygit2.Repository) -> _Sides:
    """What a commit or push from this repository can be made of: the trees of HEAD,
    of every local and remote-tracking branch (one each, with its commit), and the
    index."""
    trees: dict[pygit2.Oid, tuple[pygit2.Commit | None, pygit2.Tree | pygit2.Index]] = {}
    tips = [] if repo.head_is_unborn else [repo.head.peel(pygit2.Commit)]
    for name in repo.references:
        if name.startswith(("refs/heads/", "refs/remotes/")):
            target = repo.references[name].target
            found = repo.get(target) if isinstance(target, pygit2.Oid) else None
            if isinstance(found, pygit2.Commit):
                tips.append(found)
    for tip in tips:
        trees.setdefault(tip.tree_id, (tip, tip.tree))
    sides = list(trees.values())
    if not repo.is_bare:
        sides.append((None, repo.index))
    return sides


def _after(repo: pygit2.Repository, commit: pygit2.Commit, sides: _Sides) -> list[pygit2.Commit]:
    """The commits of the sides that ``commit`` is not part of (oldest first; at most the
    newest ``_LATER``): where its file may have been moved or copied since."""
    tips = [tip.id for tip, _ in sides if tip is not None and tip.id != commit.id]
    if not tips:
        return []
    walker = repo.walk(tips[0], pygit2.enums.SortMode.TOPOLOGICAL)
    for tip in tips[1:]:
        walker.push(tip)
    walker.hide(commit.id)
    later = []
    for found in walker:
        later.append(found)
        if len(later) >= _LATER:
            break
    return later[::-1]


def _unnoted(
    repo: pygit2.Repository, ledger: ledgers.Ledger, follower: Follower
) -> list[dict[str, Any]]:
    tips = [] if repo.head_is_unborn else [repo.head.peel(pygit2.Commit).id]
    hide = []
    for name in repo.references:
        target = repo.references[name].target
        if not isinstance(target, pygit2.Oid):
            continue
        if name.startswith(SESSION_BRANCHES):
            tips.append(target)
        elif name.startswith("refs/remotes/"):
            hide.append(target)
    out = []
    for commit, edits in unnoted_commits(repo, ledger, tips, hide):
        before = commit.parents[0].tree if commit.parents else None
        for path in sorted(changed_paths(repo, before, commit.tree)):
            out.append(
                {
                    "edit": edits[0],
                    "commit": str(commit.id),
                    "path": path,
                    "start_line": None,
                    "end_line": None,
                    "match_type": None,
                    "confidence": None,
                    "op": None,
                    "rule": MISSING_RULE,
                    "reason": MISSING_REASON,
                    "time": commit.commit_time,
                    "diff": commit_diff(repo, commit, path),
                    "inserted": _inserted(follower, follower.edit(commit, path, moved=False)),
                }
            )
    return out


def commit_diff(repo: pygit2.Repository, commit: pygit2.Commit, path: str) -> str:
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
