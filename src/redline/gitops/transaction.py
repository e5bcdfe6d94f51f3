"""A session request's transaction: prepare, land, publish.

*Prepare* finishes what a crash left, reads the branch tip, commits the worktree's
external changes and loads the policy that judges the request (gitops.verdict); *land*
writes the planned objects, commits each file group and publishes the commits
(gitops.publish). Both read and write the repository, so they run on the daemon's one
git thread (pygit2 objects are not thread-safe); planning, in between, reaches the
snapshot from its own thread through :class:`SnapshotOnWorker`. Landing moves the branch
only from the tip the plan was made on (a compare-and-swap), so a branch moved meanwhile
leaves nothing written.

External changes prepared but not committed (a dry run, a refusal, an error) are looked
at again by the next snapshot: :meth:`Transaction.open` is the one place that says so,
for apply and undo alike.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

import pygit2

from redline.engine.errors import RedlineError, RequestError
from redline.engine.patch import changed_after_planning
from redline.engine.patch_plan import FileChange
from redline.engine.policy import SETTINGS_FILES
from redline.engine.result import CommitReport, Result
from redline.gitops import evidence, notes, sent
from redline.gitops.carried import carried_flag
from redline.gitops.errors import WorktreeGone
from redline.gitops.notes import Note, NoteOperation
from redline.gitops.objects import write_blob, write_commit
from redline.gitops.publish import Fault, Landing, Publisher, stamp
from redline.gitops.repo import Layout, signature
from redline.gitops.session import Session
from redline.gitops.snapshot import DirtyPaths, Known, TreeSnapshot, changed_paths
from redline.gitops.trees import FILE, LINK, Entry, with_entries
from redline.gitops.verdict import Judge, blob_data
from redline.gitops.worktree import read_bytes
from redline.gitops.writer import Writer

if TYPE_CHECKING:
    from redline.engine.requests import Request

T = TypeVar("T")


class OnWorker(Protocol):
    """Runs a step on the git thread and returns its value (the daemon's worker)."""

    def __call__(self, step: Callable[[], T]) -> T: ...


def here(step: Callable[[], T]) -> T:
    """Run ``step`` on this thread (a caller that is the git thread itself)."""
    return step()


@dataclass(frozen=True)
class Content:
    """A file's planned bytes, written as a blob when the request lands."""

    data: bytes
    mode: int


@dataclass
class Group:
    """One commit to make: its files (entries, planned bytes, or None: deleted), note and
    message."""

    paths: list[str]
    files: dict[str, Entry | Content | None]
    note: Note
    message: str
    carried: list[dict[str, str]] = field(default_factory=list)  # from earlier flagged edits


@dataclass
class Prepared:
    """What the prepare step read and committed, for planning and landing."""

    request_id: str
    tip_before: pygit2.Oid  # the branch tip the request starts from
    tip: pygit2.Oid  # ... after the external changes' commit, if any
    tree: pygit2.Tree
    external: dict[str, Entry | None]
    chain: list[tuple[pygit2.Oid, Group]] = field(default_factory=list)
    refused: Result | None = None  # the policy does not load: nothing is planned
    published: bool = False  # the external changes were committed and published
    # The request's own paths in ``tree``, read on the git thread while preparing: planning
    # reads them without a trip to it (see SnapshotOnWorker).
    known: dict[str, Known] = field(default_factory=dict)


class SnapshotOnWorker:
    """The snapshot, read on the git thread from a planning thread (see the module doc).

    The paths in ``known`` were read ahead, on the git thread while preparing (the
    request's own paths): each trip to that thread from a planning thread is two
    thread switches, a millisecond or more on a busy machine, and a snapshot never
    changes.
    """

    def __init__(
        self, snapshot: TreeSnapshot, on_worker: OnWorker, known: Mapping[str, Known] | None = None
    ) -> None:
        self.snapshot = snapshot
        self.on_worker = on_worker
        self.known = dict(known or {})

    def relative(self, path: str) -> str:
        return self.snapshot.relative(path)

    def read(self, path: str) -> bytes | None:
        known = self.known.get(path)
        if known is not None:
            return known.data
        return self.on_worker(lambda: self.snapshot.read(path))

    def is_dir(self, path: str) -> bool:
        known = self.known.get(path)
        if known is not None:
            return known.folder
        return self.on_worker(lambda: self.snapshot.is_dir(path))

    def mode(self, path: str) -> int | None:
        known = self.known.get(path)
        if known is not None:
            return known.mode
        return self.on_worker(lambda: self.snapshot.mode(path))


class Transaction:
    """Prepares, lands and publishes one session's requests (one at a time)."""

    def __init__(
        self,
        repo: pygit2.Repository,
        layout: Layout,
        session: Session,
        judge: Judge,
        writer: Writer,
        fault: Fault | None = None,
    ) -> None:
        self.repo = repo
        self.session = session
        self.root = Path(session.worktree)
        self.dirty = DirtyPaths()
        self.writer = writer
        self.judge = judge
        self.flagged = judge.flagged
        self.publisher = Publisher(repo, layout, session, writer, fault)
        self.worktree = self.publisher.worktree
        self.before_write: Callable[[], None] | None = None  # test seam

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

    @contextmanager
    def open(
        self, targets: list[str], dry_run: bool, on_worker: OnWorker = here
    ) -> Iterator[Prepared]:
        """Prepare a request (through ``on_worker``); on the way out, external changes that
        were not published (a dry run, a refusal, an error) are left for the next snapshot
        to look at again."""
        prepared = on_worker(lambda: self.prepare(targets, dry_run))
        try:
            yield prepared
        finally:
            if prepared.external and not prepared.published:
                for path in prepared.external:
                    self.dirty.add(path)

    def prepare(self, targets: list[str], dry_run: bool) -> Prepared:
        """On the git thread: the tip to plan on, with the external changes committed."""
        self.check_worktree()
        if self.publisher.pending():
            # A request that landed but could not finish (or a crash): finish it first,
            # so that the worktree matches the branch before it is read.
            self.publisher.recover()
        tip, tree = self._tip()
        self.flagged.sync(tip)
        external = self._external_changes(tree, targets)
        prepared = Prepared(secrets.token_hex(6), tip, tip, tree, external)
        try:
            external_group = None
            if external and not dry_run:
                external_group = self._external_group(prepared.request_id, external, tree)
                prepared.tip, prepared.tree = self.commit(tip, tree, external_group)
                prepared.chain.append((prepared.tip, external_group))
            prepared.known = TreeSnapshot(self.repo, prepared.tree, self.root).known(targets)
            try:
                self.judge.load(prepared.tree)
            except RedlineError as exc:
                refused = Result("rejected", error=f"{exc} — no edit is applied until it is fixed")
                refused.session = self.session.name
                prepared.refused = refused
                return prepared
            if external_group is not None:
                external_group.note.policy = self.judge.verdict(
                    self.judge.judge(external_group.note.operations) + external_group.carried
                )
        except BaseException:
            for path in external:
                self.dirty.add(path)
            raise
        return prepared

    def land(
        self,
        prepared: Prepared,
        snapshot: SnapshotOnWorker,
        result: Result,
        planned: list[Group],
        request: Request,
    ) -> Result:
        """On the git thread: commit the groups and publish; the result (``prepared``
        says whether the external changes were committed). Each agent group's note keeps
        the request as sent (gitops.sent)."""
        tip, tree = prepared.tip, prepared.tree
        chain = list(prepared.chain)
        kept = sent.keep(self.repo, request, self.writer) if planned else None
        for group in planned:
            group.note.sent = kept
        groups = [self._stored(group) for group in planned]
        for group in groups:
            tip, tree = self.commit(tip, tree, group)
            chain.append((tip, group))
        if not chain:
            return result
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
                    return result
        files: dict[str, Entry | None] = {}
        for group in groups:
            files.update(entries(group))
        unfinished = self.publish(prepared, chain, files)
        if unfinished is not None:
            result.hint = unfinished
        result.commits = [
            CommitReport(str(oid), g.note.edit, g.paths, g.note.source)  # type: ignore[arg-type]
            for oid, g in chain
        ]
        return result

    def publish(
        self,
        prepared: Prepared,
        chain: list[tuple[pygit2.Oid, Group]],
        files: Mapping[str, Entry | None],
    ) -> str | None:
        """Publish the commits of ``chain`` (the branch, the notes, the worktree's
        ``files``); the hint of a publication that could not finish (None: it did)."""
        landings = [Landing(oid, g.note.to_json()) for oid, g in chain]
        unfinished = self.publisher.publish(
            prepared.request_id, prepared.tip_before, landings, dict(files), prepared.external
        )
        prepared.published = True
        self.flagged.learned([(landing.oid, landing.note) for landing in landings])
        return unfinished

    def commit(
        self, parent: pygit2.Oid, tree: pygit2.Tree, group: Group
    ) -> tuple[pygit2.Oid, pygit2.Tree]:
        new_tree = with_entries(self.repo, tree, entries(group))
        sig = signature(self.repo)
        oid = write_commit(self.repo, new_tree, [parent], sig, sig, group.message, self.writer)
        built = self.repo[new_tree]
        assert isinstance(built, pygit2.Tree)
        group.note.files = notes.files_at(tree, built, group.files)
        return oid, built

    def _stored(self, group: Group) -> Group:
        """``group`` with its planned contents written as blobs."""
        files: dict[str, Entry | Content | None] = {
            path: Entry(write_blob(self.repo, f.data, self.writer), f.mode)
            if isinstance(f, Content)
            else f
            for path, f in group.files.items()
        }
        return Group(group.paths, files, group.note, group.message, group.carried)

    def _changed_on_disk(self, snapshot: TreeSnapshot, groups: list[Group]) -> str | None:
        """The first planned file whose bytes on disk moved away from the snapshot."""
        for group in groups:
            for path in group.files:
                if read_bytes(self.root, path) != snapshot.read(path):
                    return path
        return None

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

    def _external_group(
        self, request_id: str, changes: dict[str, Entry | None], tree: pygit2.Tree
    ) -> Group:
        """The commit of changes made in the worktree by other tools (judged once the
        policy is known: see :meth:`prepare`)."""
        edit = evidence.new_edit()
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
                path, blob_data(self.repo, tree, path), after.data,
                partial(blob_data, self.repo, tree), whole=True,
            )  # fmt: skip
            carried += [carried_flag(path, e, c) for e, c in earlier]
        carried += self.judge.settings_changed(
            partial(blob_data, self.repo, tree), settings_blobs(self.repo, changes)
        )
        note = evidence.note(
            edit, request_id, self.session.name, "external", None, "external", operations
        )
        message = evidence.external_message(self.session.name, paths, edit)
        files: dict[str, Entry | Content | None] = dict(changes)
        return Group(paths, files, note, message, carried)


def content(snapshot: SnapshotOnWorker, change: FileChange) -> Content | None:
    if change.after is None:
        return None
    mode = snapshot.mode(change.origin or change.path) or FILE
    if mode == LINK:
        mode = FILE
    return Content(change.after, mode)


def entries(group: Group) -> dict[str, Entry | None]:
    """The group's files as tree entries (its contents stored, see ``_stored``)."""
    out: dict[str, Entry | None] = {}
    for path, f in group.files.items():
        assert not isinstance(f, Content), "stored before it is committed"
        out[path] = f
    return out


def settings_blobs(
    repo: pygit2.Repository, files: Mapping[str, Entry | Content | None]
) -> dict[str, bytes | None]:
    """The bytes of the settings files among ``files`` (tree entries; None: deleted)."""
    out: dict[str, bytes | None] = {}
    for path in set(files) & set(SETTINGS_FILES):
        entry = files[path]
        if entry is None:
            out[path] = None
        elif isinstance(entry, Content):
            out[path] = entry.data
        else:
            blob = repo.get(entry.oid)
            out[path] = blob.data if isinstance(blob, pygit2.Blob) else None
    return out
