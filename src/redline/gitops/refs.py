"""Moving a ref with a true compare-and-swap, by git's own loose-ref protocol.

Git moves a ref by creating ``<ref>.lock`` exclusively, checking the ref's
value while it holds the lock, writing the new value into the lock file,
appending to the reflog, then renaming the lock over the ref. redline does
the same, so a git process that moves the same ref at the same moment either
waits for the lock or finds the new value; neither side overwrites the other.

Objects staged in memory (see gitops.packs) are written first: a ref never
names an object that is not on disk. The lock file is created through
gitops.spares, so in the daemon it takes the inode of a spare.
"""

from __future__ import annotations

import os
from pathlib import Path

import pygit2

from redline.gitops import spares
from redline.gitops.errors import GitModeError, RefMoved
from redline.gitops.objects import ident
from redline.gitops.packs import flush_staged
from redline.gitops.repo import common_dir, signature

_LOGGED = ("refs/heads/", "refs/remotes/", "refs/notes/")  # core.logAllRefUpdates=true


def update(
    repo: pygit2.Repository, name: str, old: pygit2.Oid | None, new: pygit2.Oid, message: str
) -> None:
    """Move ``name`` from ``old`` (None: it must not exist) to ``new``, or raise RefMoved."""
    flush_staged(repo)
    if new not in repo:
        raise GitModeError(
            f"cannot move {name} to {new}: the repository has no such object; "
            "run `git fsck` to see what is missing"
        )
    common = common_dir(repo)
    path = common / name
    lock = path.with_name(path.name + ".lock")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _cannot(name, exc) from None
    try:
        fd = spares.open_new(lock)
    except FileExistsError:
        raise RefMoved(name) from None  # someone else is moving it right now
    except OSError as exc:
        raise _cannot(name, exc) from None
    moved = False
    try:
        try:
            expected = str(old) if old is not None else None
            if _read(common, name) != expected:
                raise RefMoved(name)
            spares.write_all(fd, f"{new}\n".encode())
        finally:
            os.close(fd)
        _log(repo, common, name, expected, str(new), message)
        os.replace(lock, path)
        moved = True
    except OSError as exc:
        raise _cannot(name, exc) from None
    finally:
        if not moved:
            lock.unlink(missing_ok=True)


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
        spares.write_all(fd, line)
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


def _cannot(name: str, exc: OSError) -> GitModeError:
    return GitModeError(
        f"cannot move {name} ({exc.strerror or exc}: {exc.filename}); check that the "
        "repository's refs folder is writable and that no file or folder is in the ref's way"
    )
