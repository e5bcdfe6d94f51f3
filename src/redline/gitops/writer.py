"""How one process writes into a repository: where new objects go, how new files are made.

The daemon stages every object it writes in memory and flushes them as one pack
before a ref may name them (gitops.packs), and creates files from a pool of
spare inodes (gitops.spares). The hooks and the CLI do neither. A
:class:`Writer` carries that choice explicitly to the code that writes refs,
the index and worktree files, instead of a module-wide switch.
"""

from __future__ import annotations

from pathlib import Path

from redline.engine.records import record
from redline.fsops.atomic import create_new
from redline.gitops.durability import NONE, Durability
from redline.gitops.packs import StagedObjects
from redline.gitops.spares import SparePool


@record
class Writer:
    staged: StagedObjects | None = None  # attached to the repository's object database
    spares: SparePool | None = None
    # which writes are fsynced (gitops.durability): the daemon follows core.fsync
    durability: Durability = NONE

    def open_new(self, path: Path, mode: int = 0o644) -> int:
        """A new empty file opened for writing (``O_CREAT | O_EXCL``), from a spare if any."""
        if self.spares is not None:
            fd = self.spares.take(path, mode)
            if fd is not None:
                return fd
        return create_new(path, mode)

    def flush(self) -> None:
        """Write the staged objects: called before a ref or the journal may name them."""
        if self.staged is not None:
            self.staged.flush(self.open_new, durable=self.durability.objects)


PLAIN = Writer()  # objects and files written as libgit2 and open() write them
