"""Finding a repository's common git directory and the daemon's files, without pygit2."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from redline.gitops.errors import NotARepository

# sun_path holds 108 bytes on Linux (104 on macOS) including the final NUL.
MAX_SOCKET_PATH = 100


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


@dataclass(frozen=True)
class DaemonFiles:
    """The daemon's socket, pid, lock and log files for one repository."""

    common: Path
    runtime_dir: Path | None = None  # where sockets go when the natural path is too long

    @property
    def state(self) -> Path:
        return self.common / "redline"

    @property
    def socket(self) -> Path:
        natural = self.state / "daemon.sock"
        if len(str(natural).encode()) <= MAX_SOCKET_PATH:
            return natural
        import hashlib  # only for the rare long path

        digest = hashlib.sha256(str(self.common).encode()).hexdigest()[:16]
        base = self.runtime_dir or Path("/tmp")
        return base / "redline" / f"{digest}.sock"

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
        for folder in {self.state, self.socket.parent}:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            folder.chmod(0o700)
