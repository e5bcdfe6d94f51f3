"""Judging changes as the hooks do, and a range of commits as a CI server does.

:func:`judge` is the one verdict every caller shares — the commit and push
hooks, ``redline guard --range``, ``redline land`` and anything that must
refuse to carry unapproved flagged edits: for each change (hooks.stages), the
flagged edits it carries that no person approved (hooks.guard, following each
edit with gitops.follow), the unreadable notes of commits touching what it
changes, the edit commits it brings whose evidence note is missing
(hooks.evidence), and the commits it brings whose note does not describe
their change (hooks.claims).

:func:`check_range` is ``BASE..HEAD`` the way pre-push sees a push: the commits
reachable from HEAD and not from BASE, judged as one change from their merge
base's tree to HEAD's.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import pygit2

from redline.engine.errors import RedlineError
from redline.engine.policy import Policy
from redline.engine.records import field, record, replace
from redline.gitops.follow import Follower
from redline.hooks import stages
from redline.hooks.claims import Mismatch, mismatches
from redline.hooks.evidence import Missing, missing_evidence
from redline.hooks.guard import Blocked, Unreadable, blocked, unreadable_notes
from redline.hooks.ledger import Ledger

if TYPE_CHECKING:
    from redline.hooks.reproduce import RequestSource, Unreproduced
    from redline.hooks.signed import Ignored


class RangeError(RedlineError):
    """A ``BASE..HEAD`` range that does not name two commits of the repository."""

    exit_code = 2


@record
class Findings:
    """What keeps changes from going through; empty lists: they may."""

    blocked: list[Blocked] = field(default_factory=list)
    unreadable: list[Unreadable] = field(default_factory=list)
    missing: list[Missing] = field(default_factory=list)
    mismatched: list[Mismatch] = field(default_factory=list)
    ignored: list[Ignored] = field(default_factory=list)  # approvals that do not count
    unreproduced: list[Unreproduced] = field(default_factory=list)  # with --verify

    @property
    def ok(self) -> bool:
        return not (
            self.blocked or self.unreadable or self.missing or self.mismatched or self.unreproduced
        )


def head_tree(repo: pygit2.Repository) -> pygit2.Tree | None:
    return None if repo.head_is_unborn else repo.head.peel(pygit2.Commit).tree


def judging_policy(
    repo: pygit2.Repository, change: stages.Change, ledger: Ledger | None = None
) -> Policy:
    """What a change is judged by: HEAD's policy, the policy it starts from, the one it
    brings and those of the commits it is measured against (a range's BASE), joined — a
    change can add rules but not take one away, so an agent's unapproved edit of the
    policy cannot weaken the judgement of the change that carries it. With ``ledger``,
    the policy before each unapproved agent edit of the policy files still in effect
    there is joined too (hooks.mainline): a weakening that reached a branch unapproved
    judges nothing. A side whose policy is broken is left out (otherwise "fix the file
    and retry" could never get past the hook)."""
    from redline.hooks.mainline import guarded_policy
    from redline.settings.policy import stricter_policy

    label = change.label if change.label.startswith("the ") else f"the {change.label}"
    sides: list[tuple[pygit2.Tree | None, str]] = [
        (head_tree(repo), "in HEAD"),
        (change.parent, f"before {label}"),
        (change.new, f"in {label}"),
    ]
    for oid in change.hide:
        against = repo.get(oid)
        if isinstance(against, pygit2.Commit):
            sides.append((against.tree, f"in {str(oid)[:12]}, which {label} is measured against"))
    if ledger is None:
        return stricter_policy(repo, sides)
    return guarded_policy(repo, ledger, sides)


def judge(
    repo: pygit2.Repository,
    ledger: Ledger,
    changes: Iterable[stages.Change],
    verify: RequestSource | None = None,
) -> Findings:
    """The unapproved flagged edits, unreadable notes and missing evidence ``changes`` carry.

    Where the policy says ``approvals = "signed"`` (read as if no approval counted, so
    that an approval cannot lift the rule that judges approvals), an edit counts as
    approved only by approvals that verify (hooks.signed); the others are named in
    ``ignored`` when their edit is refused. With ``verify`` (where the requests as sent
    are read from), each agent edit commit a change brings is run again
    (hooks.reproduce); one that does not reproduce counts as an unapproved flagged
    edit until a person approves it."""
    found = Findings()
    follower = Follower(repo)
    for change in changes:
        policy = judging_policy(repo, change, ledger)
        judged = ledger
        checker = None
        if policy.approvals == "signed" or (
            _approved_policy_edit(ledger)
            and judging_policy(repo, change, unapproved(ledger)).approvals == "signed"
        ):
            from redline.gitops.signing import allowed_signers  # signed approvals only
            from redline.hooks.signed import Checker, signed_ledger

            checker = Checker(repo, allowed_signers(repo, [change.parent, change.new]))
            judged = signed_ledger(ledger, checker)
            policy = judging_policy(repo, change, judged)
        brought = list(stages.brought(repo, change))
        found.blocked += blocked(repo, judged, policy, change.parent, change.new, brought, follower)
        found.unreadable += unreadable_notes(repo, ledger, change.parent, change.new)
        found.missing += missing_evidence(
            repo, ledger, brought, change.parent, change.new, follower
        )
        found.mismatched += mismatches(repo, ledger, brought)
        if verify is not None:
            from redline.hooks.reproduce import unreproduced  # --verify only

            found.unreproduced += [
                u
                for u in unreproduced(repo, ledger, brought, verify)
                if not (u.edit in judged.entries and judged.entries[u.edit].approved)
            ]
        if checker is not None:
            refused = {b.edit for b in found.blocked} | {u.edit for u in found.unreproduced}
            found.ignored += [i for i in checker.ignored if i.edit in refused]
            checker.save()
    found.blocked = list(dict.fromkeys(found.blocked))
    found.unreadable = list(dict.fromkeys(found.unreadable))
    found.missing = list(dict.fromkeys(found.missing))
    found.mismatched = list(dict.fromkeys(found.mismatched))
    found.ignored = list(dict.fromkeys(found.ignored))
    found.unreproduced = list(dict.fromkeys(found.unreproduced))
    return found


def _approved_policy_edit(ledger: Ledger) -> bool:
    """Whether an approval (of any kind) stands behind an agent edit of the policy files:
    only then can counting approvals change what the policy says about approvals."""
    from redline.hooks.mainline import POLICY_PATHS

    for entry in ledger.entries.values():
        if not entry.approvals:
            continue
        paths = {op.path for op in entry.operations} | {str(f.get("path")) for f in entry.flagged}
        if paths & POLICY_PATHS:
            return True
    return False


def unapproved(ledger: Ledger) -> Ledger:
    """``ledger`` with no approval counted: the strictest reading of the policy files."""
    entries = {
        edit: replace(entry, approvals=[]) if entry.approvals else entry
        for edit, entry in ledger.entries.items()
    }
    return replace(ledger, entries=entries)


@record
class RangeVerdict:
    base: pygit2.Commit
    head: pygit2.Commit
    change: stages.Change
    commits: int  # in BASE..HEAD
    findings: Findings
    verified: bool = False  # each agent edit was run again (--verify)

    def summary(self, spec: str) -> str:
        """One line for a CI log."""
        f = self.findings
        counts = (
            f"{len(f.blocked)} unapproved flagged edit{_s(f.blocked)}, "
            f"{len(f.missing)} edit{_s(f.missing)} with evidence missing, "
            f"{len(f.unreadable)} unreadable note{_s(f.unreadable)}"
        )
        if f.mismatched:
            counts += (
                f", {len(f.mismatched)} note{_s(f.mismatched)} not describing "
                f"{'its commit' if len(f.mismatched) == 1 else 'their commits'}"
            )
        if self.verified:
            counts += f", {len(f.unreproduced)} note{_s(f.unreproduced)} not reproducing"
        verdict = "passed" if f.ok else "FAILED"
        return (
            f"redline guard --range {spec}: {verdict} — {self.commits} "
            f"commit{'' if self.commits == 1 else 's'} checked; {counts}"
        )

    def to_json(self, spec: str) -> dict[str, Any]:
        f = self.findings
        return {
            "range": spec,
            "base": str(self.base.id),
            "head": str(self.head.id),
            "commits": self.commits,
            "ok": f.ok,
            "blocked": [vars(b) for b in f.blocked],
            "missing": [vars(m) for m in f.missing],
            "unreadable": [vars(u) for u in f.unreadable],
            "mismatched": [vars(m) for m in f.mismatched],
            "ignored_approvals": [vars(i) for i in f.ignored],
            "unreproduced": [{**vars(u), "reason": u.reason} for u in f.unreproduced],
            "summary": self.summary(spec),
        }


def parse_range(spec: str) -> tuple[str, str]:
    """``BASE..HEAD`` (or ``BASE...HEAD``, the same here) → (BASE, HEAD)."""
    for sep in ("...", ".."):
        base, found, head = spec.partition(sep)
        if found:
            if base and head:
                return base, head
            break
    raise RangeError(
        f"--range takes BASE..HEAD, two commits (e.g. origin/main..HEAD, or in a pull "
        f"request's CI job BASE_SHA..HEAD_SHA); got {spec!r}"
    )


def resolve(repo: pygit2.Repository, rev: str, role: str) -> pygit2.Commit:
    try:
        return repo.revparse_single(rev).peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
        raise RangeError(
            f"cannot resolve {role} {rev!r} to a commit of this repository; in CI, check out "
            "the whole history (actions/checkout with fetch-depth: 0, or "
            f"`git fetch origin {rev}`) so that both ends of the range are here"
        ) from None


def check_range(
    repo: pygit2.Repository,
    ledger: Ledger,
    base_rev: str,
    head_rev: str,
    verify: RequestSource | None = None,
) -> RangeVerdict:
    """Judge the commits of ``base_rev..head_rev`` as the pre-push hook judges a push."""
    base = resolve(repo, base_rev, "BASE")
    head = resolve(repo, head_rev, "HEAD")
    merge_base = repo.merge_base(base.id, head.id)
    start = repo[merge_base] if merge_base is not None else None
    assert start is None or isinstance(start, pygit2.Commit)
    change = stages.Change(
        f"range {base_rev}..{head_rev}",
        start.tree if start is not None else None,
        head.tree,
        (head.id,),
        (base.id,),
    )
    commits = sum(1 for _ in stages.brought(repo, change))
    found = judge(repo, ledger, [change], verify)
    return RangeVerdict(base, head, change, commits, found, verify is not None)


def _s(items: list[Any]) -> str:
    return "" if len(items) == 1 else "s"
