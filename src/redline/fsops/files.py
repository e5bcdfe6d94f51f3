"""Files under a root directory: confined paths, reads, atomic writes."""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path, PurePosixPath

from redline.engine.errors import RequestError


def relative_path(root: Path, path: str) -> str:
    """``path`` relative to ``root`` when it is an absolute path inside it; else ``path``.

    Agents such as Claude Code send absolute paths. The root may have been given
    as a relative path or through a symbolic link, and the path may spell it
    either way: it is compared with the root as given (made absolute) and as
    resolved, and then by its resolved directory. Anything else is returned as
    it is, for :func:`confine` to refuse.
    """
    pure = PurePosixPath(path)
    if not path.startswith("/") or "\x00" in path or ".." in pure.parts:
        return path
    try:
        os.fsencode(path)
        bases = dict.fromkeys((Path(os.path.abspath(root)), root.resolve()))
        inside: PurePosixPath | None = None
        for base in bases:
            if pure.is_relative_to(base):
                inside = pure.relative_to(base)
                break
        if inside is None:
            directory = Path(pure.parent).resolve()
            base = root.resolve()
            if directory != base and base not in directory.parents:
                return path
            inside = PurePosixPath(directory.relative_to(base)) / pure.name
    except (OSError, RuntimeError, ValueError):  # UnicodeEncodeError, a link loop
        return path
    relative = inside.as_posix() if inside.parts else "."
    return relative + "/" if path.endswith("/") and relative != "." else relative


def confine(root: Path, relative: str) -> Path:
    """Where ``relative`` points under ``root``, which it must not leave (it may not exist)."""
    if not relative or "\x00" in relative:
        raise RequestError(
            "path is empty or contains a NUL byte; give a path relative to the root", "path"
        )
    try:
        os.fsencode(relative)
    except UnicodeEncodeError:
        raise RequestError(
            f"path {relative!r} contains a character no file name can hold (a lone "
            "surrogate); send the path as the file's name is spelt",
            "path",
        ) from None
    if relative.endswith(("/", "\\")):
        raise RequestError(f"path {relative!r} ends with a slash; name a file", "path")
    pure = PurePosixPath(relative)
    if (
        pure.is_absolute()
        or relative.startswith("\\")
        or (len(relative) > 1 and relative[1] == ":")
    ):
        raise RequestError(
            f"path {relative!r} is absolute; give it relative to the root ({root})", "path"
        )
    if ".." in pure.parts:
        raise RequestError(f"path {relative!r} leaves the root; '..' is not allowed", "path")
    # String paths: this runs for every request, and pathlib's resolve costs more.
    base = os.path.realpath(root)
    target = os.path.realpath(os.path.join(base, relative))
    prefix = base.rstrip("/") + "/"
    if target != base and not target.startswith(prefix):
        raise RequestError(
            f"path {relative!r} resolves outside the root through a symbolic link; "
            "edit the link's target inside the root instead",
            "path",
        )
    inside = target[len(prefix) :].split("/") if target != base else []
    if any(part.lower() == ".git" for part in (*pure.parts, *inside)):
        raise RequestError(
            f"path {relative!r} is inside a .git directory, which redline never edits; "
            "change the repository with git itself",
            "path",
        )
    return Path(target)


def resolve(root: Path, relative: str) -> Path:
    """The existing file ``relative`` names under ``root``; refuse anything that leaves it."""
    target = confine(root, relative)
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


def refuse_links(root: Path, relative: str) -> None:
    """Refuse a path that is, or passes through, a symbolic link under ``root``."""
    current = root
    parts = [p for p in PurePosixPath(relative).parts if p not in ("", ".")]
    for i, part in enumerate(parts):
        current = current / part
        if current.is_symlink():
            what = "is" if i == len(parts) - 1 else "goes through"
            raise RequestError(
                f"path {relative!r} {what} a symbolic link; apply_patch changes regular files "
                "only — name the file the link points to by its own path",
                "path",
            )


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
