"""Publishing a request's commits: the journalled section, and finishing what a crash left.

A request's commits, their notes and its worktree files become visible in one
section that starts by writing the journal. Every outcome is resolved here,
before the request is answered, so that the answer always matches the branch:

- The branch cannot be moved (it moved, or another process holds its lock):
  the journal is cleared and nothing happened.
- The branch moved: the request has landed. Its notes are added to the notes
  ref with a compare-and-swap loop; if that is impossible (another process
  keeps the notes lock) the branch is moved back, the journal cleared, and
  nothing happened. Then the worktree files are written and staged, and the
  journal cleared. A failure there is retried once; if it persists, the answer
  is still ``applied`` (it is on the branch) with a hint, and the journal stays
  so that the next request — or the next daemon start — finishes it before
  anything else reads the worktree.

Only a process killed inside the section leaves a journal behind; :meth:`Publisher.recover`
rolls it forward when the branch is where the journal left it (or already
past the new tip) and drops it when the branch went elsewhere.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pygit2

from redline.fsops.atomic import LOCK_SUFFIX, LockHeld
from redline.fsops.resources import ResourceError, is_resource
from redline.gitops import journal, notes, refs
from redline.gitops.errors import GitModeError
from redline.gitops.index import IndexPatcher, repair_checksum
from redline.gitops.objects import write_blob
from redline.gitops.repo import NOTES_REF, Layout, signature
from redline.gitops.session import Session
from redline.gitops.trees import LINK, Entry
from redline.gitops.worktree import remove_temp_files, update_index, write_files
from redline.gitops.writer import PLAIN, Writer

log = logging.getLogger("redline.daemon")

# Where tests may inject a failure (an exception, or a kill of the process).
FAULT_POINTS = (
    "before-journal",
    "after-journal",
    "after-branch",
    "after-notes",
    "after-files",
    "after-clear",
)
Fault = Callable[[str], None]
_RECHECKED = 64  # latest commits whose notes each publication makes sure of


@dataclass(frozen=True)
class Landing:
    """A commit of the request, and the note that goes with it (what the publisher lands;
    the result's report of a commit is engine.result.CommitReport)."""

    oid: pygit2.Oid
    note: Mapping[str, Any]


class Publisher:
    """The journalled section of one session's requests (used from one thread)."""

    def __init__(
        self,
        repo: pygit2.Repository,
        layout: Layout,
        session: Session,
        writer: Writer = PLAIN,
        fault: Fault | None = None,
    ) -> None:
        self.repo = repo
        self.layout = layout
        self.session = session
        self.root = Path(session.worktree)
        self.writer = writer
        self._fault = fault or (lambda point: None)
        self.worktree = pygit2.Repository(session.worktree)
        self._index = IndexPatcher(Path(self.worktree.path) / "index", writer)
        # Files written here, with their stat after writing: the watcher reports
        # them back, and they need no re-reading while unchanged.
        self.written: dict[str, tuple[int, int, int]] = {}
        # The notes of the latest commits, checked again at each publication: ``git
        # notes`` moves the notes ref without a compare-and-swap, so one running at the
        # same moment as a publication can drop the note just added. Re-added if so.
        self._recent: dict[pygit2.Oid, pygit2.Oid] = {}
        # A notes commit known to hold every note of ``_recent`` (the last one this
        # publisher made): while the notes ref still points at it, none can be missing
        # and only the request's new notes are looked up — a commit never changes.
        self._verified: pygit2.Oid | None = None
        # Requests whose journal could not be cleared although they did not land.
        self._dropped: set[str] = set()

    def warm(self) -> None:
        self._index.warm()

    # -- one request --------------------------------------------------------------------

    def publish(
        self,
        request: str,
        old: pygit2.Oid,
        commits: list[Landing],
        files: dict[str, Entry | None],
        external: Mapping[str, Entry | None],
    ) -> str | None:
        """Land ``commits`` on the session's branch (from ``old``) with their notes and files.

        Raises when nothing landed (the branch is where it was). Returns None when
        all is done, or what is left for the next request to finish.
        """
        note_blobs = {
            c.oid: write_blob(self.repo, notes.encode(c.note), self.writer) for c in commits
        }
        new = commits[-1].oid
        entry = journal.JournalEntry(
            session=self.session.name,
            request=request,
            ref=self.session.branch,
            old=str(old),
            new=str(new),
            notes={str(c): str(b) for c, b in note_blobs.items()},
            files={p: (str(e.oid), int(e.mode)) if e else None for p, e in files.items()},
            stage=tuple(sorted({*files, *external})),
        )
        # The notes commit, made ahead on the current notes tip: usually it is still the
        # tip when the branch has moved, and all objects go to disk in one pack.
        blobs = {**self._recent, **note_blobs}
        tip = notes.current(self.repo)
        ahead = self._missing_notes(blobs, tip)
        prepared = (tip, notes.prepare(self.repo, ahead, signature(self.repo), tip, self.writer))
        self.writer.flush()  # what the journal names must be on disk first
        self._fault("before-journal")
        journal.write(self.layout.journal, entry, durable=self.writer.durability.refs)
        try:
            self._fault("after-journal")
            refs.update(self.repo, entry.ref, old, new, "redline: edit", writer=self.writer)
        except BaseException as exc:
            # The branch did not move: nothing happened, and the journal must not say
            # otherwise (rolled forward later, it would apply what was answered as not).
            cleared = self._void(entry.request)
            if isinstance(exc, Exception) and (isinstance(exc, ResourceError) or is_resource(exc)):
                raise _not_moved(exc, cleared) from exc
            raise
        # Landed. From here on every step rolls forward, or (notes) is undone whole.
        try:
            self._fault("after-branch")
            made = self._add_notes(blobs, prepared)
        except Exception as exc:
            self._verified = None  # the notes remembered below may be missing anywhere
            if self._move_back(entry.ref, new, old):
                self._clear()
                raise _not_landed(exc) from exc
            self._remember(note_blobs)
            log.warning("session %s: notes of %s not added yet: %s", self.session.name, new, exc)
            return (
                f"the edit is committed, but its evidence note could not be added yet ({exc}); "
                "redline adds it before the session's next request"
            )
        self._verified = made  # holds all of ``blobs`` (None: the tip had them, whichever)
        self._remember(note_blobs)
        return self._finish(entry, files)

    def _remember(self, blobs: Mapping[pygit2.Oid, pygit2.Oid]) -> None:
        self._recent.update(blobs)
        while len(self._recent) > _RECHECKED:
            del self._recent[next(iter(self._recent))]

    def _finish(self, entry: journal.JournalEntry, files: Mapping[str, Entry | None]) -> str | None:
        problem: Exception | None = None
        for _attempt in range(2):
            try:
                self._fault("after-notes")
                write_files(self.repo, self.root, files, self.writer)
                self._fault("after-files")
                self._stage(files, list(entry.stage))
                self._clear()
                self._fault("after-clear")
                return None
            except Exception as exc:  # a file or the index another process holds
                problem = exc
                log.warning("session %s: finishing %s: %s", self.session.name, entry.request, exc)
        if journal.read(self.layout.journal, self.session.name) is None:
            return None  # only the step after the journal was cleared failed
        return (
            f"the edit is committed, but the session's worktree could not be brought up to "
            f"date ({problem}); redline finishes it before the session's next request"
        )

    def _add_notes(
        self,
        blobs: Mapping[pygit2.Oid, pygit2.Oid],
        prepared: tuple[pygit2.Oid | None, pygit2.Oid] | None = None,
    ) -> pygit2.Oid | None:
        """Add the notes of ``blobs`` that the notes ref lacks; the notes commit made
        (None when none was needed)."""
        return notes.publish(
            self.repo,
            lambda tip: self._missing_notes(blobs, tip),
            signature(self.repo),
            self.writer,
            prepared,
        )

    def _missing_notes(
        self, blobs: Mapping[pygit2.Oid, pygit2.Oid], tip: pygit2.Oid | None
    ) -> dict[pygit2.Oid, notes.NoteData]:
        """The notes absent at ``tip``: one that is there may carry an approval since.

        At the notes commit this publisher made last, only the notes it does not hold
        yet (the request's own) are looked up; after any other writer, all of them."""
        if tip is not None and tip == self._verified:
            blobs = {c: b for c, b in blobs.items() if c not in self._recent}
        return notes.missing(self.repo, blobs, tip)

    def _move_back(self, ref: str, new: pygit2.Oid, old: pygit2.Oid) -> bool:
        """Undo the branch move, if the branch is still where this request put it."""
        try:
            refs.update(self.repo, ref, new, old, "redline: undo edit", writer=self.writer)
        except Exception as exc:  # moved on, locked, or the disk is full: it stays landed
            log.warning("session %s: cannot move %s back: %s", self.session.name, ref, exc)
            return False
        return True

    def _clear(self) -> None:
        journal.clear(self.layout.journal, self.session.name, self.writer.durability.refs)

    def _void(self, request: str) -> bool:
        """Clear the journal of ``request``, which did not land; False when even that cannot
        be written (a read-only file system): then it is dropped, not rolled forward, when
        this publisher finds it again (see :meth:`recover`)."""
        try:
            self._clear()
        except OSError as exc:
            log.warning(
                "session %s: cannot clear the journal of %s: %s", self.session.name, request, exc
            )
            self._dropped.add(request)
            return False
        return True

    def _stage(self, files: Mapping[str, Entry | None], paths: list[str]) -> None:
        """Stage what this request wrote: patched in place when it can, else by libgit2."""
        for path, entry in files.items():
            if entry is not None:
                with contextlib.suppress(OSError):
                    self.written[path] = stamp(self.root / path)
        simple = set(paths) == set(files) and all(
            e is not None and e.mode != LINK for e in files.values()
        )
        staged = {p: (e.oid.raw, int(e.mode)) for p, e in files.items() if e is not None}
        if not (simple and self._index.stage(self.root, staged)):
            update_index(self.worktree, paths)

    # -- what a crash left ------------------------------------------------------------

    def pending(self) -> bool:
        return journal.read(self.layout.journal, self.session.name) is not None

    def recover(self) -> str | None:
        """Finish or drop the request a crash (or a persistent failure) left; say what was done."""
        entry = journal.read(self.layout.journal, self.session.name)
        if entry is None:
            return None
        if entry.request in self._dropped:  # answered as not applied: it stays so
            self._clear()
            self._dropped.discard(entry.request)
            return f"dropped request {entry.request}, which did not land"
        old, new = pygit2.Oid(hex=entry.old), pygit2.Oid(hex=entry.new)
        self._drop_leftovers(entry)
        current = notes.ref_target(self.repo, entry.ref)
        if current == old:
            refs.update(self.repo, entry.ref, old, new, "redline: recover", writer=self.writer)
        elif not (
            current is not None
            and new in self.repo
            and (current == new or self.repo.descendant_of(current, new))
        ):
            self._clear()
            return f"dropped interrupted request {entry.request}: {entry.ref} moved elsewhere"
        self._add_notes({pygit2.Oid(hex=c): pygit2.Oid(hex=b) for c, b in entry.notes.items()})
        files = {
            p: Entry(pygit2.Oid(hex=v[0]), v[1]) if v is not None else None
            for p, v in entry.files.items()
        }
        if current not in (old, new):
            # Someone committed on top of the edit since: the worktree holds their files.
            files = {}
        write_files(self.repo, self.root, files, self.writer)
        repair_checksum(Path(self.worktree.path) / "index")
        update_index(self.worktree, sorted({*files, *entry.stage}))
        self._clear()
        return f"finished interrupted request {entry.request} ({len(files)} file(s))"

    def _drop_leftovers(self, entry: journal.JournalEntry) -> None:
        """Remove the locks and temporary files a process killed in this request left.

        A ref's lock is removed only when it holds the very id this request was
        writing into it: any other lock may be a git process's, and stays (the
        next step then says so in git's words). The session worktree's
        ``index.lock`` is redline's own while the journal is pending.
        """
        branch_lock = refs.lock_path(self.repo, entry.ref)
        if _holds(branch_lock, {entry.new}):
            branch_lock.unlink(missing_ok=True)
        notes_lock = refs.lock_path(self.repo, NOTES_REF)
        content = _content(notes_lock)
        if content is not None and self._carries_notes(content, entry.notes):
            notes_lock.unlink(missing_ok=True)
        (Path(self.worktree.path) / f"index{LOCK_SUFFIX}").unlink(missing_ok=True)
        remove_temp_files(self.root, entry.files)

    def _carries_notes(self, commit: str, wanted: Mapping[str, str]) -> bool:
        try:
            oid = pygit2.Oid(hex=commit)
        except ValueError:
            return False
        if oid not in self.repo or not wanted:
            return False
        return all(
            notes.blob_of(self.repo, pygit2.Oid(hex=c), oid) == pygit2.Oid(hex=b)
            for c, b in wanted.items()
        )


def stamp(path: Path) -> tuple[int, int, int]:
    info = path.lstat()
    return info.st_mtime_ns, info.st_size, info.st_ino


def _content(path: Path) -> str | None:
    try:
        return path.read_bytes().decode("ascii", "replace").strip()
    except OSError:
        return None


def _holds(path: Path, values: set[str]) -> bool:
    return _content(path) in values


def _not_moved(exc: Exception, cleared: bool) -> ResourceError:
    """The error of a request whose branch could not be moved for want of a resource."""
    cause = exc.cause if isinstance(exc, ResourceError) else exc
    assert isinstance(cause, OSError)
    doing = exc.doing if isinstance(exc, ResourceError) else "cannot move the session's branch"
    outcome = "the request was not applied: nothing was written"
    if not cleared:
        outcome = (
            "the request was not applied, but its journal could not be marked so: this "
            "daemon drops it once it can write again (should the daemon restart first, it "
            "may apply it then: check `redline log` before sending it again)"
        )
    return ResourceError(doing, cause, outcome)


def _not_landed(exc: Exception) -> Exception:
    """The error to answer with when the edit was taken back: it says nothing was written."""
    taken_back = "the edit was taken back: nothing was written"
    if isinstance(exc, ResourceError):
        return ResourceError(
            f"cannot add the edit's evidence note ({exc.doing})", exc.cause, taken_back
        )
    if isinstance(exc, OSError) and is_resource(exc):
        return ResourceError("cannot add the edit's evidence note", exc, taken_back)
    if isinstance(exc, (GitModeError, LockHeld)):
        return GitModeError(f"{exc} (the edit was not applied: nothing was written)")
    return GitModeError(
        f"could not add the edit's evidence note ({type(exc).__name__}: {exc}); the edit was "
        "not applied and nothing was written — retry the request"
    )
