"""``redline land``: a session's work onto a branch of the user's, after the guard.

The guard judges the landing as the pre-push hook judges a push: the change
from the target's tree to the tree it will have, with the commits it brings —
an unapproved flagged edit those carry, an edit commit whose evidence is gone,
a note that cannot be read, or a policy that does not parse refuses it, naming
each with how to clear it. The policy is HEAD's, the target's and the landed
tree's, joined (a landing can add a rule, never remove one). Then
gitops.landing makes the commit and moves the branch.

A landing never races the session's requests: it takes the session's tip only
when no request of it is being published (the session's journal is empty), so
the daemon may keep serving the session meanwhile; a request that lands after
the tip was taken is simply not part of this landing.

Landing is a person's command, like ``approve``: it runs in the person's
process, and the daemon offers no ``land`` method to the channel agents use.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import pygit2

from redline.engine.errors import RedlineError
from redline.engine.records import asdict, field, record
from redline.gitops import journal, landing, notes
from redline.gitops.errors import SessionError
from redline.gitops.repo import BRANCH_PREFIX, Layout
from redline.hooks import ledger as ledgers
from redline.hooks import stages
from redline.hooks.claims import Mismatch
from redline.hooks.evidence import Missing
from redline.hooks.gate import judge
from redline.hooks.guard import Blocked, Unreadable, describe
from redline.settings.policy import PolicyError, policy_from_tree

SETTLE_WAIT = 5.0  # seconds to wait for a request of the session being published


class LandRefused(RedlineError):
    """The guard refuses the landing: what it names, and the message saying how to clear it."""

    def __init__(
        self,
        message: str,
        found: list[Blocked] | None = None,
        unreadable: list[Unreadable] | None = None,
        missing: list[Missing] | None = None,
        mismatched: list[Mismatch] | None = None,
    ) -> None:
        self.found = found or []
        self.unreadable = unreadable or []
        self.missing = missing or []
        self.mismatched = mismatched or []
        super().__init__(message)

    def to_dict(self) -> dict[str, Any]:
        return {
            "blocked": [asdict(b) for b in self.found],
            "unreadable": [asdict(u) for u in self.unreadable],
            "missing": [asdict(m) for m in self.missing],
            "mismatched": [asdict(m) for m in self.mismatched],
        }


@record(frozen=True)
class Landed:
    session: str
    into: str  # the branch's short name
    mode: str  # fast-forward | merge | squash | nothing (the branch had it all)
    commit: str  # the branch's tip now
    previous: str  # ... before
    commits: list[str] = field(default_factory=list)  # the commits it brought
    edits: list[str] = field(default_factory=list)  # the edits they carry
    worktree: str | None = None  # the worktree brought up to date with it

    def to_dict(self) -> dict[str, Any]:
        return {"status": "nothing" if self.mode == "nothing" else "landed", **asdict(self)}


def land(
    repo: pygit2.Repository,
    layout: Layout,
    name: str,
    into: str | None,
    squash: bool,
    message: str | None,
    env: Mapping[str, str],
    wait: float = SETTLE_WAIT,
) -> Landed:
    """Land session ``name`` (open, or closed with its branch kept) on ``into``."""
    tip = settled_tip(repo, layout, name, wait)
    target = landing.target_ref(repo, layout, into)
    plan = landing.plan(repo, name, tip, target, squash)
    if plan is None:
        current = str(notes.ref_target(repo, target))
        return Landed(name, target.removeprefix("refs/heads/"), "nothing", current, current)
    check(repo, plan)
    worktree = landing.holder(layout, repo, target)
    if worktree is not None:
        landing.check_clean(worktree, plan, env)
    new, note = landing.make_commit(repo, plan, message)
    if note is not None:  # the evidence first: the squash is never on the branch without it
        landing.add_note(repo, new, note)
    landing.move_target(repo, plan, new, worktree, env)
    edits = [e for c in plan.commits for e in notes.trailer_edits(c.message or "")]
    return Landed(
        name,
        plan.branch,
        plan.mode,
        str(new),
        str(plan.old),
        [str(c.id) for c in plan.commits],
        list(dict.fromkeys(edits)),
        str(worktree) if worktree is not None else None,
    )


def settled_tip(repo: pygit2.Repository, layout: Layout, name: str, wait: float) -> pygit2.Oid:
    """The session branch's tip while no request of the session is being published.

    The tip is read first, the journal after: a request whose journal is gone by
    then has its commits and notes in place, so the tip read is one the session
    answered for.
    """
    branch = f"refs/heads/{BRANCH_PREFIX}{name}"
    deadline = time.monotonic() + wait
    while True:
        tip = notes.ref_target(repo, branch)
        if tip is None:
            raise SessionError(
                f"no session named {name!r} has a branch ({BRANCH_PREFIX}{name} does not "
                "exist); `redline session list` shows the open sessions"
            )
        if journal.read(layout.journal, name) is None:
            return tip
        if time.monotonic() >= deadline:
            raise SessionError(
                f"a request of session {name!r} is still being published (or one a crash "
                "interrupted waits to be finished); land again in a moment — if this persists, "
                f"the session's next request, or restarting its daemon (`redline daemon stop`), "
                "finishes it"
            )
        time.sleep(0.05)


def check(repo: pygit2.Repository, plan: landing.Plan) -> None:
    """LandRefused when the guard refuses ``plan`` (as the pre-push hook would the push)."""
    label = f"the landing of session {plan.session} on {plan.branch}"
    try:
        policy_from_tree(repo, plan.tree)
    except PolicyError as exc:
        raise LandRefused(
            f"redline land: refused — the guard policy in {label} cannot be read: {exc.source}, "
            f"{exc.where}: {exc.problem}. Fix {exc.file} in the session (the README's Guard "
            "section shows the format), then land again"
        ) from None
    change = stages.Change(label, plan.parent, plan.tree, (plan.tip,), (plan.old,))
    found = judge(repo, ledgers.load(repo), [change])
    if not found.ok:
        said = describe(
            found.blocked, found.unreadable, found.missing, "land", found.mismatched, found.ignored
        )
        raise LandRefused(said, found.blocked, found.unreadable, found.missing, found.mismatched)
