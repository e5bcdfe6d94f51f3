"""Opening a repository and finding redline's state inside its common directory."""

from __future__ import annotations

from pathlib import Path

import pygit2

from redline.engine.records import record
from redline.gitops.errors import NotARepository
from redline.gitops.names import STATE_DIR, WORKTREES

NOTES_REF = "refs/notes/redline"
BRANCH_PREFIX = "redline/"


def discover(path: Path) -> pygit2.Repository:
    found = pygit2.discover_repository(str(path))
    if found is None:
        raise NotARepository(str(path))
    return pygit2.Repository(found)


def common_dir(repo: pygit2.Repository) -> Path:
    """The git directory shared by all worktrees (``git rev-parse --git-common-dir``)."""
    gitdir = Path(repo.path)
    pointer = gitdir / "commondir"
    if pointer.is_file():
        return (gitdir / pointer.read_text().strip()).resolve()
    return gitdir.resolve()


@record(frozen=True)
class Layout:
    """Where redline keeps its state for one repository."""

    common: Path

    @property
    def state(self) -> Path:
        return self.common / STATE_DIR

    @property
    def worktrees(self) -> Path:
        return self.state / WORKTREES

    @property
    def sessions(self) -> Path:
        return self.state / "sessions"

    @property
    def closed(self) -> Path:
        """Records of closed sessions whose branch was kept (where their history starts)."""
        return self.state / "closed"

    @property
    def journal(self) -> Path:
        return self.state / "journal"

    def ensure(self) -> None:
        for folder in (self.state, self.worktrees, self.sessions, self.closed, self.journal):
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)


def main_repository(path: Path) -> tuple[pygit2.Repository, Layout]:
    """The repository that owns ``path`` (its main worktree view) and its layout."""
    repo = discover(path)
    common = common_dir(repo)
    if Path(repo.path).resolve() != common:
        repo = pygit2.Repository(str(common))
    return repo, Layout(common)


def signature(repo: pygit2.Repository) -> pygit2.Signature:
    """The configured git identity, or redline's own when none is set."""
    try:
        return repo.default_signature
    except (KeyError, pygit2.GitError):
        return pygit2.Signature("redline", "redline@localhost")
