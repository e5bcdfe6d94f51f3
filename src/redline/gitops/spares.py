"""Empty files made ahead of time, so that a request links an inode instead of allocating one.

Every edit creates a handful of files: a pack and its index, the ref locks,
the worktree file's temporary, ``index.lock``. On a file system short of free
inodes near a directory, allocating one costs up to a millisecond of kernel
time, while giving an existing inode a new name costs a hundredth of that.
A :class:`SparePool` keeps empty files under one folder, topped up by its own
thread while requests pause (and, in a long burst, kept from running dry),
and :meth:`SparePool.take` moves one to the name wanted; the daemon's writer
context (gitops.writer) uses it for every new file.

``take`` keeps the meaning of ``open(O_CREAT | O_EXCL)``: ``link(2)``
fails when the name exists, so a lock taken this way excludes git exactly as
one git takes itself. A spare is trusted only while it is empty and has no
other name: a process killed between ``link`` and ``unlink`` leaves a spare
that is also some other file, and such a spare is thrown away (its name only)
instead of used.

Without a pool (the hooks, the CLI), or when the pool is empty or on another
file system, files are created as usual.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from redline.fsops.atomic import umask

KEEP = 1024  # about 170 edits' worth: a burst of requests is served from the pool
LOW = 4  # in a burst, the pool is topped up to 1/LOW of KEEP (see SparePool)
PAUSE = 0.2  # seconds without a request before the pool is topped up
RETRY = 5.0  # seconds before trying again to make spares after a failure (a full disk)


class SparePool:
    """Up to ``keep`` empty files under ``folder``; one thread makes more as they are taken.

    The pool is topped up to ``keep`` once requests pause (``pause`` seconds):
    making a spare costs what it saves, and a burst of requests should not pay
    it on the other core. A burst long enough to take all but ``keep // LOW``
    of them makes the thread top the pool up to that mark while requests run:
    otherwise every request after the first ~170 of a burst allocates its
    inodes itself, and a long session's edits cost more than its first ones
    (more still on ext4, whose allocator passes over recently freed inodes:
    a burst frees some with every request). The spares are kept in two
    sub-folders: requests take from one while the thread fills the other, so a request
    that arrives during a top-up does not wait for the folder lock an
    allocation holds.
    """

    def __init__(
        self, folder: Path, keep: int | None = None, pause: float = PAUSE, retry: float = RETRY
    ) -> None:
        """``keep``: KEEP when None (read now, not when the module was loaded)."""
        self.folder = folder
        self.keep = KEEP if keep is None else keep
        self.pause = pause
        self.retry = retry
        self._bins = (folder / "a", folder / "b")
        self._spares: tuple[list[str], list[str]] = ([], [])
        self._drain = 0  # the bin requests take from; the thread fills the other
        self._lock = threading.Lock()
        self._wanted = threading.Event()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self._serial = 0
        self._umask = 0o022
        self._last_take = 0.0
        self._serving = 0  # requests in progress (see serving)
        self._problem: str | None = None  # why the last spare could not be made

    def start(self) -> None:
        """Adopt the spares a previous daemon left and start topping the pool up."""
        # Read once, without setting it: the umask is the whole process's, and another
        # thread's file made while it was changed would take the wrong mode.
        self._umask = umask()
        # Private, like every file of the daemon's: tightened when an older version
        # left the pool's folder 0755.
        for folder in (self.folder, *self._bins):
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            folder.chmod(0o700)
        for folder, names in zip(self._bins, self._spares, strict=True):
            with os.scandir(folder) as entries:
                for entry in entries:
                    if _sound(entry.path):
                        names.append(entry.path)
                    else:
                        _remove_name(entry.path)
        self._thread = threading.Thread(target=self._top_up, name="redline-spares", daemon=True)
        self._thread.start()
        self._wanted.set()

    def stop(self) -> None:
        """Stop the pool's thread; the spares stay for the next daemon."""
        self._stopped.set()
        self._wanted.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def __len__(self) -> int:
        return sum(map(len, self._spares))

    @contextlib.contextmanager
    def serving(self) -> Iterator[None]:
        """While a request runs, the pool is not topped up (nor ``pause`` seconds after).

        Takes alone do not say a request runs: opening a session checks out a
        whole worktree and takes nothing, and spares made meanwhile compete
        with its file writes (and with the first requests after it).
        """
        self._serving += 1
        try:
            yield
        finally:
            self._serving -= 1
            self._last_take = time.monotonic()

    def take(self, path: Path, mode: int) -> int | None:
        """Move a spare to ``path`` and open it for writing, or None to create it as usual."""
        with self._lock:
            if not self._spares[self._drain]:
                self._drain = 1 - self._drain
            names = self._spares[self._drain]
            spare = names.pop() if names else None
        self._last_take = time.monotonic()
        self._wanted.set()
        if spare is None:
            return None
        try:
            os.link(spare, path)
        except FileExistsError:
            with self._lock:
                names.append(spare)  # unused: `path` is someone else's
            raise
        except OSError:
            if os.path.lexists(spare):  # `path` is on another file system, or its folder is gone
                with self._lock:
                    names.append(spare)
            return None
        _remove_name(spare)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW)
        except OSError:
            _remove_name(path)
            return None
        info = os.fstat(fd)
        if info.st_nlink != 1 or info.st_size != 0:
            # The spare was also another file's name (a link left by a killed process):
            # drop the name given here and leave that file alone.
            os.close(fd)
            _remove_name(path)
            return None
        os.fchmod(fd, mode & ~self._umask)
        return fd

    def _top_up(self) -> None:
        while not self._stopped.is_set():
            self._wanted.wait()
            self._wanted.clear()
            while not self._stopped.is_set() and len(self) < self.keep:
                busy_for = self.pause - (time.monotonic() - self._last_take)
                if self._serving:
                    busy_for = self.pause
                if busy_for > 0 and len(self) >= self.keep // LOW:
                    self._stopped.wait(busy_for)
                    continue
                with self._lock:
                    fill = 1 - self._drain
                try:
                    spare = self._make_one(self._bins[fill])
                except OSError as exc:
                    # A full disk, a removed folder: files are created as usual meanwhile,
                    # and the pool is topped up again once making one works.
                    self._report(exc)
                    self._stopped.wait(self.retry)
                    continue
                if self._problem is not None:
                    self._report(None)
                with self._lock:
                    self._spares[fill].append(spare)

    def _report(self, problem: OSError | None) -> None:
        import logging  # only here: the guard hook imports this module too

        log = logging.getLogger("redline.daemon")
        said = None if problem is None else (problem.strerror or str(problem))  # not per file
        if said == self._problem:
            return
        if problem is None:
            log.info("spare files are made again in %s", self.folder)
        else:
            log.warning(
                "cannot make spare files in %s (%s); files are created as usual, and "
                "spares are made again once that works",
                self.folder,
                problem,
            )
        self._problem = said

    def _make_one(self, folder: Path) -> str:
        while True:
            self._serial += 1
            spare = os.path.join(folder, f"{os.getpid()}-{self._serial}")
            try:
                os.close(os.open(spare, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            except FileExistsError:
                continue
            except FileNotFoundError:  # the folder was removed: made again
                folder.mkdir(mode=0o700, parents=True, exist_ok=True)
                continue
            return spare


def _sound(path: str) -> bool:
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and info.st_nlink == 1 and info.st_size == 0


def _remove_name(path: str | Path) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)
