"""Feeding each session's dirty-path set from file-system events (watchdog)."""

from __future__ import annotations

import logging
import os
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

from redline.gitops.snapshot import DirtyPaths

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


class _Handler(FileSystemEventHandler):
    def __init__(self, root: Path, dirty: DirtyPaths) -> None:
        self.root = str(root)
        self.dirty = dirty

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
            if rel == ".git" or rel.startswith(".git/"):
                continue
            self.dirty.add(rel)


class Watcher:
    """One observer thread for all of a daemon's session worktrees."""

    def __init__(self) -> None:
        self._observer = Observer()
        self._observer.daemon = True
        self._watches: dict[str, ObservedWatch] = {}
        self._started = False

    def watch(self, name: str, root: Path, dirty: DirtyPaths) -> None:
        if not self._started:
            self._observer.start()
            self._started = True
        try:
            handler = _Handler(root, dirty)
            self._watches[name] = self._observer.schedule(
                handler, str(root), recursive=True, event_filter=_CHANGES
            )
            dirty.watched = True
        except OSError as exc:
            # inotify limits and the like: every snapshot walks the worktree instead.
            log.warning("cannot watch %s (%s); falling back to full scans", root, exc)

    def unwatch(self, name: str) -> None:
        watch = self._watches.pop(name, None)
        if watch is not None:
            self._observer.unschedule(watch)

    def stop(self) -> None:
        if self._started:
            self._observer.stop()
            self._observer.join(timeout=5)
