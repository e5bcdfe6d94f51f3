"""Session names and where a session lives, without pygit2: the CLI refuses a bad name
before it starts a daemon, and finds a session's worktree without opening the repository."""

from __future__ import annotations

import re
from pathlib import Path

from redline.gitops.errors import SessionError

STATE_DIR = "redline"  # redline's folder in the git common directory
WORKTREES = "worktrees"  # the sessions' worktrees, in that folder

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")


def check_name(name: str) -> None:
    if not _NAME.fullmatch(name) or name.endswith((".lock", ".")) or ".." in name:
        raise SessionError(
            f"invalid session name {name!r}: use letters, digits, '.', '_' and '-' "
            "(up to 63 characters, starting with a letter or digit)"
        )


def session_worktree(common: Path, name: str) -> Path:
    """Where session ``name``'s worktree is, for the repository of git common dir ``common``."""
    return common / STATE_DIR / WORKTREES / name
