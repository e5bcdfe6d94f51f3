"""Runners: a wire request in, its result dict out, whatever happens to it.

``redline apply`` and ``redline mcp`` hand every request to a runner: the
embedded one applies it to the files under a folder in this process; a
daemon caller (``apply --session``, ``redline.mcp.backend.Daemon``) sends it
to a session. A runner never raises for what a request or the daemon does:
:func:`guarded` turns a bug into the request's ``failed`` result, and
:func:`failure`, :func:`rpc_status` and :func:`rpc_error` turn a problem into
one. Nothing heavy is imported until a runner is made (``redline apply``
starts for every edit a hook sends).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from redline.daemon.protocol import RpcError
    from redline.engine.result import Status
    from redline.fsops.behind import WriteBehind
    from redline.fsops.settings import SettingsGuard
    from redline.settings.folder import FolderSettings

Runner = Callable[[Any], dict[str, Any]]


def embedded_runner(
    root: Path,
    dry_run: bool,
    threshold: float | None,
    behind: WriteBehind | None = None,
    folder: FolderSettings | None = None,
) -> Runner:
    """Requests applied to the files under ``root`` in this process (embedded mode), under
    its settings (``folder``; read now when not given)."""
    from redline.engine.edit import EditRequest
    from redline.engine.errors import RequestError
    from redline.engine.result import Result
    from redline.fsops.apply import apply_in_directory
    from redline.pipeline.retries import KeptHints
    from redline.settings.folder import read_folder
    from redline.tools.permissions import needs_permission
    from redline.tools.request import parse_request

    hints = KeptHints(root)  # a turn's count of failures outlives this process
    folder = folder or read_folder(root)
    policy = folder.policy
    unreadable = None
    if folder.policy_error is not None:
        unreadable = f"{folder.policy_error} — no edit is applied until it is fixed"
    settings = None if folder.policy_files else _settings_guard()

    def run(obj: Any) -> dict[str, Any]:
        try:
            request, turn = parse_request(obj, threshold)
        except RequestError as exc:
            return Result("invalid", path=given_path(obj), error=str(exc)).to_dict()
        if unreadable is not None and needs_permission(obj.get("tool")):
            return Result("rejected", path=given_path(obj), error=unreadable).to_dict()
        result = apply_in_directory(
            root, request, dry_run=dry_run, behind=behind, policy=policy, settings=settings
        )
        if isinstance(request, EditRequest):
            hints.observe(request.path, turn, result)
        return result.to_dict()

    # Edits replace a file in one step and a patch rolls back what it wrote.
    return guarded(run, "nothing was written")


def _settings_guard() -> SettingsGuard:
    """What keeps an agent from changing redline's own settings files under the folder (the
    permissions and the guard policy that govern it), unless the user's own config file
    allows it in so many words: ``[permission] policy_files = "allow"``. Compared parsed,
    before and after: a change elsewhere in ``pyproject.toml`` passes."""
    from redline.userdirs import user_config_file

    def guard(
        read: Callable[[str], bytes | None], changed: Mapping[str, bytes | None]
    ) -> str | None:
        from redline.settings.files import settings_table

        def after(path: str) -> bytes | None:
            return changed[path] if path in changed else read(path)

        if settings_table(read) == settings_table(after):
            return None
        name = sorted(changed)[0]
        what = ".redline.toml" if name == ".redline.toml" else "[tool.redline] in pyproject.toml"
        return (
            f"this change of {name} would change redline's own settings ({what}: the "
            "permissions and the guard policy that govern this agent), which an agent may not "
            "change; nothing was changed. Ask the user to make this change. (The user can let "
            f'agents change them with [permission] policy_files = "allow" in their own config '
            f"file, {user_config_file()}.)"
        )

    return guard


def guarded(run: Runner, aftermath: str, session: str | None = None) -> Runner:
    """``run``, answering an unexpected exception with a ``failed`` result.

    No input may end the stream: the request that met the bug gets a result
    (``aftermath`` says what became of it) and the next request still runs. A
    failure of the machine (a full disk, no file descriptors left) is no bug:
    it is answered with what ran out and what to do.
    """

    def guarded_run(obj: Any) -> dict[str, Any]:
        try:
            return run(obj)
        except Exception as exc:
            return failure("failed", obj, _unexpected(exc, aftermath), session)

    return guarded_run


def unavailable(exc: Exception, session: str | None) -> Runner:
    """The runner of a command that could not get ready to apply anything (``exc`` says
    why): every request is answered ``failed`` with that reason, and nothing is applied."""
    from redline.engine.errors import RedlineError

    aftermath = "nothing was applied"
    if isinstance(exc, RedlineError):
        error = f"{exc}; {aftermath}"
    else:
        error = _unexpected(exc, aftermath)
    return lambda obj: failure("failed", obj, error, session)


def _unexpected(exc: Exception, aftermath: str) -> str:
    from redline.fsops.resources import explain, is_resource

    if isinstance(exc, OSError) and is_resource(exc):
        return f"cannot carry out the request: {explain(exc)} — {aftermath}"
    return _internal_error(exc, aftermath)


def failure(status: Status, obj: Any, error: str, session: str | None = None) -> dict[str, Any]:
    """The result of request ``obj`` that was not applied: ``status``, its path, ``error``."""
    from redline.engine.result import Result

    result = Result(status, path=given_path(obj), error=error)
    result.session = session
    return result.to_dict()


def given_path(obj: Any) -> str | None:
    """The ``path`` a request names, when it names one as a string."""
    path = obj.get("path") if isinstance(obj, dict) else None
    return path if isinstance(path, str) else None


def rpc_status(exc: RpcError) -> Status:
    """``invalid`` when the daemon refused the call as asked (unknown session, bad
    parameters): the same call fails again; ``failed`` otherwise."""
    from redline.daemon import protocol

    invalid = (protocol.SESSION_ERROR, protocol.INVALID_PARAMS, protocol.INVALID_REQUEST)
    return "invalid" if exc.code in invalid else "failed"


def rpc_error(exc: RpcError) -> str:
    """The daemon's own words for an error it answered with."""
    data = exc.data
    return data if isinstance(data, str) and data else str(exc)


def clip(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def _internal_error(exc: Exception, aftermath: str) -> str:
    from redline.crashlog import describe, where_logged

    return (
        f"internal error: {clip(describe(exc))}; {aftermath}. This is a bug in redline, "
        "not in the request: re-read the file and retry with a smaller edit or the exact "
        f"text, and report the request that caused it ({where_logged(exc)})"
    )
