"""Writing a file so that no reader ever sees half of it: git's lock files, and temporaries.

Two shapes, one place:

- :func:`locked` takes git's lock on a file (``<file>.lock``, created
  exclusively), lets the caller write the new content into the lock, and renames
  the lock over the file on success — or removes it on any error. Git takes the
  same lock on refs and the index, so whoever comes second waits or is told.
- :func:`replace_file` writes a temporary file with a unique name beside the
  target and renames it over the target: for files nobody else locks (worktree
  files, packs, caches, metadata).

Both create files through an ``open_new`` function with the meaning of
``open(O_CREAT | O_EXCL)``; the daemon passes one that reuses spare inodes
(gitops.spares). Modes are masked by the process umask, as ``open()`` does.
"""

from __future__ import annotations

import contextlib
import errno
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from redline.engine.errors import RedlineError

OpenNew = Callable[[Path, int], int]
LOCK_SUFFIX = ".lock"
TEMP_SUFFIX = ".redline-tmp"


def create_new(path: Path, mode: int = 0o644) -> int:
    """``open(path, O_WRONLY | O_CREAT | O_EXCL)``: FileExistsError when it exists."""
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)


class LockHeld(RedlineError):
    """Another process holds git's lock on a file (or left it behind when it died)."""

    exit_code = 1

    def __init__(self, lock: Path) -> None:
        self.lock = lock
        super().__init__(
            f"unable to create '{lock}': file exists. Another git process seems to be running "
            "in this repository (a commit, a fetch, an editor opened by git); wait for it to "
            "finish. If no git process is running, a process that crashed left the lock "
            f"behind: remove it (`rm '{lock}'`) and try again"
        )


class Lock:
    """Git's lock on ``path``, held: write the new content with :meth:`write`."""

    def __init__(self, path: Path, lock: Path, fd: int) -> None:
        self.path = path
        self.lock = lock
        self.fd = fd
        self.commit = True  # rename the lock over ``path`` when the block ends

    def write(self, data: bytes | bytearray | memoryview) -> None:
        write_all(self.fd, data)

    def release_only(self) -> None:
        """End without replacing ``path`` (the caller changed it in place, or nothing)."""
        self.commit = False


@contextlib.contextmanager
def locked(
    path: Path, *, mode: int = 0o644, wait: float = 0.0, open_new: OpenNew = create_new
) -> Iterator[Lock]:
    """Hold ``path``'s lock file for the block; replace ``path`` with it if the block succeeds.

    A lock that exists is waited for up to ``wait`` seconds (git waits 100 ms for
    a ref's), then :class:`LockHeld` names it. An error inside the block removes
    the lock and leaves ``path`` as it was.
    """
    lock = path.with_name(path.name + LOCK_SUFFIX)
    deadline = time.monotonic() + wait
    delay = 0.001
    while True:
        try:
            fd = open_new(lock, mode)
            break
        except FileExistsError:
            if time.monotonic() >= deadline:
                raise LockHeld(lock) from None
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
    held = Lock(path, lock, fd)
    try:
        try:
            yield held
        finally:
            os.close(fd)
        if held.commit:
            os.replace(lock, path)
        else:
            os.unlink(lock)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(lock)
        raise


def replace_file(
    path: Path,
    data: bytes | bytearray | memoryview,
    mode: int | None = None,
    *,
    open_new: OpenNew = create_new,
) -> None:
    """Replace (or create) ``path`` with ``data`` through a temporary file beside it.

    ``mode`` None keeps an existing file's mode, and gives a new one what
    ``open()`` would (0o666 less the umask); an explicit mode is masked by the
    umask. A process killed at any point leaves the old file or the new one,
    plus at most a temporary named ``.<name>.<random>.redline-tmp``
    (:func:`remove_temporaries`). Not fsynced, like git's own worktree writes.
    """
    if mode is None:
        try:
            mode = os.stat(path).st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o666 & ~umask()
    else:
        mode &= ~umask()
    for _ in range(100):
        tmp = path.parent / f".{path.name}.{os.urandom(4).hex()}{TEMP_SUFFIX}"
        try:
            fd = open_new(tmp, 0o600)
            break
        except FileExistsError:
            continue
    else:
        raise FileExistsError(errno.EEXIST, f"no free temporary name next to {path}")
    try:
        try:
            write_all(fd, data)
            os.fchmod(fd, mode)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def remove_temporaries(path: Path) -> None:
    """Remove the temporaries a killed :func:`replace_file` of ``path`` left beside it."""
    prefix = f".{path.name}."
    with contextlib.suppress(OSError), os.scandir(path.parent) as entries:
        for entry in entries:
            if entry.name.startswith(prefix) and entry.name.endswith(TEMP_SUFFIX):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


def write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    """Write all of ``data`` to ``fd`` (``os.write`` may write less than asked)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def umask() -> int:
    """The process umask (read from /proc where that does not change it for a moment)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
