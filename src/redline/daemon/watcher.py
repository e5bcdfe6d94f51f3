"""Feeding each session's dirty-path set from file-system events (watchdog).

If watchdog's thread dies (another tool made a folder nested so deep that
watchdog's own walk overflows the stack, or a path too long to watch), no
event comes any more: every session then falls back to a full scan of its
worktree for each request, with a line in the log, rather than missing
changes.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from pathlib import Path

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import ObservedWatch

from redline.engine.paths import names_git
from redline.gitops.snapshot import BARRIER, DirtyPaths, is_barrier

log = logging.getLogger("redline.daemon")
# Events that can change content; reads (opened, closed without writing) are not
# delivered at all, so they cost no wake-up.
_CHANGES: list[type[FileSystemEvent]] = [
    FileCreatedEvent,
    FileModifiedEvent,
    FileDeletedEvent,
    FileMovedEvent,
    FileClosedEvent,
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
]


BARRIER_WAIT = 2.0  # seconds; past it the snapshot walks the whole worktree instead


class _Handler(FileSystemEventHandler):
    def __init__(self, root: Path, dirty: DirtyPaths) -> None:
        self.root = str(root)
        self.dirty = dirty
        self.barriers: dict[str, threading.Event] = {}

    def barrier(self) -> None:
        """Return once every event of a change made before this call has been handled.

        The kernel reports a worktree's changes in order: a file made now and the
        event of its making seen here mean that every earlier change's event was
        handled before it. Without that, a file written just before a request could
        be committed only by a later one. When the file cannot be made (a read-only
        worktree) there is nothing to wait for; when its event is late, the snapshot
        walks the worktree.
        """
        name = f"{BARRIER}{os.urandom(6).hex()}"
        seen = self.barriers[name] = threading.Event()
        path = os.path.join(self.root, name)
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            os.unlink(path)
        except OSError:
            self.barriers.pop(name, None)
            return
        if not seen.wait(BARRIER_WAIT):
            self.dirty.overflow()
        self.barriers.pop(name, None)

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.is_directory and event.event_type == "modified":
            # A directory's mtime changes whenever a file in it is created or
            # renamed; those events name the file itself.
            return
        for raw in (event.src_path, getattr(event, "dest_path", "")):
            path = os.fsdecode(raw)
            if not path:
                continue
            rel = os.path.relpath(path, self.root)
            if rel == "." or rel.startswith(".."):
                self.dirty.overflow()  # the root itself moved: walk everything
                continue
            rel = rel.replace(os.sep, "/")
            if is_barrier(rel):
                seen = self.barriers.get(rel)
                if seen is not None:
                    seen.set()
                continue  # the barrier's own file, never a change of the worktree
            if names_git(rel):
                continue  # git's own data (also a nested repository's), never committed
            self.dirty.add(rel)


def _remove_stale_barriers(root: Path) -> None:
    """Remove barrier files a daemon killed between making one and removing it left in
    the worktree (they are never committed, but ``git status`` would show them)."""
    try:
        names = [entry.name for entry in os.scandir(root) if is_barrier(entry.name)]
    except OSError:
        return
    for name in names:
        # gone already, or a read-only worktree: nothing to do
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(root, name))


class Watcher:
    """One observer thread for all of a daemon's session worktrees."""

    def __init__(self) -> None:
        self._observer = Observer()
        self._observer.daemon = True
        self._watches: dict[str, ObservedWatch] = {}
        self._dirty: dict[str, DirtyPaths] = {}
        self._started = False
        self._failed = False
        self._hook = threading.excepthook
        # Sessions are watched from the worker and from checkout threads (daemon.service).
        self._lock = threading.Lock()

    def watch(self, name: str, root: Path, dirty: DirtyPaths) -> None:
        with self._lock:
            self._watch(name, root, dirty)

    def _watch(self, name: str, root: Path, dirty: DirtyPaths) -> None:
        if self._failed:
            return  # no event would come: its snapshots walk the worktree
        if not self._started:
            threading.excepthook = self._thread_failed
            self._observer.start()
            self._started = True
        self._dirty[name] = dirty
        _remove_stale_barriers(root)
        try:
            handler = _Handler(root, dirty)
            self._watches[name] = self._observer.schedule(
                handler, str(root), recursive=True, event_filter=_CHANGES
            )
            dirty.sync = handler.barrier
            dirty.watched = True
        except Exception as exc:  # watching only saves work: never fail a request for it
            # inotify limits, a folder nested too deep for watchdog's walk: every
            # snapshot walks the worktree instead.
            log.warning(
                "cannot watch %s (%s: %s); falling back to full scans",
                root,
                type(exc).__name__,
                exc,
            )

    def unwatch(self, name: str) -> None:
        with self._lock:
            self._unwatch(name)

    def _unwatch(self, name: str) -> None:
        self._dirty.pop(name, None)
        watch = self._watches.pop(name, None)
        if watch is not None and not self._failed:
            self._observer.unschedule(watch)

    def stop(self) -> None:
        if self._started:
            self._observer.stop()
            self._observer.join(timeout=5)
            threading.excepthook = self._hook

    def _thread_failed(self, args: threading.ExceptHookArgs) -> None:
        if type(args.thread).__module__.startswith("watchdog.") and not self._failed:
            self._failed = True
            for dirty in list(self._dirty.values()):
                with dirty.lock:
                    dirty.watched = False  # each snapshot walks the worktree from now on
            log.warning(
                "file watching stopped (%s: %s); every request now scans its session's "
                "whole worktree, which is slower: restart the daemon (`redline daemon "
                "stop`) to watch again",
                args.exc_type.__name__,
                args.exc_value,
            )
        self._hook(args)
