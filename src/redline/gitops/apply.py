"""Git-mode apply: snapshot, plan, one commit per file group, notes, worktree, journal.

One :class:`SessionApplier` per session, always used from the repository's
single worker thread.
"""

from __future__ import annotations

import contextlib
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pygit2

from redline.engine.edit import EditRequest, apply_edit
from redline.engine.errors import RedlineError, RequestError
from redline.engine.patch import PatchRequest, apply_patch, changed_after_planning, summarise
from redline.engine.patch_parse import parse_patch
from redline.engine.patch_plan import FileChange
from redline.engine.policy import Policy
from redline.engine.result import Commit, Result
from redline.gitops import journal, notes, refs
from redline.gitops.index import IndexPatcher, repair_checksum
from redline.gitops.objects import write_blob, write_commit
from redline.gitops.packs import flush_staged
from redline.gitops.repo import NOTES_REF, Layout, signature
from redline.gitops.session import Session
from redline.gitops.snapshot import TreeSnapshot, changed_paths
from redline.gitops.trees import FILE, LINK, Entry, update
from redline.gitops.worktree import (
    check_path,
    read_bytes,
    remove_temp_files,
    update_index,
    write_files,
)

Request = EditRequest | PatchRequest


@dataclass
class _Group:
    paths: list[str]
    files: dict[str, Entry | None]
    note: dict[str, Any]
    message: str


@dataclass
class DirtyPaths:
    """Paths the file watcher saw change; ``overflowed`` forces a full walk.

    Until a watcher is attached (``watched``), every snapshot walks the worktree.
    """

    paths: set[str] = field(default_factory=set)
    overflowed: bool = True  # nothing is known until the first full walk
    watched: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, path: str) -> None:
        with self.lock:
            self.paths.add(path)

    def overflow(self) -> None:
        with self.lock:
            self.overflowed = True

    def take(self) -> set[str] | None:
        with self.lock:
            if self.overflowed or not self.watched:
                self.overflowed = False
                self.paths.clear()
                return None
            taken, self.paths = self.paths, set()
            return taken


class SessionApplier:
    def __init__(
        self,
        repo: pygit2.Repository,
        layout: Layout,
        session: Session,
        *,
        fault: Callable[[str], None] | None = None,
        policy_for: Callable[[pygit2.Tree], Policy] | None = None,
    ) -> None:
        self.repo = repo
        self.layout = layout
        self.session = session
        self.root = Path(session.worktree)
        self.worktree = pygit2.Repository(session.worktree)
        self.dirty = DirtyPaths()
        self._index = IndexPatcher(Path(self.worktree.path) / "index")
        # Files this applier wrote, with their stat after writing: the watcher
        # reports them back, and they need no re-reading while unchanged.
        self._written: dict[str, tuple[int, int, int]] = {}
        self._fault = fault or (lambda point: None)
        self._policy_for = policy_for or (lambda tree: Policy())
        self._policy = Policy()
        self.before_write: Callable[[], None] | None = None  # test seam

    # -- the request -------------------------------------------------------------

    def apply(self, request: Request, model: str | None = None, dry_run: bool = False) -> Result:
        tip, tree = self._tip()
        external = self._external_changes(tree, _target_paths(self.root, request))
        published = False
        try:
            result, published = self._apply(request, model, dry_run, tip, tree, external)
        finally:
            if external and not published:
                # Not committed this time (a dry run, a refusal, an error): the next
                # snapshot must look at these paths again.
                for path in external:
                    self.dirty.add(path)
        return result

    def _apply(
        self,
        request: Request,
        model: str | None,
        dry_run: bool,
        tip: pygit2.Oid,
        tree: pygit2.Tree,
        external: dict[str, Entry | None],
    ) -> tuple[Result, bool]:
        """The result, and whether the external changes were committed."""
        request_id = secrets.token_hex(6)
        chain: list[tuple[pygit2.Oid, _Group]] = []
        if external and not dry_run:
            group = self._external_group(request_id, external)
            tip, tree = self._commit(tip, tree, group)
            chain.append((tip, group))
        snapshot = TreeSnapshot(self.repo, tree, self.root)
        try:
            self._policy = self._policy_for(tree)
        except RedlineError as exc:
            refused = Result("rejected", error=f"{exc} — no edit is applied until it is fixed")
            refused.session = self.session.name
            return refused, False
        result, groups = self._plan(request, snapshot, request_id, model)
        result.session = self.session.name
        result.dry_run = dry_run
        if dry_run:
            return result, False
        for group in groups:
            tip, tree = self._commit(tip, tree, group)
            chain.append((tip, group))
        if not chain:
            return result, False
        if groups:
            if self.before_write is not None:
                self.before_write()
            moved = self._changed_on_disk(snapshot, groups)
            if moved is not None:
                # Publish the external commit alone; the edit is not applied.
                chain = [c for c in chain if c[1].note["source"] == "external"]
                refused = changed_after_planning(moved)
                refused.session = self.session.name
                result, groups = refused, []
                if not chain:
                    return result, False
        self._publish(request_id, chain, external, groups)
        result.commits = [
            Commit(str(oid), g.note["edit"], g.paths, g.note["source"]) for oid, g in chain
        ]
        return result, True

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
            self._written.clear()
        return changed_paths(self.repo, self.worktree, tree, candidates)

    def _still_ours(self, path: str) -> bool:
        stamp = self._written.get(path)
        if stamp is None:
            return False
        try:
            return _stamp(self.root / path) == stamp
        except OSError:
            return False

    def _external_group(self, request_id: str, changes: dict[str, Entry | None]) -> _Group:
        edit = secrets.token_hex(6)
        paths = sorted(changes)
        operations = [{"path": p, "op": "delete" if changes[p] is None else "write"} for p in paths]
        note = self._note(edit, request_id, "external", None, "external", operations)
        count = f"{len(paths)} file" + ("" if len(paths) == 1 else "s")
        message = (
            f"redline: external changes to {count}\n\n"
            f"Changes made in session {self.session.name} by other tools, committed before "
            f"redline's next edit.\n\n" + "\n".join(f"  {p}" for p in paths[:50])
        )
        return _Group(paths, changes, note, message + f"\n\nRedline-Edit: {edit}\n")

    def _plan(
        self, request: Request, snapshot: TreeSnapshot, request_id: str, model: str | None
    ) -> tuple[Result, list[_Group]]:
        if isinstance(request, EditRequest):
            return self._plan_edit(request, snapshot, request_id, model)
        outcome = apply_patch(request.patch, snapshot)
        result = outcome.result
        if outcome.plan is None:
            return result, []
        groups = []
        rejected = False
        for plan_group in outcome.plan.applied:
            if not plan_group.changes:
                continue
            files = {c.path: self._entry(snapshot, c) for c in plan_group.changes}
            hunks = [h for h in result.hunks if h.path in plan_group.paths]
            operations: list[dict[str, Any]] = [
                {
                    "path": h.path,
                    "op": "update",
                    "match_type": h.match_type,
                    "confidence": h.confidence,
                    "start_line": h.start_line,
                    "end_line": h.end_line,
                    "matched_sha256": notes.sha256(h.matched_text),
                    "matched_preview": notes.preview(h.matched_text),
                    "other_candidates": h.other_matches,
                    "anchor_found": h.anchor_found,
                }
                for h in hunks
            ]
            operations += [
                {"path": c.path, "op": _op(c)}
                for c in plan_group.changes
                if c.before is None or c.after is None
            ]
            verdict = self._judge(operations)
            if verdict is not None and self._policy.action == "reject":
                plan_group.error = _rejection(verdict)
                rejected = True
                continue
            edit = secrets.token_hex(6)
            note = self._note(edit, request_id, "apply_patch", model, "agent", operations)
            note["cleaned"] = result.cleaned
            self._flag(note, result, verdict)
            summary = ", ".join(plan_group.operations)
            message = f"redline: {summary}"[:72]
            body = f"{message}\n\nApplied by redline session {self.session.name} (apply_patch)."
            groups.append(_Group(list(files), files, note, f"{body}\n\nRedline-Edit: {edit}\n"))
        if rejected:
            flags = result.flags
            result = summarise(outcome.plan)
            result.flags = flags
            if not outcome.plan.applied:
                result.status = "rejected"
        return result, groups

    def _plan_edit(
        self, request: EditRequest, snapshot: TreeSnapshot, request_id: str, model: str | None
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
                "(to create one, use apply_patch with *** Add File)",
            ), []
        outcome = apply_edit(data, request)
        result = outcome.result
        if outcome.data is None:
            return result, []
        mode = snapshot.mode(path) or FILE
        entry = Entry(write_blob(self.repo, outcome.data), mode)
        operations = [
            {
                "path": path,
                "op": "edit",
                "match_type": m.match_type,
                "confidence": m.confidence,
                "start_line": m.start_line,
                "end_line": m.end_line,
                "matched_sha256": notes.sha256(m.matched_text),
                "matched_preview": notes.preview(m.matched_text),
            }
            for m in result.matches
        ]
        verdict = self._judge(operations)
        if verdict is not None and self._policy.action == "reject":
            refused = Result("rejected", path=path, error=_rejection(verdict))
            refused.matches = result.matches
            refused.match_type, refused.confidence = result.match_type, result.confidence
            refused.flags = verdict
            return refused, []
        edit = secrets.token_hex(6)
        note = self._note(edit, request_id, "edit", model, "agent", operations)
        note["cleaned"] = result.cleaned
        self._flag(note, result, verdict)
        if result.match_type and result.match_type != "exact":
            note["tolerances"] = [result.match_type]
        kind = f"{result.match_type} {result.confidence}" if result.match_type else "edit"
        message = f"redline: edit {path} ({kind})"
        body = f"{message}\n\nApplied by redline session {self.session.name} (edit)."
        return result, [_Group([path], {path: entry}, note, f"{body}\n\nRedline-Edit: {edit}\n")]

    def _judge(self, operations: list[dict[str, Any]]) -> list[dict[str, str]] | None:
        """The guard rules these operations break, or None when they pass."""
        found = []
        for op in operations:
            if op.get("match_type") is None:
                continue
            for violation in self._policy.check(op["path"], op["match_type"], op["confidence"]):
                found.append(
                    {"rule": violation.rule, "path": violation.path, "reason": violation.reason}
                )
        return found or None

    def _flag(
        self, note: dict[str, Any], result: Result, verdict: list[dict[str, str]] | None
    ) -> None:
        if verdict is None:
            note["policy"] = {"verdict": "pass", "source": self._policy.source}
            return
        note["policy"] = {
            "verdict": "flagged",
            "action": "review",
            "source": self._policy.source,
            "violations": verdict,
        }
        result.flags = [*result.flags, *verdict]

    def _entry(self, snapshot: TreeSnapshot, change: FileChange) -> Entry | None:
        if change.after is None:
            return None
        mode = snapshot.mode(change.origin or change.path) or FILE
        if mode == LINK:
            mode = FILE
        return Entry(write_blob(self.repo, change.after), mode)

    def _note(
        self,
        edit: str,
        request_id: str,
        tool: str,
        model: str | None,
        source: str,
        operations: list[dict[str, Any]],
    ) -> dict[str, Any]:
        return {
            "schema": notes.SCHEMA,
            "edit": edit,
            "request": request_id,
            "session": self.session.name,
            "tool": tool,
            "model": model,
            "source": source,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "operations": operations,
            "policy": None,
            "approvals": [],
        }

    # -- commits, publication, the worktree --------------------------------------------

    def _commit(
        self, parent: pygit2.Oid, tree: pygit2.Tree, group: _Group
    ) -> tuple[pygit2.Oid, pygit2.Tree]:
        new_tree = update(self.repo, tree, group.files)
        sig = signature(self.repo)
        oid = write_commit(self.repo, new_tree, [parent], sig, sig, group.message)
        built = self.repo[new_tree]
        assert isinstance(built, pygit2.Tree)
        return oid, built

    def _changed_on_disk(self, snapshot: TreeSnapshot, groups: list[_Group]) -> str | None:
        """The first planned file whose bytes on disk moved away from the snapshot."""
        for group in groups:
            for path in group.files:
                if read_bytes(self.root, path) != snapshot.read(path):
                    return path
        return None

    def _publish(
        self,
        request_id: str,
        chain: list[tuple[pygit2.Oid, _Group]],
        external: Mapping[str, Entry | None],
        groups: list[_Group],
    ) -> None:
        old = notes.ref_target(self.repo, self.session.branch)
        assert old is not None
        new = chain[-1][0]
        notes_old = notes.current(self.repo)
        notes_new = notes.prepare(
            self.repo, {oid: g.note for oid, g in chain}, signature(self.repo), notes_old
        )
        files: dict[str, Entry | None] = {}
        for group in groups:
            files.update(group.files)
        entry = journal.JournalEntry(
            session=self.session.name,
            request=request_id,
            ref=self.session.branch,
            old=str(old),
            new=str(new),
            notes_old=str(notes_old) if notes_old else None,
            notes_new=str(notes_new),
            files={p: (str(e.oid), int(e.mode)) if e else None for p, e in files.items()},
            stage=tuple(sorted({*files, *external})),
        )
        flush_staged(self.repo)  # what the journal names must be on disk first
        self._fault("before-journal")
        journal.write(self.layout.journal, entry)
        self._fault("after-journal")
        refs.update(self.repo, self.session.branch, old, new, "redline: edit")
        self._fault("after-branch")
        notes.publish(self.repo, notes_old, notes_new)
        self._fault("after-notes")
        write_files(self.repo, self.root, files)
        self._fault("after-files")
        self._stage(files, external, list(entry.stage))
        journal.clear(self.layout.journal, self.session.name)
        self._fault("after-clear")

    def _stage(
        self,
        files: dict[str, Entry | None],
        external: Mapping[str, Entry | None],
        paths: list[str],
    ) -> None:
        """Stage what this request wrote: patched in place when it can, else by libgit2."""
        for path, entry in files.items():
            if entry is not None:
                with contextlib.suppress(OSError):
                    self._written[path] = _stamp(self.root / path)
        simple = not external and all(e is not None and e.mode != LINK for e in files.values())
        staged = {p: (e.oid.raw, int(e.mode)) for p, e in files.items() if e is not None}
        if not (simple and self._index.stage(self.root, staged)):
            update_index(self.worktree, paths)


def _stamp(path: Path) -> tuple[int, int, int]:
    info = path.lstat()
    return info.st_mtime_ns, info.st_size, info.st_ino


def _rejection(verdict: list[dict[str, str]]) -> str:
    first = verdict[0]
    return (
        f"rejected by guard rule {first['rule']}: {first['reason']} at {first['path']}. "
        "Protected paths take only edits the policy allows: copy old_string exactly from the "
        "file (an exact edit always passes), or ask a person to make this change"
    )


def _target_paths(root: Path, request: Request) -> list[str]:
    """The valid paths a request names (invalid ones are refused later, when planning)."""
    if isinstance(request, EditRequest):
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


def recover(repo: pygit2.Repository, layout: Layout, session: Session) -> str | None:
    """Finish or drop a request a crash interrupted; say what was done (for the log)."""
    entry = journal.read(layout.journal, session.name)
    if entry is None:
        return None
    _drop_leftovers(repo, session, entry)
    current = notes.ref_target(repo, entry.ref)
    old, new = pygit2.Oid(hex=entry.old), pygit2.Oid(hex=entry.new)
    if current not in (old, new):
        journal.clear(layout.journal, session.name)
        return f"dropped interrupted request {entry.request}: {entry.ref} moved on"
    if current == old:
        refs.update(repo, entry.ref, old, new, "redline: recover")
    if entry.notes_new is not None:
        notes_new = pygit2.Oid(hex=entry.notes_new)
        notes_old = pygit2.Oid(hex=entry.notes_old) if entry.notes_old else None
        now = notes.current(repo)
        if now == notes_old:
            notes.publish(repo, notes_old, notes_new)
    files = {
        p: Entry(pygit2.Oid(hex=v[0]), v[1]) if v is not None else None
        for p, v in entry.files.items()
    }
    write_files(repo, Path(session.worktree), files)
    worktree = pygit2.Repository(session.worktree)
    repair_checksum(Path(worktree.path) / "index")
    update_index(worktree, sorted({*files, *entry.stage}))
    journal.clear(layout.journal, session.name)
    return f"finished interrupted request {entry.request} ({len(files)} file(s))"


def _drop_leftovers(repo: pygit2.Repository, session: Session, entry: journal.JournalEntry) -> None:
    """Remove what a process killed inside the journalled section left behind.

    Between writing the journal and clearing it, redline alone writes the
    session's branch ref, the notes ref, the session worktree's index and the
    journalled files; a lock or temporary file of theirs that is still there
    is this interrupted request's own, and would block (or be committed by)
    every later request.
    """
    common = Path(repo.path)
    for ref in (entry.ref, NOTES_REF):
        (common / f"{ref}.lock").unlink(missing_ok=True)
    worktree = pygit2.Repository(session.worktree)
    (Path(worktree.path) / "index.lock").unlink(missing_ok=True)
    remove_temp_files(Path(session.worktree), entry.files)
