"""Files under a root directory: existing files to edit, atomic writes."""

from __future__ import annotations

from pathlib import Path

from redline.engine.errors import RequestError
from redline.engine.paths import checked_path
from redline.fsops.atomic import replace_file
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
            "use the write tool)",
            "path",
        )
    return target


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` in one step, its mode kept (see fsops.atomic).

    A process killed at any point leaves the old file or the new one, never half
    of one. Like git's own worktree writes (and redline's git mode) the file is
    not fsynced: what survives a power cut is the file system's to say.
    """
    replace_file(path, data)
