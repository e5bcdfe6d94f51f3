"""The permission check a caller runs before it applies a request.

``redline apply`` (embedded and ``--session``) asks :func:`permission_gate` once,
then each request: None lets it through; a result dict (status ``rejected``
naming the rule, or ``failed`` when the settings cannot be read) is the answer
instead, and nothing is applied (a read always passes: it needs no permission).
``ask`` is refused here, with what to configure: a command reading stdin has no
one to ask (``redline mcp`` asks the user through the client instead).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from redline.engine.errors import RedlineError
from redline.tools.config import Committed, load_config
from redline.tools.permissions import needs_permission, rejected_result, request_decision

Gate = Callable[[Any], dict[str, Any] | None]


def permission_gate(
    root: Path, paths_root: Path | None = None, committed: Callable[[], Committed] | None = None
) -> Gate:
    """The check for requests to the folder or repository ``root`` (its settings are read
    now), whose paths are relative to ``paths_root`` (default ``root``; a session's
    worktree in git mode, where an absolute path names a file of the worktree).
    ``committed`` reads the repository's settings files as the main line has them (git
    mode), instead of from ``root``."""
    try:
        permissions = load_config(root, committed() if committed is not None else None).permissions
    except RedlineError as exc:
        return _unreadable(str(exc))
    if paths_root is not None:
        permissions = replace(permissions, root=str(paths_root))
    if not permissions.rules and not permissions.user:
        return lambda obj: None

    def gate(obj: Any) -> dict[str, Any] | None:
        if not isinstance(obj, dict):
            return None  # refused as invalid by the wire format
        decision, path = request_decision(permissions, obj)
        if decision.action == "allow":
            return None
        return rejected_result(decision, str(obj.get("tool")), path)

    return gate


def _unreadable(error: str) -> Gate:
    from redline.engine.result import Result

    message = f"{error}; nothing was applied, since the permissions it holds are unknown"

    def gate(obj: Any) -> dict[str, Any] | None:
        if isinstance(obj, dict) and not needs_permission(obj.get("tool")):
            return None
        path = obj.get("path") if isinstance(obj, dict) else None
        given = path if isinstance(path, str) else None
        return Result("failed", path=given, error=message).to_dict()

    return gate
