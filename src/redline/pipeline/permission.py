"""The permission step of ``redline apply`` in embedded mode.

:func:`permission_gate` reads the folder's rules once; each request then gets
the one verdict every front end and the daemon reach
(:func:`redline.tools.permissions.verdict`): None lets it through; a
``rejected`` result names the rule instead, and nothing is applied. A command
reading stdin has no one to ask, so an ``ask`` rule is refused with what to
configure. When the settings cannot be read, every request but a read is
answered ``failed``. The daemon judges every ``apply`` it is sent the same way
(``daemon.settings``), so a socket client cannot skip the rules.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from redline.engine.errors import RedlineError
from redline.engine.records import replace
from redline.settings.files import Committed
from redline.settings.tools import load_config
from redline.tools.permissions import unknown_rules, verdict

if TYPE_CHECKING:
    from redline.settings.folder import FolderSettings

Gate = Callable[[Any], dict[str, Any] | None]


def permission_gate(
    root: Path,
    paths_root: Path | None = None,
    committed: Callable[[], Committed] | None = None,
    folder: FolderSettings | None = None,
) -> Gate:
    """The check for requests to the folder or repository ``root`` (its settings are read
    now, unless ``folder`` holds them, read already), whose paths are relative to
    ``paths_root`` (default ``root``; a session's worktree in git mode, where an absolute
    path names a file of the worktree). ``committed`` reads the repository's settings files
    as the main line has them (git mode), instead of from ``root``."""
    try:
        if folder is not None and committed is None:
            permissions = folder.usable_config().permissions
        else:
            settings = committed() if committed is not None else None
            permissions = load_config(root, settings).permissions
    except RedlineError as exc:
        return partial(unknown_rules, str(exc))
    if paths_root is not None:
        permissions = replace(permissions, root=str(paths_root))
    if not permissions.rules and not permissions.user:
        return lambda obj: None
    return partial(verdict, permissions)
