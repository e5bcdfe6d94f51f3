"""Git-mode apply: snapshot, plan, one commit per file group, then publish.

One :class:`SessionApplier` per session; its requests run one at a time. A
request has three steps: *prepare* (finish what a crash left, read the
branch tip, commit the worktree's external changes, load the policy),
*plan* (run the engine against that snapshot) and *land* (write the objects,
commit each file group, publish). Preparing and landing read and write the
repository, so they run where ``on_worker`` runs them — the daemon's one git
thread (pygit2 objects are not thread-safe) — while planning, the matching
that can take seconds, runs on the caller's thread and reaches the snapshot
(and the session's flagged edits) through ``on_worker`` too.

This module plans; the transaction around it (prepare, land, publish) is
gitops.transaction, the verdict on each planned group (the judging policy,
carried flags, refusals) is gitops.verdict, its evidence (note and commit
message) is gitops.evidence, and an undo is gitops.undo.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pygit2

from redline.engine.edit import EditRequest
from redline.engine.edit_plan import plan_edit
from redline.engine.errors import RequestError
from redline.engine.patch import PatchRequest, apply_patch, summarise
from redline.engine.patch_parse import parse_patch
from redline.engine.plan import GroupPlan, PatchOutcome
from redline.engine.policy import Policy
from redline.engine.read import ReadRequest, plan_read
from redline.engine.result import Result
from redline.engine.write import DeleteRequest, WriteRequest, plan_file
from redline.gitops import evidence
from redline.gitops import undo as undoing
from redline.gitops.carried import FlaggedEdits
from redline.gitops.notes import NoteOperation
from redline.gitops.publish import Fault
from redline.gitops.repo import Layout
from redline.gitops.session import Session
from redline.gitops.snapshot import TreeSnapshot
from redline.gitops.transaction import (
    Content,
    Group,
    OnWorker,
    SnapshotOnWorker,
    Transaction,
    content,
    here,
)
from redline.gitops.trees import Entry
from redline.gitops.verdict import Judge, PolicyReading, rejection
from redline.gitops.worktree import WorktreeFiles, check_path
from redline.gitops.writer import PLAIN, Writer

if TYPE_CHECKING:
    from redline.engine.requests import Request

__all__ = ["OnWorker", "PolicyReading", "SessionApplier", "here"]


class SessionApplier:
    def __init__(
        self,
        repo: pygit2.Repository,
        layout: Layout,
        session: Session,
        *,
        writer: Writer = PLAIN,
        fault: Fault | None = None,
        policy_for: Callable[[pygit2.Tree], Policy] | None = None,
        reading: PolicyReading | None = None,
        mainline: Callable[[], Policy] | None = None,
    ) -> None:
        """``policy_for`` reads the policy of a tree (default: derived from ``reading``);
        ``reading`` lets a change of redline's settings be compared, parsed, before and
        after; ``mainline`` gives the policy of the main line the session came from (the
        daemon's hooks.mainline.Mainline) — without it, the policy at the session's base."""
        self.repo = repo
        self.layout = layout
        self.session = session
        self.root = Path(session.worktree)
        self.flagged = FlaggedEdits(repo, session.base)
        self.judge = Judge(
            repo, session.base, self.flagged, policy_for=policy_for, reading=reading,
            mainline=mainline,
        )  # fmt: skip
        self.tx = Transaction(repo, layout, session, self.judge, writer, fault)
        self.dirty = self.tx.dirty
        self.writer = writer
        self.publisher = self.tx.publisher
        self.worktree = self.tx.worktree

    @property
    def before_write(self) -> Callable[[], None] | None:
        """A test seam: runs between committing and publishing."""
        return self.tx.before_write

    @before_write.setter
    def before_write(self, step: Callable[[], None] | None) -> None:
        self.tx.before_write = step

    def warm(self) -> None:
        """Read the worktree's index now, so that the first request does not pay for it."""
        self.publisher.warm()

    def check_worktree(self) -> None:
        self.tx.check_worktree()

    # -- the request -------------------------------------------------------------

    def apply(
        self,
        request: Request,
        model: str | None = None,
        dry_run: bool = False,
        on_worker: OnWorker = here,
    ) -> Result:
        """Prepare and land through ``on_worker``, plan on this thread (see the module doc)."""
        self.check_worktree()
        if isinstance(request, ReadRequest):
            result = self.read(request)
            result.session = self.session.name
            result.dry_run = dry_run
            return result
        targets = _target_paths(self.root, request)
        with self.tx.open(targets, dry_run, on_worker) as prepared:
            if prepared.refused is not None:
                return prepared.refused
            snapshot = SnapshotOnWorker(
                TreeSnapshot(self.repo, prepared.tree, self.root), on_worker, prepared.known
            )
            result, groups = self._plan(request, snapshot, prepared.request_id, model)
            result.session = self.session.name
            result.dry_run = dry_run
            if dry_run or not (groups or prepared.chain):
                return result  # nothing to commit: no trip to the git thread
            return on_worker(lambda: self.tx.land(prepared, snapshot, result, groups, request))

    def read(self, request: ReadRequest) -> Result:
        """The ``read`` result, planned by the engine against the session's worktree as it
        is on disk now (gitops.worktree.WorktreeFiles: what the agent sees, changes not yet
        committed included). Nothing is committed."""
        return plan_read(request, WorktreeFiles(self.root))

    def undo(self, edit: str) -> undoing.UndoResult:
        """Revert the commit of ``edit`` in a new commit of the session (gitops.undo)."""
        return undoing.undo_edit(self.tx, edit)

    # -- planning ----------------------------------------------------------------

    def _plan(
        self, request: Request, snapshot: SnapshotOnWorker, request_id: str, model: str | None
    ) -> tuple[Result, list[Group]]:
        """Plan ``request`` (engine) and judge each of its file groups: the commits to make.

        A group the policy refuses refuses the whole request, except a patch's: its
        other groups still apply."""
        outcome = self._planned(request, snapshot)
        result = outcome.result
        if outcome.plan is None:
            return result, []
        tool = request.tool
        groups: list[Group] = []
        rejected = False
        for plan_group in outcome.plan.applied:
            operations = evidence.operations(tool, result, plan_group)
            verdict = self.judge.judge(operations) + self.judge.carried(
                snapshot, plan_group.changes, whole=tool == "write"
            )
            verdict += self.judge.settings_changed(
                snapshot.read, {c.path: c.after for c in plan_group.changes}
            )
            if self.judge.refuses(verdict):
                if tool != "apply_patch":
                    refused = Result("rejected", path=result.path, error=rejection(verdict))
                    refused.matches = result.matches
                    refused.match_type, refused.confidence = result.match_type, result.confidence
                    refused.flags = verdict
                    return refused, []
                plan_group.error = rejection(verdict)
                plan_group.rejected = True
                rejected = True
                continue
            group = self._group(tool, request_id, model, result, plan_group, operations, snapshot)
            self.judge.flag(group.note, result, verdict)
            groups.append(group)
        if rejected:
            flags = result.flags
            result = summarise(outcome.plan)
            result.flags = flags
            if not outcome.plan.applied:
                result.status = "rejected"
        return result, groups

    def _planned(self, request: Request, snapshot: SnapshotOnWorker) -> PatchOutcome:
        """The engine's plan of ``request`` against the session's snapshot."""
        wanted = self.judge.policy.validated(getattr(request, "validate", False))
        if isinstance(request, EditRequest):
            return plan_edit(request, snapshot, wanted, _not_in_the_session)
        if isinstance(request, WriteRequest):
            return plan_file(request, snapshot, wanted)
        if isinstance(request, DeleteRequest):
            return plan_file(request, snapshot)
        assert isinstance(request, PatchRequest)
        return apply_patch(request.patch, snapshot, wanted)

    def _group(
        self,
        tool: str,
        request_id: str,
        model: str | None,
        result: Result,
        plan_group: GroupPlan,
        operations: list[NoteOperation],
        snapshot: SnapshotOnWorker,
    ) -> Group:
        """The commit of a planned file group, with its note (not yet judged)."""
        edit = evidence.new_edit()
        note = evidence.note(edit, request_id, self.session.name, tool, model, "agent", operations)
        note.cleaned = list(result.cleaned)
        if plan_group.validation:
            note.validation = [v.note_json() for v in plan_group.validation]
        files: dict[str, Entry | Content | None] = {
            c.path: content(snapshot, c) for c in plan_group.changes
        }
        if tool == "edit":
            if result.match_type and result.match_type != "exact":
                note.tolerances = [result.match_type]
            message = evidence.edit_message(self.session.name, plan_group.paths[0], result, edit)
        else:
            hunks = [h for h in result.hunks if h.path in plan_group.paths]
            message = evidence.group_message(
                self.session.name, tool, plan_group.operations, hunks, edit
            )
        return Group(list(files), files, note, message)


def _not_in_the_session(path: str, folder: bool) -> str:
    what = "a directory" if folder else "not in the session"
    return (
        f"{path!r} is {what}; name a file of the session's worktree (to create one, use the "
        "write tool)"
    )


def _target_paths(root: Path, request: Request) -> list[str]:
    """The valid paths a request names (invalid ones are refused later, when planning)."""
    if isinstance(request, EditRequest | WriteRequest | DeleteRequest | ReadRequest):
        named = [request.path]
    else:
        try:
            patch = parse_patch(request.patch)
        except RequestError:
            return []
        named = [p for op in patch.operations for p in (op.path, getattr(op, "move_to", None)) if p]
    valid = []
    for path in named:
        try:
            valid.append(check_path(root, path))
        except RequestError:
            continue
    return valid
