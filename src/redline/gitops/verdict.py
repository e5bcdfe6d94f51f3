"""The verdict on a session's change: the policy that judges it, the rules it breaks, the
flags it carries, and the refusal a ``reject`` policy gives.

The verdict is the guard's first line, so nothing the session does may soften it: an
edit is judged by the main line's policy (the daemon gives it: hooks.mainline — the
session's base and the tip of the branch it came from, without what unapproved agent
edits took away; else the policy at the base) with the rules of the policy in the
session's tree added (an agent's change to the policy, flagged and unapproved, can add
rules for later edits but never remove one); every change to the guard's own files is
flagged, the agent's own writes (committed as external changes) included; a change of
redline's settings is compared parsed, before and after, and the ways it weakens the
policy are named (engine.weakening); and a change that rewrites lines of an earlier
flagged, unapproved edit carries its flag (gitops.carried).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import pygit2

from redline.engine.errors import RedlineError
from redline.engine.policy import (
    GUARD_FILE_REASON,
    POLICY_CHANGE_RULE,
    SETTINGS_FILES,
    Policy,
    default_rules,
)
from redline.engine.result import Result
from redline.engine.weakening import weakenings
from redline.gitops.carried import CARRIED_FLAG, FlaggedEdits, carried_flag
from redline.gitops.notes import Note, NoteOperation, Verdict
from redline.gitops.trees import entry_at

if TYPE_CHECKING:
    from redline.engine.patch_plan import FileChange
    from redline.gitops.transaction import SnapshotOnWorker

Reader = Callable[[str], "bytes | None"]  # a file's bytes by path (None: no such file)
Flags = list[dict[str, str]]  # the rules a change breaks, as the note and the result say them


@dataclass(frozen=True)
class PolicyReading:
    """How the guard's files are read (settings.policy; gitops cannot import it): the policy
    they hold, and redline's settings table as parsed TOML, which a change of the policy or
    the permissions is compared by."""

    policy: Callable[[Reader], Policy]
    settings: Callable[[Reader], object]


class Judge:
    """Judges one session's changes by the policy of the request under way."""

    def __init__(
        self,
        repo: pygit2.Repository,
        base: str,
        flagged: FlaggedEdits,
        *,
        policy_for: Callable[[pygit2.Tree], Policy] | None = None,
        reading: PolicyReading | None = None,
        mainline: Callable[[], Policy] | None = None,
    ) -> None:
        self.repo = repo
        self.base = base
        self.flagged = flagged
        if policy_for is None and reading is not None:
            policy_for = partial(_tree_policy, repo, reading)
        self._policy_for = policy_for or (lambda tree: Policy(rules=default_rules()))
        self._reading = reading
        self._mainline = mainline
        self.policy = Policy(rules=default_rules())
        self._base_policy: tuple[Policy | None] | None = None  # read once: the base is fixed

    def load(self, tree: pygit2.Tree) -> None:
        """Judge by the policy for the session's ``tree`` from now on (see
        :meth:`judging_policy`; PolicyError when the tree's does not parse)."""
        self.policy = self.judging_policy(tree)

    def judging_policy(self, tree: pygit2.Tree) -> Policy:
        """The main line's policy (see the module doc) with the rules of the policy in the
        session's ``tree`` added: every rule of either applies, and nothing the session
        changes takes one away (PolicyError when the tree's does not parse)."""
        current = self._policy_for(tree)
        if self._mainline is not None:
            return self._mainline().stricter(current, "in the session")
        if self._base_policy is None:
            self._base_policy = (self._read_base_policy(),)
        base = self._base_policy[0]
        return current if base is None else base.stricter(current, "in the session")

    def _read_base_policy(self) -> Policy | None:
        """The policy at the session's base (None when it cannot be read: then the
        session's own, which must parse, is the one that judges)."""
        try:
            commit = self.repo[pygit2.Oid(hex=self.base)]
        except (KeyError, ValueError):
            return None
        if not isinstance(commit, pygit2.Commit):
            return None
        try:
            return self._policy_for(commit.tree)
        except RedlineError:
            return None

    def judge(self, operations: list[NoteOperation]) -> Flags:
        """The guard rules these operations break (none: they pass)."""
        return [
            {"rule": v.rule, "path": v.path, "reason": v.reason}
            for _, v in self.policy.judge(operations)
        ]

    def refuses(self, flags: Flags) -> bool:
        """Whether the policy refuses a change so flagged (its action is ``reject``)."""
        return bool(flags) and self.policy.action == "reject"

    def settings_changed(self, read: Reader, changed: Mapping[str, bytes | None]) -> Flags:
        """The flag of a change of redline's own settings (``.redline.toml``, or
        ``[tool.redline]`` in pyproject.toml: the guard policy, the permissions), found by
        comparing them parsed, before (``read``) and after (``changed`` over it); any change
        needs a person, and the ways it weakens the policy are named (engine.weakening)."""
        if self._reading is None or not changed.keys() & set(SETTINGS_FILES):
            return []

        def after(path: str) -> bytes | None:
            return changed[path] if path in changed else read(path)

        was, now = self._reading.settings(read), self._reading.settings(after)
        if was == now:
            return []
        held = now if isinstance(now, tuple) else was
        where = str(held[0]) if isinstance(held, tuple) else SETTINGS_FILES[0]
        try:
            old: Policy | None = self._reading.policy(read)
        except RedlineError:
            old = None
        try:
            weaker = weakenings(old, self._reading.policy(after)) if old is not None else []
        except RedlineError as exc:
            reason = f"leaves redline's settings in {where} unreadable ({exc})"
        else:
            if weaker:
                reason = "weakens the guard policy: " + "; ".join(weaker)
            elif any(v.reason == GUARD_FILE_REASON for v in self.policy.check(where, None, 0)):
                return []  # flagged as a guard file already; nothing more to say
            else:
                reason = (
                    f"changes redline's own settings in {where} (its guard policy or its "
                    "permissions)"
                )
        return [{"rule": POLICY_CHANGE_RULE, "path": where, "reason": reason}]

    def carried(
        self, snapshot: SnapshotOnWorker, changes: tuple[FileChange, ...], whole: bool = False
    ) -> Flags:
        """The flags changes carry over from earlier flagged edits whose lines they rewrite,
        move or copy (gitops.carried; ``whole``: files written whole, by ``write``). A
        deleted file takes its lines along, so it carries nothing. Without any flagged edit
        in the session there is nothing to carry: no trip to the git thread then."""
        if not self.flagged.any():
            return []
        found = []
        for change in changes:
            carried = partial(
                self.flagged.carried_by, change.path, change.before, change.after,
                snapshot.snapshot.read, change.origin, whole,
            )  # fmt: skip
            found += [carried_flag(change.path, e, c) for e, c in snapshot.on_worker(carried)]
        return found

    def verdict(self, flags: Flags) -> Verdict:
        if not flags:
            return Verdict("pass", self.policy.source)
        return Verdict("flagged", self.policy.source, flags)

    def flag(self, note: Note, result: Result, flags: Flags) -> None:
        note.policy = self.verdict(flags)
        if flags:
            result.flags = [*result.flags, *flags]


def rejection(verdict: Flags) -> str:
    first = verdict[0]
    said = f"rejected by guard rule {first['rule']}: {first['reason']} at {first['path']}. "
    if first["rule"] == CARRIED_FLAG:
        return said + (
            f"Ask a person to review and approve edit {first['edit']} (`redline approve "
            f"{first['edit']}`), then retry; or leave those lines alone"
        )
    if first["reason"] == GUARD_FILE_REASON or first["rule"] == POLICY_CHANGE_RULE:
        return said + "No agent edit passes there, exact or not: ask a person to make this change"
    return said + (
        "Protected paths take only edits the policy allows: copy old_string exactly from the "
        "file (an exact edit always passes), or ask a person to make this change"
    )


def _tree_policy(repo: pygit2.Repository, reading: PolicyReading, tree: pygit2.Tree) -> Policy:
    return reading.policy(partial(blob_data, repo, tree))


def blob_data(repo: pygit2.Repository, tree: pygit2.Tree, path: str) -> bytes | None:
    entry = entry_at(tree, path)
    obj = repo.get(entry.id) if entry is not None else None
    return obj.data if isinstance(obj, pygit2.Blob) else None
