"""A failure of the machine, in words a person acts on: what ran out, and what to do.

A write can fail for reasons that have nothing to do with the request: the
disk is full, the file system was remounted read-only, the process ran out of
file descriptors, another program removed a folder redline was writing in.
Every front end answers such a failure like a refusal — the status, what ran
out, what to do, and what became of the request — and the words come from
here: :func:`explain` says what ran out and what to do, and the caller, which
knows, adds what became of the request. :class:`ResourceError` carries all
three for the places that raise instead of answering.

libgit2 reports a failed write as an ``OSError`` without an ``errno`` (its
message ends in the system's words): :func:`resource_errno` finds the errno
in the message then.
"""

from __future__ import annotations

import errno
import os

from redline.engine.errors import RedlineError

# errno -> (what ran out, what to do); "{where}" is the file or folder concerned.
_RESOURCES: dict[int, tuple[str, str]] = {
    errno.ENOSPC: (
        "the disk is full",
        "free space on the file system that holds {where}, then retry",
    ),
    errno.EDQUOT: (
        "the disk quota is used up",
        "free space on the file system that holds {where} (or ask for a larger quota), then retry",
    ),
    errno.EROFS: (
        "the file system is read-only",
        "make {where} writable again (remount its file system read-write), then retry",
    ),
    errno.EACCES: (
        "permission was denied",
        "give your user write access to {where} (check its owner and mode with `ls -ld`), "
        "then retry",
    ),
    errno.EPERM: (
        "the operation was not permitted",
        "check the owner, mode and attributes of {where} (`ls -ld`, `lsattr -d`), then retry",
    ),
    errno.EMFILE: (
        "the process has too many files open",
        "raise the open-file limit (`ulimit -n`; it is {limit} now) or stop what holds "
        "files open, then retry",
    ),
    errno.ENFILE: (
        "the system has too many files open",
        "stop some programs (or raise fs.file-max), then retry",
    ),
    errno.ENOMEM: ("the machine is out of memory", "free some memory, then retry"),
    errno.EIO: (
        "the disk reported an input/output error",
        "check the disk that holds {where} (`dmesg` shows what failed), then retry",
    ),
    errno.ENOENT: (
        "a file or folder redline was using was removed",
        "retry; if it keeps failing, check that no program deletes files under {where}",
    ),
    errno.ENOTDIR: (
        "a folder redline was using was replaced by a file",
        "retry; if it keeps failing, check what replaced the folder on the way to {where}",
    ),
    errno.ESTALE: (
        "a file on a network file system went away",
        "retry; if it keeps failing, remount the file system that holds {where}",
    ),
    errno.EFBIG: (
        "a file would be larger than the system allows",
        "raise the file size limit (`ulimit -f`), then retry",
    ),
}
_BY_MESSAGE = {os.strerror(number): number for number in _RESOURCES}


def resource_errno(exc: BaseException) -> int | None:
    """The errno of ``exc`` when it is a failure of the machine (see the module), else None."""
    if not isinstance(exc, OSError):
        return None
    if exc.errno is not None:
        return exc.errno if exc.errno in _RESOURCES else None
    text = str(exc)
    for message, number in _BY_MESSAGE.items():
        if message in text:
            return number
    return None


def is_resource(exc: BaseException) -> bool:
    return resource_errno(exc) is not None


def explain(exc: OSError, where: str | os.PathLike[str] | None = None) -> str:
    """What ran out and what to do, for a failed operation on ``where`` (default: the file
    the error names): ``the disk is full (No space left on device); free space on ...``."""
    number = resource_errno(exc)
    place = str(where if where is not None else (exc.filename or "the repository"))
    if number is None:
        reason = exc.strerror or str(exc) or type(exc).__name__
        return f"{reason} ({place}); check it, then retry"
    what, remedy = _RESOURCES[number]
    reason = exc.strerror or os.strerror(number)
    return f"{what} ({reason}); " + remedy.format(where=place, limit=_open_file_limit())


def _open_file_limit() -> str:
    try:
        import resource

        return str(resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    except (ImportError, OSError, ValueError):  # not on this platform
        return "unknown"


class ResourceError(RedlineError):
    """The machine refused an operation redline needed.

    ``doing`` is what failed ("cannot move refs/heads/x"), ``cause`` the
    system's error, and ``outcome`` what became of the request ("the edit was
    taken back: nothing was written") — None where the code that failed cannot
    know: the caller that answers the request says it then.
    """

    def __init__(self, doing: str, cause: OSError, outcome: str | None = None) -> None:
        self.doing = doing
        self.cause = cause
        self.outcome = outcome
        said = f"{doing}: {explain(cause)}"
        super().__init__(said if outcome is None else f"{said} — {outcome}")
