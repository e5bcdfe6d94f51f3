"""Reading a repository in the command's own process, for commands that only read.

``redline log`` and ``redline session list`` read the session records, the
``redline/*`` branches and the notes directly: reading starts no daemon.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pygit2

    from redline.gitops.repo import Layout


def open_repository(path: Path) -> tuple[pygit2.Repository, Layout]:
    """The repository ``path`` is in (NotARepository, which says so, when none)."""
    from redline.gitops.repo import main_repository

    return main_repository(path)
