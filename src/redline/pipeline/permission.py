"""The permission step of the pipeline: a request, the rules, and the verdict.

:func:`verdict` is the one decision every front end and the daemon reach: None
lets the request through; a ``rejected`` result names the rule instead, and
nothing is applied. An ``ask`` rule passes only when the caller says it asked a
person and they allowed it (``redline mcp`` asks through its client); a caller
with no one to ask (``redline apply`` reading stdin, a raw socket client) gets
it refused with what to configure. When the settings cannot be read, every
request but a read is answered ``failed`` (:func:`unknown_rules`).

``redline apply`` (embedded) asks :func:`permission_gate` once, then each
request. The daemon judges every ``apply`` it is sent (``daemon.rules``), so a
socket client cannot skip the rules.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from redline.engine.errors import RedlineError
from redline.tools.config import Committed, load_config
from redline.tools.permissions import (
    Permissions,
    needs_permission,
    rejected_result,
    request_decision,
)

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
        return partial(unknown_rules, str(exc))
    if paths_root is not None:
        permissions = replace(permissions, root=str(paths_root))
    if not permissions.rules and not permissions.user:
        return lambda obj: None
    return partial(verdict, permissions)


def verdict(permissions: Permissions, obj: Any, asked: bool = False) -> dict[str, Any] | None:
    """None when the rules let request ``obj`` through; else its ``rejected`` result naming
    the rule. ``asked``: the caller asked a person about an ``ask`` rule and they allowed
    it (only a front end that can ask says so; the rest are refused with what to set)."""
    if not isinstance(obj, dict):
        return None  # refused as invalid by the wire format
    decision, path = request_decision(permissions, obj)
    if decision.action == "allow" or (decision.action == "ask" and asked):
        return None
    return rejected_result(decision, str(obj.get("tool")), path)


def unknown_rules(error: str, obj: Any) -> dict[str, Any] | None:
    """The answer to request ``obj`` when the settings holding the rules cannot be read
    (``error`` says why): ``failed``, nothing applied — except a read, which needs no
    permission."""
    from redline.engine.result import Result

    if isinstance(obj, dict) and not needs_permission(obj.get("tool")):
        return None
    path = obj.get("path") if isinstance(obj, dict) else None
    given = path if isinstance(path, str) else None
    message = f"{error}; nothing was applied, since the permissions it holds are unknown"
    return Result("failed", path=given, error=message).to_dict()
