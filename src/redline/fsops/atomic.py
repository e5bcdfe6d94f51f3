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
import stat
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
    path: Path,
    *,
    content: bytes | None = None,
    mode: int = 0o644,
    wait: float = 0.0,
    open_new: OpenNew = create_new,
    durable: bool = False,
) -> Iterator[Lock]:
    """Hold ``path``'s lock file for the block; replace ``path`` with it if the block succeeds.

    With ``content``, the lock never exists without it: the content is written to
    a temporary file first, which is then linked to the lock's name (``link(2)``
    fails when the name exists, as ``O_EXCL`` does). So a lock left by a process
    killed at any moment shows what it was writing, and crash recovery can tell
    its own leftover from a lock another process holds.

    A lock that exists is waited for up to ``wait`` seconds (git waits 100 ms for
    a ref's), then :class:`LockHeld` names it. An error inside the block removes
    the lock and leaves ``path`` as it was. ``durable``: the new content is
    fsynced before the lock becomes ``path``, and the folder after.
    """
    lock = path.with_name(path.name + LOCK_SUFFIX)
    staged = None if content is None else _staged_content(lock, content, mode, open_new, durable)
    deadline = time.monotonic() + wait
    delay = 0.001
    try:
        while True:
            try:
                fd = _take(lock, staged, mode, open_new)
                break
            except FileExistsError:
                if time.monotonic() >= deadline:
                    raise LockHeld(lock) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.05)
    finally:
        if staged is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(staged[1])
            os.close(staged[0])
    held = Lock(path, lock, fd)
    try:
        try:
            yield held
            if durable and held.commit and content is None:
                os.fsync(fd)
        finally:
            os.close(fd)
        if held.commit:
            os.replace(lock, path)
            if durable:
                fsync_dir(path.parent)
        else:
            os.unlink(lock)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(lock)
        raise


def _staged_content(
    lock: Path, content: bytes, mode: int, open_new: OpenNew, durable: bool = False
) -> tuple[int, Path]:
    """A temporary file beside ``lock`` holding ``content``: its descriptor and name."""
    tmp = _temporary(lock, mode, open_new)
    fd, name = tmp
    try:
        write_all(fd, content)
        if durable:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name)
        raise
    return tmp


def _take(lock: Path, staged: tuple[int, Path] | None, mode: int, open_new: OpenNew) -> int:
    """Create ``lock`` exclusively (from the staged content, if any); a descriptor on it."""
    if staged is None:
        return open_new(lock, mode)
    fd, name = staged
    try:
        os.link(name, lock)  # FileExistsError when someone holds the lock
    except FileExistsError:
        raise
    except OSError:  # a file system without hard links: create it, then write
        fd = open_new(lock, mode)
        try:
            write_all(fd, os.pread(staged[0], os.fstat(staged[0]).st_size, 0))
        except BaseException:
            os.close(fd)
            os.unlink(lock)
            raise
        return fd
    try:
        return os.dup(fd)
    except BaseException:  # no descriptor left: the lock taken must not stay behind
        os.unlink(lock)
        raise


def _temporary(path: Path, mode: int, open_new: OpenNew) -> tuple[int, Path]:
    """A new file with a unique name beside ``path``: its descriptor and name."""
    for _ in range(100):
        tmp = path.parent / f".{path.name}.{os.urandom(4).hex()}{TEMP_SUFFIX}"
        try:
            return open_new(tmp, mode), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, f"no free temporary name next to {path}")


def replace_file(
    path: Path,
    data: bytes | bytearray | memoryview,
    mode: int | None = None,
    *,
    open_new: OpenNew = create_new,
    durable: bool = False,
) -> None:
    """Replace (or create) ``path`` with ``data`` through a temporary file beside it.

    ``mode`` None keeps an existing file's mode, and gives a new one what
    ``open()`` would (0o666 less the umask); an explicit mode is masked by the
    umask. A process killed at any point leaves the old file or the new one,
    plus at most a temporary named ``.<name>.<random>.redline-tmp``
    (:func:`remove_temporaries`). Not fsynced, like git's own worktree writes,
    unless ``durable`` (then the data is, before the rename: the caller syncs
    the folder once it has written all it writes there, :func:`fsync_dir`).
    """
    if mode is None:
        try:
            mode = os.stat(path).st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o666 & ~umask()
    else:
        mode &= ~umask()
    fd, tmp = _temporary(path, 0o600, open_new)
    try:
        try:
            write_all(fd, data)
            os.fchmod(fd, mode)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def fsync_dir(path: Path) -> None:
    """Make the names in folder ``path`` durable (a file renamed into it, or made there)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        with contextlib.suppress(OSError):  # some file systems cannot sync a folder
            os.fsync(fd)
    finally:
        os.close(fd)


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


class NotRegular(OSError):
    """The path names something other than a regular file (a FIFO, socket or device)."""


def read_regular(path: str | os.PathLike[str], *, follow_links: bool = True) -> bytes:
    """The bytes of the regular file at ``path``, checked on the open file itself.

    The path may have been swapped for a FIFO or a device since it was checked:
    the file is opened without blocking and refused (:class:`NotRegular`) unless
    the descriptor is a regular file, so a read never waits on a pipe or runs on
    without end from ``/dev/zero``.
    """
    return read_regular_stat(path, follow_links=follow_links)[0]


def read_regular_stat(
    path: str | os.PathLike[str], *, follow_links: bool = True
) -> tuple[bytes, os.stat_result]:
    """As :func:`read_regular`, with the status of the file that was read."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
    if not follow_links:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory", path)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegular(errno.EINVAL, "not a regular file (a FIFO, socket or device)", path)
        chunks = []
        while chunk := os.read(fd, max(info.st_size + 1, 1 << 16)):
            chunks.append(chunk)
        return b"".join(chunks), info
    finally:
        os.close(fd)
