"""Finding a repository's common git directory and the daemon's files, without pygit2.

The daemon's files are private to the user who runs it. Its folders are made
by :func:`private_dir`: created 0700 with ``mkdir`` (never through a link), then
verified on the open folder — a real directory, owned by this user, mode 0700
— and refused with :class:`UnsafeDirectory` otherwise. The socket usually sits
in ``<git-common-dir>/redline/``; when that path is too long for a socket it
goes to ``$XDG_RUNTIME_DIR/redline/`` or, without that variable, to
``/tmp/redline-<uid>/``: a name another user may create first, hence the
checks. The log, pid and lock files are opened with :func:`private_opener`
(0600, and tightened to it when an older version left them 0644).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import NamedTuple

from redline.daemon.client import DaemonError
from redline.gitops.errors import NotARepository
from redline.gitops.names import STATE_DIR

# sun_path holds 108 bytes on Linux (104 on macOS) including the final NUL.
MAX_SOCKET_PATH = 100
SHARED_TMP = Path("/tmp")  # not $TMPDIR: on macOS that path is too long for a socket
PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
SOCKET_DIR_ADVICE = (
    "remove it if it is yours (redline makes it again), or set XDG_RUNTIME_DIR "
    "to a private directory of yours"
)
STATE_DIR_ADVICE = (
    "remove it if it is yours (redline makes it again); if another user runs redline "
    "in this repository, work in a clone of your own"
)


class UnsafeDirectory(DaemonError):
    """A folder for the daemon's files exists but is not this user's private folder."""

    def __init__(self, path: Path, problem: str, advice: str = SOCKET_DIR_ADVICE) -> None:
        self.path = path
        self.problem = problem
        super().__init__(
            f"refusing to use {path} for the redline daemon's files: {problem}; it must be "
            f"a directory (not a link) owned by you with mode 0700: {advice}"
        )


class NoRepository(NotARepository):
    """Not inside a git repository, found the client's way (without pygit2)."""

    def __init__(self, path: Path) -> None:
        super().__init__(str(path))


def common_dir(start: Path) -> Path:
    """The git common directory of the repository containing ``start``."""
    current = start.resolve()
    for folder in (current, *current.parents):
        dot_git = folder / ".git"
        if dot_git.is_dir():
            return _common(dot_git)
        if dot_git.is_file():
            text = dot_git.read_text(encoding="utf-8", errors="replace").strip()
            if text.startswith("gitdir:"):
                gitdir = Path(text.removeprefix("gitdir:").strip())
                return _common(gitdir if gitdir.is_absolute() else (folder / gitdir).resolve())
        if (folder / "HEAD").is_file() and (folder / "objects").is_dir():
            return _common(folder)  # a bare repository or a git directory itself
    raise NoRepository(start)


def _common(gitdir: Path) -> Path:
    pointer = gitdir / "commondir"
    if pointer.is_file():
        return (gitdir / pointer.read_text(encoding="utf-8").strip()).resolve()
    return gitdir.resolve()


class DaemonFiles(NamedTuple):
    """The daemon's socket, pid, lock and log files for one repository.

    (A NamedTuple, not a dataclass: every ``redline apply --session`` builds one, and
    importing :mod:`dataclasses`, which imports :mod:`inspect`, would cost that call
    more than its own work here.)"""

    common: Path
    runtime_dir: Path | None = None  # where sockets go when the natural path is too long
    shared_tmp: Path = SHARED_TMP  # ...and without a runtime directory, a folder of ours here

    @property
    def state(self) -> Path:
        return self.common / STATE_DIR

    @property
    def socket(self) -> Path:
        natural = self.state / "daemon.sock"
        if len(str(natural).encode()) <= MAX_SOCKET_PATH:
            return natural
        import hashlib  # only for the rare long path

        digest = hashlib.sha256(str(self.common).encode()).hexdigest()[:16]
        if self.runtime_dir is not None:
            return self.runtime_dir / "redline" / f"{digest}.sock"
        return self.shared_tmp / f"redline-{os.getuid()}" / f"{digest}.sock"

    @property
    def pid(self) -> Path:
        return self.state / "daemon.pid"

    @property
    def lock(self) -> Path:
        return self.state / "daemon.lock"

    @property
    def log(self) -> Path:
        return self.state / "daemon.log"

    def ensure(self) -> None:
        """Make the daemon's folders (private, verified) and tighten its older files.

        The state folder is inside the repository's git directory: made there,
        and tightened to 0700 when an older version left it wider. A socket
        folder elsewhere (``$XDG_RUNTIME_DIR/redline``, ``/tmp/redline-<uid>``)
        is made in a folder that must exist, and one that exists already must
        be private as found: UnsafeDirectory if not.
        """
        private_dir(self.state, tighten=True, advice=STATE_DIR_ADVICE)
        if self.socket.parent != self.state:
            private_dir(self.socket.parent, tighten=False)
        for path in (self.log, self.pid, self.lock):
            _tighten(path)


def private_dir(path: Path, *, tighten: bool, advice: str = SOCKET_DIR_ADVICE) -> None:
    """Make ``path`` a directory only this user can use, or raise UnsafeDirectory.

    Created with mode 0700 when missing (its parent must exist). Then checked
    on the open directory, never through a link: a directory, owned by this
    user, mode 0700. A directory this call created is set to 0700 whatever the
    umask; an existing one with another mode is set to 0700 when ``tighten``
    and refused otherwise.
    """
    try:
        os.mkdir(path, PRIVATE_DIR)
        created = True
    except FileExistsError:
        created = False
    except FileNotFoundError:
        raise UnsafeDirectory(
            path, f"its parent folder {path.parent} does not exist", advice
        ) from None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        if os.path.islink(path):
            problem = "it is a symbolic link"
        elif not os.path.isdir(path):
            problem = "it is not a directory"
        else:
            problem = f"it cannot be opened ({exc.strerror})"
        raise UnsafeDirectory(path, problem, advice) from None
    try:
        info = os.fstat(fd)
        if info.st_uid != os.getuid():
            raise UnsafeDirectory(
                path,
                f"it belongs to user id {info.st_uid}, not to you (user id {os.getuid()})",
                advice,
            )
        mode = stat.S_IMODE(info.st_mode)
        if mode != PRIVATE_DIR:
            if not (created or tighten):
                raise UnsafeDirectory(path, f"its mode is {mode:04o}, so others can use it", advice)
            os.fchmod(fd, PRIVATE_DIR)
    finally:
        os.close(fd)


def private_opener(path: str | os.PathLike[str], flags: int) -> int:
    """``open(..., opener=private_opener)``: created 0600, tightened to 0600, links refused."""
    fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, PRIVATE_FILE)
    try:
        if stat.S_IMODE(os.fstat(fd).st_mode) != PRIVATE_FILE:
            os.fchmod(fd, PRIVATE_FILE)
    except OSError:
        os.close(fd)
        raise
    return fd


def _tighten(path: Path) -> None:
    """Set a file of ours that an older version left readable by others to 0600."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    ours = stat.S_ISREG(info.st_mode) and info.st_uid == os.getuid()
    if ours and stat.S_IMODE(info.st_mode) != PRIVATE_FILE:
        os.chmod(path, PRIVATE_FILE)
