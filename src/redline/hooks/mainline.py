"""The policy that governs an agent: one people stand behind, never one an agent wrote.

Two rules make it so:

- it is read from committed trees a person controls — for a session, the commit
  it started from and the tip of the branch it was opened from (the main line),
  never the session's worktree; for a commit or a push, HEAD, the tree the
  change starts from and the tree it brings, joined (hooks.gate);
- an agent's edit of the policy files that no person approved does not count,
  even once it has reached one of those trees through a gap: for each such edit
  still in effect there (hooks.guard.in_effect), the policy before it is joined
  in as well, named "before unapproved edit …". So a weakening an agent slipped
  onto the main line — two lines swapped between rules, say — leaves every
  later edit judged by the rules it took away until a person approves it.

Joining keeps every rule of every side (engine.policy.Policy.stricter): a
policy can gain rules this way, never lose one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import pygit2

from redline.engine.errors import RedlineError
from redline.engine.policy import SETTINGS_FILES, Policy
from redline.engine.records import record
from redline.hooks.guard import edit_commits, in_effect
from redline.hooks.ledger import Ledger
from redline.settings.policy import PolicyError, policy_from_tree, stricter_policy

if TYPE_CHECKING:
    from redline.gitops.session import Session

POLICY_PATHS = frozenset(SETTINGS_FILES)
Side = tuple[pygit2.Tree | None, str]  # a tree and where it is, for messages
PolicyOf = Callable[[pygit2.Tree | None], Policy]  # the policy committed in a tree


def guarded_policy(
    repo: pygit2.Repository,
    ledger: Ledger,
    sides: Sequence[Side],
    policy_of: PolicyOf | None = None,
) -> Policy:
    """The policies of ``sides`` joined, with the policy before each unapproved agent edit
    of the policy files still in effect in one of them (PolicyError when no side parses).
    ``policy_of`` reads a tree's policy (default settings.policy.policy_from_tree)."""
    joined = stricter_policy(repo, sides, policy_of)
    trees = [tree for tree, _ in sides if tree is not None]
    for edit, before in _unapproved_policy_edits(repo, ledger, trees):
        try:
            earlier = policy_of(before) if policy_of is not None else policy_from_tree(repo, before)
        except PolicyError:
            continue  # the policy before the edit did not parse: nothing to keep from it
        joined = joined.stricter(earlier, f"before unapproved edit {edit}")
    return joined


def _unapproved_policy_edits(
    repo: pygit2.Repository, ledger: Ledger, trees: list[pygit2.Tree]
) -> list[tuple[str, pygit2.Tree | None]]:
    """(edit, the tree before it) for each unapproved agent edit of the policy files whose
    change is still in effect in one of ``trees``."""
    found = []
    for entry in ledger.entries.values():
        if entry.approved:
            continue
        paths = {op.path for op in entry.operations} | {str(f.get("path")) for f in entry.flagged}
        touched = sorted(paths & POLICY_PATHS)
        if not touched:
            continue
        for commit in edit_commits(repo, entry):  # every commit its note is on (hooks.guard)
            if any(in_effect(repo, commit, path, trees) for path in touched):
                found.append((entry.edit, commit.parents[0].tree if commit.parents else None))
                break
    return found


def origin_tip(repo: pygit2.Repository, session: Session) -> pygit2.Commit | None:
    """The tip of the branch ``session`` was opened from (None: it has none, or it is gone)."""
    if session.origin is None:
        return None
    try:
        return repo.references[session.origin].peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError):
        return None


def base_commit(repo: pygit2.Repository, session: Session) -> pygit2.Commit | None:
    try:
        commit = repo[pygit2.Oid(hex=session.base)]
    except (KeyError, ValueError):
        return None
    return commit if isinstance(commit, pygit2.Commit) else None


def mainline_sides(repo: pygit2.Repository, session: Session) -> list[Side]:
    """The committed trees whose policy governs ``session``: its base and its origin's tip."""
    sides: list[Side] = []
    base = base_commit(repo, session)
    if base is not None:
        sides.append((base.tree, "at the session's base"))
    tip = origin_tip(repo, session)
    if tip is not None and session.origin and (base is None or tip.id != base.id):
        sides.append((tip.tree, f"on {session.origin.removeprefix('refs/heads/')}"))
    return sides


@record
class Mainline:
    """A session's main-line policy for the daemon, read again only when the origin's tip
    moves (the base never does). Approvals given since only make it looser, so a policy
    read before them errs on the strict side until the tip moves. ``policy_of`` reads a
    tree's policy (the daemon's daemon.settings.CommittedSettings, which its permissions
    come from too)."""

    repo: pygit2.Repository
    session: Session
    load_ledger: Callable[[pygit2.Repository], Ledger]
    policy_of: PolicyOf | None = None
    _key: tuple[str | None, ...] | None = None
    _policy: Policy | None = None

    def __call__(self) -> Policy:
        """The policy (PolicyError when none of the main-line trees holds a policy that
        parses; RedlineError when none of them is in the repository)."""
        tip = origin_tip(self.repo, self.session)
        key = (self.session.base, str(tip.id) if tip is not None else None)
        if self._policy is None or key != self._key:
            sides = mainline_sides(self.repo, self.session)
            if not sides:
                raise RedlineError(
                    f"neither the base commit of session {self.session.name} nor the branch "
                    "it was opened from is in the repository, so the policy that governs it "
                    "is unknown; close the session and open a new one"
                )
            try:
                ledger = self.load_ledger(self.repo)
            except RedlineError:
                # The notes cannot be read (the edit cannot add its own either, and says
                # why): the main line's policy alone, read again next time.
                return stricter_policy(self.repo, sides, self.policy_of)
            self._policy = guarded_policy(self.repo, ledger, sides, self.policy_of)
            self._key = key
        return self._policy
