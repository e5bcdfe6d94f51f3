"""Git-mode apply: snapshot, plan, one commit per file group, then publish.

One :class:`SessionApplier` per session; its requests run one at a time. A
request has three steps: *prepare* (finish what a crash left, read the
branch tip, commit the worktree's external changes, load the policy),
*plan* (run the engine against that snapshot) and *land* (write the objects,
commit each file group, publish). Preparing and landing read and write the
repository, so they run where ``on_worker`` runs them — the daemon's one git
thread (pygit2 objects are not thread-safe) — while planning, the matching
that can take seconds, runs on the caller's thread and reaches the snapshot
(and the session's flagged edits) through ``on_worker`` too. Another
session's request may land in between: landing moves the branch only from
the tip the plan was made on (a compare-and-swap), so a branch moved
meanwhile leaves nothing written. What changed in the worktree comes from
gitops.snapshot, the evidence is a gitops.notes.Note, the policy's verdict
comes from engine.policy, and the commits become visible through
gitops.publish.

The verdict is the guard's first line, so nothing the session does may soften
it: an edit is judged by the main line's policy (the daemon gives it:
hooks.mainline — the session's base and the tip of the branch it came from,
without what unapproved agent edits took away; else the policy at the base) with
the rules of the policy in the session's tree added (an agent's change to the
policy, flagged and unapproved, can add rules for later edits but never remove
one); every change to the guard's own files is flagged, the agent's own writes
(committed as external changes) included; a change of redline's settings is
compared parsed, before and after, and the ways it weakens the policy are named
(engine.weakening); and a change that rewrites lines of an earlier flagged,
unapproved edit carries its flag (gitops.carried).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

import pygit2

from redline.engine.confidence import shown_confidence
from redline.engine.edit import EditRequest, apply_edit
from redline.engine.errors import RedlineError, RequestError
from redline.engine.patch import PatchRequest, apply_patch, changed_after_planning, summarise
from redline.engine.patch_parse import parse_patch
from redline.engine.patch_plan import FileChange
from redline.engine.paths import safe_text, shown_path
from redline.engine.policy import (
    GUARD_FILE_REASON,
    POLICY_CHANGE_RULE,
    SETTINGS_FILES,
    Policy,
    default_rules,
)
from redline.engine.read import (
    ReadRequest,
    is_a_directory,
    no_such_file,
    read_text,
    unreadable,
)
from redline.engine.result import Commit, Result
from redline.engine.weakening import weakenings
from redline.engine.write import DeleteRequest, WriteRequest, operation, plan_file
from redline.gitops import notes, sent
from redline.gitops import undo as undoing
from redline.gitops.carried import CARRIED_FLAG, FlaggedEdits, carried_flag
from redline.gitops.errors import WorktreeGone
from redline.gitops.notes import Note, NoteOperation, Verdict
from redline.gitops.objects import write_blob, write_commit
from redline.gitops.publish import Fault, Landing, Publisher, stamp
from redline.gitops.repo import Layout, signature
from redline.gitops.session import Session
from redline.gitops.snapshot import DirtyPaths, TreeSnapshot, changed_paths
from redline.gitops.trees import FILE, LINK, Entry, entry_at, with_entries
from redline.gitops.worktree import check_path, read_bytes
from redline.gitops.writer import PLAIN, Writer

if TYPE_CHECKING:
    from redline.engine.requests import Request

T = TypeVar("T")
Reader = Callable[[str], "bytes | None"]  # a file's bytes by path (None: no such file)


@dataclass(frozen=True)
class PolicyReading:
    """How the guard's files are read (settings.policy; gitops cannot import it): the policy
    they hold, and redline's settings table as parsed TOML, which a change of the policy or
    the permissions is compared by."""

    policy: Callable[[Reader], Policy]
    settings: Callable[[Reader], object]


class OnWorker(Protocol):
    """Runs a step on the git thread and returns its value (the daemon's worker)."""

    def __call__(self, step: Callable[[], T]) -> T: ...


def here(step: Callable[[], T]) -> T:
    """Run ``step`` on this thread (a caller that is the git thread itself)."""
    return step()


@dataclass(frozen=True)
class _Content:
    """A file's planned bytes, written as a blob when the request lands."""

    data: bytes
    mode: int


@dataclass
class _Group:
    paths: list[str]
    files: dict[str, Entry | _Content | None]
    note: Note
    message: str
    carried: list[dict[str, str]] = field(default_factory=list)  # from earlier flagged edits


@dataclass
class _Prepared:
    """What the prepare step read and committed, for planning and landing."""

    request_id: str
    tip_before: pygit2.Oid  # the branch tip the request starts from
    tip: pygit2.Oid  # ... after the external changes' commit, if any
    tree: pygit2.Tree
    external: dict[str, Entry | None]
    chain: list[tuple[pygit2.Oid, _Group]] = field(default_factory=list)
    refused: Result | None = None  # the policy does not load: nothing is planned


class _OnWorker:
    """The snapshot, read on the git thread from a planning thread (see the module doc)."""

    def __init__(self, snapshot: TreeSnapshot, on_worker: OnWorker) -> None:
        self.snapshot = snapshot
        self.on_worker = on_worker

    def relative(self, path: str) -> str:
        return self.snapshot.relative(path)

    def read(self, path: str) -> bytes | None:
        return self.on_worker(lambda: self.snapshot.read(path))

    def is_dir(self, path: str) -> bool:
        return self.on_worker(lambda: self.snapshot.is_dir(path))

    def mode(self, path: str) -> int | None:
        return self.on_worker(lambda: self.snapshot.mode(path))


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
        self.dirty = DirtyPaths()
        self.writer = writer
        self.publisher = Publisher(repo, layout, session, writer, fault)
        self.worktree = self.publisher.worktree
        if policy_for is None and reading is not None:
            policy_for = partial(_tree_policy, repo, reading)
        self._policy_for = policy_for or (lambda tree: Policy(rules=default_rules()))
        self._reading = reading
        self._mainline = mainline
        self._policy = Policy(rules=default_rules())
        self._base_policy: tuple[Policy | None] | None = None  # read once: the base is fixed
        self.flagged = FlaggedEdits(repo, session.base)
        self.before_write: Callable[[], None] | None = None  # test seam

    def warm(self) -> None:
        """Read the worktree's index now, so that the first request does not pay for it."""
        self.publisher.warm()

    def check_worktree(self) -> None:
        """WorktreeGone when the worktree folder, or its ``.git`` link, was removed: read as
        it is, every file would look deleted (and be committed so)."""
        try:
            link = (self.root / ".git").read_text(encoding="utf-8", errors="replace")
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            raise WorktreeGone(self.session.name, self.session.worktree) from None
        admin = link.removeprefix("gitdir:").strip()
        if not admin or not (self.root / admin).is_dir():  # pruned by `git worktree prune`
            raise WorktreeGone(self.session.name, self.session.worktree)

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
        prepared = on_worker(lambda: self._prepare(targets, dry_run))
        published = False
        try:
            if prepared.refused is not None:
                return prepared.refused
            snapshot = _OnWorker(TreeSnapshot(self.repo, prepared.tree, self.root), on_worker)
            result, groups = self._plan(request, snapshot, prepared.request_id, model)
            result.session = self.session.name
            result.dry_run = dry_run
            if dry_run:
                return result
            result, published = on_worker(
                lambda: self._land(prepared, snapshot, result, groups, request)
            )
            return result
        finally:
            if prepared.external and not published:
                # Not committed this time (a dry run, a refusal, an error): the next
                # snapshot must look at these paths again.
                for path in prepared.external:
                    self.dirty.add(path)

    def read(self, request: ReadRequest) -> Result:
        """The ``read`` result: the file as the session's worktree holds it now (what the
        agent sees, changes not yet committed included). Nothing is committed; the same
        path policy as every other request (no symbolic links, nothing in git's data)."""
        try:
            path = check_path(self.root, request.path)
            data = read_bytes(self.root, path)
        except RequestError as exc:
            return Result("invalid", path=request.path, error=str(exc))
        except OSError as exc:
            return Result("invalid", path=request.path, error=unreadable(request.path, exc))
        if data is None:
            if (self.root / path).is_dir():
                return Result("invalid", path=path, error=is_a_directory(path, "read"))
            return Result("invalid", path=path, error=no_such_file(path, "read"))
        return read_text(data, request, path)

    def undo(self, edit: str) -> undoing.UndoResult:
        """Revert the commit of ``edit`` in a new commit of the session, published like an
        edit's (on the git thread: the caller is the worker). Judged as an edit is: the
        guard's own files always need a person, and taking back lines an unapproved
        flagged edit depends on carries its flag; so an undo can never clear a flag."""
        target = undoing.find_edit(self.repo, self.session, edit)
        parent = target.parents[0].tree
        paths = sorted({p for d in parent.diff_to_tree(target.tree).deltas
                        for p in (d.old_file.path, d.new_file.path)})  # fmt: skip
        outcome = undoing.UndoResult("no_change", self.session.name, edit, str(target.id))
        note = notes.read_note(self.repo, target.id) or {}
        outcome.edit = str(note.get("edit") or edit)
        prepared = self._prepare(paths, dry_run=False)
        published = False
        try:
            if prepared.refused is not None:
                outcome.status, outcome.error = "rejected", prepared.refused.error
                return outcome
            reverted = undoing.revert(self.repo, target, prepared.tip)
            if reverted.conflicts:
                outcome.status, outcome.conflicts = "conflict", reverted.conflicts
                outcome.error = undoing.conflict_message(outcome.edit, reverted.conflicts)
                return outcome
            if not reverted.files:
                outcome.error = (
                    f"edit {outcome.edit}'s changes are no longer in the session (undone "
                    "already, or changed back since): nothing to undo"
                )
                return outcome
            group = self._undo_group(prepared, target, outcome.edit, reverted.files)
            verdict = group.note.policy.violations if group.note.policy else []
            if verdict and self._policy.action == "reject":
                outcome.status, outcome.flags = "rejected", verdict
                outcome.error = _rejection(verdict)
                return outcome
            tip, _tree = self._commit(prepared.tip, prepared.tree, group)
            chain = [*prepared.chain, (tip, group)]
            landings = [Landing(oid, g.note.to_json()) for oid, g in chain]
            outcome.hint = self.publisher.publish(
                prepared.request_id, prepared.tip_before, landings, reverted.files,
                prepared.external,
            )  # fmt: skip
            published = True
            self.flagged.learned([(landing.oid, landing.note) for landing in landings])
            outcome.status, outcome.flags = "undone", verdict
            outcome.commits = [
                {"commit": str(oid), "edit": g.note.edit, "paths": g.paths,
                 "source": g.note.source}
                for oid, g in chain
            ]  # fmt: skip
            return outcome
        finally:
            if prepared.external and not published:
                for path in prepared.external:
                    self.dirty.add(path)

    def _undo_group(
        self,
        prepared: _Prepared,
        target: pygit2.Commit,
        edit: str,
        files: dict[str, Entry | None],
    ) -> _Group:
        """The commit that reverts ``target`` (the edit ``edit``), with its note."""
        paths = sorted(files)
        operations = [NoteOperation(p, "undo") for p in paths]
        carried = []
        for path in paths:
            entry = files[path]
            after = self.repo.get(entry.oid) if entry is not None else None
            if entry is None or entry.mode == LINK or not isinstance(after, pygit2.Blob):
                continue
            before = _blob_data(self.repo, prepared.tree, path)
            earlier = self.flagged.rewritten_by(path, before, after.data)
            # Taking back the undone edit's own lines launders nothing: they go.
            carried += [carried_flag(path, e) for e in earlier if e.commit != target.id]
        new_edit = secrets.token_hex(6)
        request = prepared.request_id
        note = self._note(new_edit, request, undoing.UNDO_TOOL, None, "undo", operations)
        note.undoes = {"edit": edit, "commit": str(target.id)}
        carried += self._settings_changed(
            partial(_blob_data, self.repo, prepared.tree), _blobs(self.repo, files)
        )
        note.policy = self._verdict(self._judge(operations) + carried)
        summary = target.message.splitlines()[0] if target.message else ""
        message = (
            f"redline: undo edit {edit}\n\n"
            f"Reverts commit {target.id} ({summary}) in session {self.session.name}.\n\n"
            f"Redline-Undoes: {edit}\nRedline-Edit: {new_edit}\n"
        )
        return _Group(paths, dict(files), note, message, carried)

    def _prepare(self, targets: list[str], dry_run: bool) -> _Prepared:
        """On the git thread: the tip to plan on, with the external changes committed."""
        self.check_worktree()
        if self.publisher.pending():
            # A request that landed but could not finish (or a crash): finish it first,
            # so that the worktree matches the branch before it is read.
            self.publisher.recover()
        tip, tree = self._tip()
        self.flagged.sync(tip)
        external = self._external_changes(tree, targets)
        prepared = _Prepared(secrets.token_hex(6), tip, tip, tree, external)
        try:
            external_group = None
            if external and not dry_run:
                external_group = self._external_group(prepared.request_id, external, tree)
                prepared.tip, prepared.tree = self._commit(tip, tree, external_group)
                prepared.chain.append((prepared.tip, external_group))
            try:
                self._policy = self._judging_policy(prepared.tree)
            except RedlineError as exc:
                refused = Result("rejected", error=f"{exc} — no edit is applied until it is fixed")
                refused.session = self.session.name
                prepared.refused = refused
                return prepared
            if external_group is not None:
                external_group.note.policy = self._verdict(
                    self._judge(external_group.note.operations) + external_group.carried
                )
        except BaseException:
            for path in external:
                self.dirty.add(path)
            raise
        return prepared

    def _land(
        self,
        prepared: _Prepared,
        snapshot: _OnWorker,
        result: Result,
        planned: list[_Group],
        request: Request,
    ) -> tuple[Result, bool]:
        """On the git thread: commit the groups and publish; the result, and whether the
        external changes were committed. Each agent group's note keeps the request as
        sent (gitops.sent)."""
        tip, tree = prepared.tip, prepared.tree
        chain = list(prepared.chain)
        kept = sent.keep(self.repo, request, self.writer) if planned else None
        for group in planned:
            group.note.sent = kept
        groups = [self._stored(group) for group in planned]
        for group in groups:
            tip, tree = self._commit(tip, tree, group)
            chain.append((tip, group))
        if not chain:
            return result, False
        if groups:
            if self.before_write is not None:
                self.before_write()
            moved = self._changed_on_disk(snapshot.snapshot, groups)
            if moved is not None:
                # Publish the external commit alone; the edit is not applied.
                chain = [c for c in chain if c[1].note.source == "external"]
                refused = changed_after_planning(moved)
                refused.session = self.session.name
                result, groups = refused, []
                if not chain:
                    return result, False
        files: dict[str, Entry | None] = {}
        for group in groups:
            files.update(_entries(group))
        landings = [Landing(oid, g.note.to_json()) for oid, g in chain]
        unfinished = self.publisher.publish(
            prepared.request_id, prepared.tip_before, landings, files, prepared.external
        )
        self.flagged.learned([(landing.oid, landing.note) for landing in landings])
        if unfinished is not None:
            result.hint = unfinished
        result.commits = [
            Commit(str(oid), g.note.edit, g.paths, g.note.source)  # type: ignore[arg-type]
            for oid, g in chain
        ]
        return result, True

    def _stored(self, group: _Group) -> _Group:
        """``group`` with its planned contents written as blobs."""
        files: dict[str, Entry | _Content | None] = {
            path: Entry(write_blob(self.repo, f.data, self.writer), f.mode)
            if isinstance(f, _Content)
            else f
            for path, f in group.files.items()
        }
        return _Group(group.paths, files, group.note, group.message, group.carried)

    def _tip(self) -> tuple[pygit2.Oid, pygit2.Tree]:
        target = notes.ref_target(self.repo, self.session.branch)
        if target is None:
            raise RequestError(
                f"the branch of session {self.session.name!r} is gone; close the session "
                "and open a new one"
            )
        commit = self.repo[target]
        assert isinstance(commit, pygit2.Commit)
        return target, commit.tree

    def _external_changes(self, tree: pygit2.Tree, targets: list[str]) -> dict[str, Entry | None]:
        candidates = self.dirty.take()
        if candidates is not None:
            candidates = {p for p in candidates if not self._still_ours(p)}
            # File events arrive with a delay: the files this request touches are
            # always looked at, so a change the agent just made is never missed.
            candidates.update(targets)
        else:
            self.publisher.written.clear()
        return changed_paths(self.repo, self.worktree, tree, candidates)

    def _still_ours(self, path: str) -> bool:
        written = self.publisher.written.get(path)
        if written is None:
            return False
        try:
            return stamp(self.root / path) == written
        except OSError:
            return False

    def _judging_policy(self, tree: pygit2.Tree) -> Policy:
        """The main line's policy (see ``__init__``) with the rules of the policy in the
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
            commit = self.repo[pygit2.Oid(hex=self.session.base)]
        except (KeyError, ValueError):
            return None
        if not isinstance(commit, pygit2.Commit):
            return None
        try:
            return self._policy_for(commit.tree)
        except RedlineError:
            return None

    def _external_group(
        self, request_id: str, changes: dict[str, Entry | None], tree: pygit2.Tree
    ) -> _Group:
        """The commit of changes made in the worktree by other tools (judged once the
        policy is known: see ``_apply``)."""
        edit = secrets.token_hex(6)
        paths = sorted(changes)
        operations = [NoteOperation(p, "delete" if changes[p] is None else "write") for p in paths]
        carried = []
        for path in paths:
            entry = changes[path]
            if entry is None:
                continue  # a deleted file takes its lines along: nothing is carried
            after = self.repo.get(entry.oid)
            if entry.mode == LINK or not isinstance(after, pygit2.Blob):
                continue
            earlier = self.flagged.carried_by(
                path, _blob_data(self.repo, tree, path), after.data,
                partial(_blob_data, self.repo, tree), whole=True,
            )  # fmt: skip
            carried += [carried_flag(path, e, c) for e, c in earlier]
        carried += self._settings_changed(
            partial(_blob_data, self.repo, tree), _blobs(self.repo, changes)
        )
        note = self._note(edit, request_id, "external", None, "external", operations)
        count = f"{len(paths)} file" + ("" if len(paths) == 1 else "s")
        message = (
            f"redline: external changes to {count}\n\n"
            f"Changes made in session {self.session.name} by other tools, committed before "
            f"redline's next edit.\n\n" + "\n".join(f"  - {shown_path(p)}" for p in paths[:50])
        )
        files: dict[str, Entry | _Content | None] = dict(changes)
        return _Group(paths, files, note, message + f"\n\nRedline-Edit: {edit}\n", carried)

    def _plan(
        self, request: Request, snapshot: _OnWorker, request_id: str, model: str | None
    ) -> tuple[Result, list[_Group]]:
        if isinstance(request, EditRequest):
            return self._plan_edit(request, snapshot, request_id, model)
        if isinstance(request, WriteRequest | DeleteRequest):
            wanted = self._validates(request) if isinstance(request, WriteRequest) else None
            outcome = plan_file(request, snapshot, wanted)
            tool = request.tool
        else:
            assert isinstance(request, PatchRequest)
            outcome = apply_patch(request.patch, snapshot, self._validates(request))
            tool = "apply_patch"
        result = outcome.result
        if outcome.plan is None:
            return result, []
        groups = []
        rejected = False
        for plan_group in outcome.plan.applied:
            if not plan_group.changes:
                continue
            files: dict[str, Entry | _Content | None] = {
                c.path: _content(snapshot, c) for c in plan_group.changes
            }
            hunks = [h for h in result.hunks if h.path in plan_group.paths]
            operations = [
                NoteOperation.matched(
                    h.path, "update", h.match_type, h.confidence, h.start_line, h.end_line,
                    h.matched_text, other_candidates=h.other_matches, anchor_found=h.anchor_found,
                    tolerated=[t.to_json() for t in h.tolerated],
                )
                for h in hunks
            ]  # fmt: skip
            operations += [
                NoteOperation(c.path, _op(c) if tool == "apply_patch" else operation(c))
                for c in plan_group.changes
                if tool != "apply_patch" or c.before is None or c.after is None
            ]
            verdict = self._judge(operations) + self._carried(
                snapshot, plan_group.changes, whole=tool == "write"
            )
            verdict += self._settings_changed(
                snapshot.read, {c.path: c.after for c in plan_group.changes}
            )
            if verdict and self._policy.action == "reject":
                if tool != "apply_patch":
                    refused = Result("rejected", path=result.path, error=_rejection(verdict))
                    refused.flags = verdict
                    return refused, []
                plan_group.error = _rejection(verdict)
                plan_group.rejected = True
                rejected = True
                continue
            edit = secrets.token_hex(6)
            note = self._note(edit, request_id, tool, model, "agent", operations)
            note.cleaned = list(result.cleaned)
            if plan_group.validation:
                note.validation = [v.note_json() for v in plan_group.validation]
            self._flag(note, result, verdict)
            summary = safe_text(", ".join(plan_group.operations), keep="")
            message = f"redline: {summary}"[:72]
            body = f"{message}\n\nApplied by redline session {self.session.name} ({tool})."
            if hunks:  # what the note says, in the commit too (hooks.claims compares them)
                body += f" Hunks matched: {', '.join(h.match_type for h in hunks)}."
            groups.append(_Group(list(files), files, note, f"{body}\n\nRedline-Edit: {edit}\n"))
        if rejected:
            flags = result.flags
            result = summarise(outcome.plan)
            result.flags = flags
            if not outcome.plan.applied:
                result.status = "rejected"
        return result, groups

    def _plan_edit(
        self, request: EditRequest, snapshot: _OnWorker, request_id: str, model: str | None
    ) -> tuple[Result, list[_Group]]:
        try:
            path = check_path(self.root, request.path)
            data = snapshot.read(path)
        except RequestError as exc:
            return Result("invalid", path=request.path, error=str(exc)), []
        if data is None:
            what = "a directory" if snapshot.is_dir(path) else "not in the session"
            return Result(
                "invalid",
                path=request.path,
                error=f"{request.path!r} is {what}; name a file of the session's worktree "
                "(to create one, use the write tool)",
            ), []
        if not request.validate and self._policy.validates(path):
            request = replace(request, validate=True)
        outcome = apply_edit(data, request)
        result = outcome.result
        if outcome.data is None:
            return result, []
        content = _Content(outcome.data, snapshot.mode(path) or FILE)
        operations = [
            NoteOperation.matched(
                path, "edit", m.match_type, m.confidence, m.start_line, m.end_line, m.matched_text,
                tolerated=[t.to_json() for t in result.tolerated
                           if not t.lines or m.start_line <= t.lines[0] <= m.end_line],
            )
            for m in result.matches
        ]  # fmt: skip
        after = outcome.data
        verdict = self._judge(operations) + [
            carried_flag(path, e)
            for e in snapshot.on_worker(lambda: self.flagged.rewritten_by(path, data, after))
        ]
        verdict += self._settings_changed(snapshot.read, {path: after})
        if verdict and self._policy.action == "reject":
            refused = Result("rejected", path=path, error=_rejection(verdict))
            refused.matches = result.matches
            refused.match_type, refused.confidence = result.match_type, result.confidence
            refused.flags = verdict
            return refused, []
        edit = secrets.token_hex(6)
        note = self._note(edit, request_id, "edit", model, "agent", operations)
        note.cleaned = list(result.cleaned)
        if outcome.validation is not None:
            note.validation = [outcome.validation.note_json()]
        self._flag(note, result, verdict)
        if result.match_type and result.match_type != "exact":
            note.tolerances = [result.match_type]
        kind = (
            f"{result.match_type} {shown_confidence(result.confidence)}"
            if result.match_type
            else "edit"
        )
        message = f"redline: edit {shown_path(path)} ({kind})"
        body = f"{message}\n\nApplied by redline session {self.session.name} (edit)."
        return result, [_Group([path], {path: content}, note, f"{body}\n\nRedline-Edit: {edit}\n")]

    def _validates(self, request: PatchRequest | WriteRequest) -> Callable[[str], bool] | None:
        """Which paths of a patch or write must still parse: all when the request asks,
        else those the policy names (None: none; a delete leaves nothing to parse)."""
        if getattr(request, "validate", False):
            return lambda path: True
        return self._policy.validates if self._policy.validate else None

    def _judge(self, operations: list[NoteOperation]) -> list[dict[str, str]]:
        """The guard rules these operations break (none: they pass)."""
        return [
            {"rule": v.rule, "path": v.path, "reason": v.reason}
            for _, v in self._policy.judge(operations)
        ]

    def _settings_changed(
        self, read: Reader, changed: Mapping[str, bytes | None]
    ) -> list[dict[str, str]]:
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
            elif any(v.reason == GUARD_FILE_REASON for v in self._policy.check(where, None, 0)):
                return []  # flagged as a guard file already; nothing more to say
            else:
                reason = (
                    f"changes redline's own settings in {where} (its guard policy or its "
                    "permissions)"
                )
        return [{"rule": POLICY_CHANGE_RULE, "path": where, "reason": reason}]

    def _carried(
        self, snapshot: _OnWorker, changes: tuple[FileChange, ...], whole: bool = False
    ) -> list[dict[str, str]]:
        """The flags changes carry over from earlier flagged edits whose lines they rewrite,
        move or copy (gitops.carried; ``whole``: files written whole, by ``write``). A
        deleted file takes its lines along, so it carries nothing."""
        found = []
        for change in changes:
            carried = partial(
                self.flagged.carried_by, change.path, change.before, change.after,
                snapshot.snapshot.read, change.origin, whole,
            )  # fmt: skip
            found += [carried_flag(change.path, e, c) for e, c in snapshot.on_worker(carried)]
        return found

    def _verdict(self, verdict: list[dict[str, str]]) -> Verdict:
        if not verdict:
            return Verdict("pass", self._policy.source)
        return Verdict("flagged", self._policy.source, verdict)

    def _flag(self, note: Note, result: Result, verdict: list[dict[str, str]]) -> None:
        note.policy = self._verdict(verdict)
        if verdict:
            result.flags = [*result.flags, *verdict]

    def _note(
        self,
        edit: str,
        request_id: str,
        tool: str,
        model: str | None,
        source: str,
        operations: list[NoteOperation],
    ) -> Note:
        return Note(edit, request_id, self.session.name, tool, model, source, operations)

    # -- commits ------------------------------------------------------------------------

    def _commit(
        self, parent: pygit2.Oid, tree: pygit2.Tree, group: _Group
    ) -> tuple[pygit2.Oid, pygit2.Tree]:
        new_tree = with_entries(self.repo, tree, _entries(group))
        sig = signature(self.repo)
        oid = write_commit(self.repo, new_tree, [parent], sig, sig, group.message, self.writer)
        built = self.repo[new_tree]
        assert isinstance(built, pygit2.Tree)
        group.note.files = notes.files_at(tree, built, group.files)
        return oid, built

    def _changed_on_disk(self, snapshot: TreeSnapshot, groups: list[_Group]) -> str | None:
        """The first planned file whose bytes on disk moved away from the snapshot."""
        for group in groups:
            for path in group.files:
                if read_bytes(self.root, path) != snapshot.read(path):
                    return path
        return None


def _content(snapshot: _OnWorker, change: FileChange) -> _Content | None:
    if change.after is None:
        return None
    mode = snapshot.mode(change.origin or change.path) or FILE
    if mode == LINK:
        mode = FILE
    return _Content(change.after, mode)


def _entries(group: _Group) -> dict[str, Entry | None]:
    """The group's files as tree entries (its contents stored, see ``_stored``)."""
    entries: dict[str, Entry | None] = {}
    for path, f in group.files.items():
        assert not isinstance(f, _Content), "stored before it is committed"
        entries[path] = f
    return entries


def _rejection(verdict: list[dict[str, str]]) -> str:
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
    return reading.policy(partial(_blob_data, repo, tree))


def _blobs(
    repo: pygit2.Repository, files: Mapping[str, Entry | _Content | None]
) -> dict[str, bytes | None]:
    """The bytes of the settings files among ``files`` (tree entries; None: deleted)."""
    out: dict[str, bytes | None] = {}
    for path in set(files) & set(SETTINGS_FILES):
        entry = files[path]
        if entry is None:
            out[path] = None
        elif isinstance(entry, _Content):
            out[path] = entry.data
        else:
            blob = repo.get(entry.oid)
            out[path] = blob.data if isinstance(blob, pygit2.Blob) else None
    return out


def _blob_data(repo: pygit2.Repository, tree: pygit2.Tree, path: str) -> bytes | None:
    entry = entry_at(tree, path)
    obj = repo.get(entry.id) if entry is not None else None
    return obj.data if isinstance(obj, pygit2.Blob) else None


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


def _op(change: FileChange) -> str:
    if change.before is None:
        return "add"
    if change.after is None:
        return "delete"
    return "update"
