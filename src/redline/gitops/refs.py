"""Moving a ref with a true compare-and-swap, by git's own loose-ref protocol.

Git moves a ref by creating ``<ref>.lock`` exclusively, checking the ref's
value while it holds the lock, writing the new value into the lock file,
appending to the reflog, then renaming the lock over the ref. redline does
the same, so a git process that moves the same ref at the same moment either
waits for the lock or finds the new value; neither side overwrites the other.

Objects staged in memory (see gitops.packs) are written first: a ref never
names an object that is not on disk. The lock file is created by the caller's
writer (gitops.writer), so in the daemon it takes the inode of a spare.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pygit2

from redline.fsops.atomic import LOCK_SUFFIX, locked, write_all
from redline.fsops.resources import ResourceError, is_resource
from redline.gitops.errors import GitModeError, RefMoved
from redline.gitops.objects import ident
from redline.gitops.repo import common_dir, signature
from redline.gitops.writer import PLAIN, Writer

_LOGGED = ("refs/heads/", "refs/remotes/", "refs/notes/")  # core.logAllRefUpdates=true
LOCK_WAIT = 1.0  # seconds to wait for a ref lock another process holds (git's is 0.1)


def update(
    repo: pygit2.Repository,
    name: str,
    old: pygit2.Oid | None,
    new: pygit2.Oid,
    message: str,
    *,
    writer: Writer = PLAIN,
    wait: float | None = None,
) -> None:
    """Move ``name`` from ``old`` (None: it must not exist) to ``new``.

    RefMoved when it holds something else; LockHeld (git's wording) when another
    process holds its lock for longer than ``wait`` seconds (LOCK_WAIT when None).
    """
    writer.flush()
    if new not in repo:
        raise GitModeError(
            f"cannot move {name} to {new}: the repository has no such object; "
            "run `git fsck` to see what is missing"
        )
    common = common_dir(repo)
    path = common / name
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # The lock holds the new id from its first moment: a lock left by a process
        # killed while holding it says what it was writing (see gitops.publish).
        with locked(
            path,
            content=f"{new}\n".encode(),
            wait=LOCK_WAIT if wait is None else wait,
            open_new=writer.open_new,
            durable=writer.durability.refs,
        ):
            expected = str(old) if old is not None else None
            if _read(common, name) != expected:
                raise RefMoved(name)
            _log(repo, common, name, expected, str(new), message)
    except OSError as exc:
        raise _cannot(name, exc) from None


def lock_path(repo: pygit2.Repository, name: str) -> Path:
    """Where git's lock on ref ``name`` lives."""
    return common_dir(repo) / f"{name}{LOCK_SUFFIX}"


def _read(common: Path, name: str) -> str | None:
    """The id ``name`` holds (loose, else packed), or None when it does not exist."""
    try:
        text = (common / name).read_bytes().decode("ascii", "replace").strip()
    except FileNotFoundError:
        return _packed(common, name)
    if text.startswith("ref:"):
        raise GitModeError(
            f"{name} is a symbolic ref ({text}), which redline does not move; make it a plain "
            f"ref again with `git update-ref --no-deref {name} <commit>`"
        )
    return text


def _packed(common: Path, name: str) -> str | None:
    try:
        lines = (common / "packed-refs").read_text("ascii", "replace").splitlines()
    except FileNotFoundError:
        return None
    for line in lines:
        oid, _, ref = line.partition(" ")
        if ref == name and not line.startswith(("#", "^")):
            return oid
    return None


def _log(
    repo: pygit2.Repository, common: Path, name: str, old: str | None, new: str, message: str
) -> None:
    """Append to the ref's reflog where git would (``core.logAllRefUpdates``)."""
    log = common / "logs" / name
    if not log.exists():
        if not _logged(repo, name):
            return
        log.parent.mkdir(parents=True, exist_ok=True)
    moved = f"{old or '0' * len(new)} {new} ".encode()
    line = moved + ident(signature(repo)) + f"\t{message}\n".encode()
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(fd).st_size
        try:
            write_all(fd, line)
        except OSError:
            # Half a line would glue itself to the next one: the log is cut back (which
            # needs no space), and the ref is not moved.
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)
            raise
    finally:
        os.close(fd)


def _logged(repo: pygit2.Repository, name: str) -> bool:
    try:
        setting = str(repo.config["core.logAllRefUpdates"]).lower()
    except KeyError:
        setting = "false" if repo.is_bare else "true"
    if setting == "always":
        return True
    if setting in ("true", "yes", "on", "1"):
        return name.startswith(_LOGGED)
    return False


def _cannot(name: str, exc: OSError) -> GitModeError | ResourceError:
    if is_resource(exc):
        return ResourceError(f"cannot move {name}", exc)
    return GitModeError(
        f"cannot move {name} ({exc.strerror or exc}: {exc.filename}); check that the "
        "repository's refs folder is writable and that no file or folder is in the ref's way"
    )
