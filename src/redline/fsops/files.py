"""Files under a root directory: existing files to edit, atomic writes."""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

from redline.engine.errors import RequestError
from redline.engine.paths import checked_path
from redline.fsops.confine import confine


def resolve(root: Path, path: str) -> Path:
    """The existing file ``path`` names under ``root``, through links that stay inside it.

    ``path`` is relative (any spelling the policy accepts); refused as
    :func:`redline.fsops.confine.locate` refuses, or when it is a directory or missing.
    """
    relative = checked_path(path)
    target = Path(confine(root, relative, follow_links=True))
    if target.is_dir():
        raise RequestError(f"path {relative!r} is a directory; name a file", "path")
    if not target.exists():
        raise RequestError(
            f"file {relative!r} does not exist under {root}; check the path (to create a file, "
            "use apply_patch with *** Add File)",
            "path",
        )
    return target


def _new_file_mode() -> int:
    """The mode ``open()`` would give a new file: 0o666 less the process umask."""
    return 0o666 & ~_umask()


def _umask() -> int:
    # /proc tells without changing it (os.umask would, for a moment, for every thread).
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    umask = os.umask(0o022)
    os.umask(umask)
    return umask


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` via a temporary file in the same directory, mode kept.

    A process killed at any point leaves the old file or the new one, never half
    of one. Like git's own worktree writes (and redline's git mode) the file is
    not fsynced: what survives a power cut is the file system's to say.
    """
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = _new_file_mode()
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
    for _ in range(100):
        tmp = path.parent / f".{path.name}.{os.urandom(4).hex()}.redline-tmp"
        try:
            fd = os.open(tmp, flags, 0o600)
            break
        except FileExistsError:
            continue
    else:
        raise FileExistsError(errno.EEXIST, f"no free temporary name next to {path}")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            os.fchmod(handle.fileno(), mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
