"""The MCP server: the model's tool surface over stdio, on the official SDK's low-level server.

``tools/list`` gives the surface's tool definitions (``inputSchema`` is each
definition's parameters). ``tools/call`` turns the arguments into the wire
request (``{"tool": name, **arguments}``), checks the permissions, and hands
it to the backend; the answer carries the full result as structured content
and a short text for the model (``redline.mcp.text``), an error whenever the
request was not applied. Nothing a call sends ends the server: a bad argument,
an unknown tool or a bug in redline is that call's error result.

An ``ask`` permission asks the person through the client (MCP elicitation):
on a handshake connection as an ``elicitation/create`` request during the
call; on a 2026-07-28 connection, which forbids requests from the server, as
an ``InputRequiredResult`` the client answers by calling again with the
person's response. A client that declared no elicitation capability gets the
call rejected, with what to configure.
"""

from __future__ import annotations

import secrets
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from redline import __version__
from redline.engine.result import Result, shown
from redline.mcp.allowances import Allowances
from redline.mcp.backend import Backend
from redline.mcp.stdio import stdio_transport
from redline.mcp.text import is_error, summary
from redline.tools.definitions import DEFINITIONS, ToolDefinition
from redline.tools.permissions import Decision, needs_permission, rejected_result
from redline.tools.surface import downgraded_patch_call

INSTRUCTIONS = (
    "redline applies your edits and reports how each one matched. Read a file (read) before "
    "editing it; send the smallest block of text that is unique in the file; when an edit "
    "fails, read the lines it names again and retry with the exact text."
)
ALLOW = "approval"  # the key of the one input request an asking round carries (wire name)
_FORM: dict[str, Any] = {"type": "object", "properties": {}}  # yes or no: nothing to fill in
_DESTRUCTIVE = frozenset(["delete", "write"])


@dataclass
class Served:
    """What the server serves: the tools in the order a model sees them, where their
    requests go, the permissions (what a person allowed, remembered), and the model named on the
    command line (recorded in each request's note)."""

    tools: Sequence[ToolDefinition]
    backend: Backend
    permissions: Allowances
    model: str | None = None
    provider: str | None = None
    full: bool = False  # structured content with every field (engine.result.shown)
    # open asking rounds: the state a client echoes -> tool, path, decision, root
    _asking: dict[str, tuple[str, str, Decision, Path | None]] = field(default_factory=dict)

    @property
    def names(self) -> list[str]:
        return [tool.name for tool in self.tools]


def build(served: Served) -> Server[Any]:
    """The low-level server with its two handlers."""
    serial = anyio.Lock()  # one request at a time: they share one daemon connection

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[_tool(d) for d in served.tools])

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        try:
            request = _request(served, params)
            if params.request_state is not None:  # the answer to an asking round
                refused = _answered(served, params)
                if refused is not None:
                    return _answer(refused, served.full)
            client = _client_name(ctx)
            while True:  # until applied or refused; each turn may ask the person once
                async with serial:
                    outcome = await anyio.to_thread.run_sync(_attempt, served, request, client)
                if isinstance(outcome, dict):
                    result = outcome
                    break
                verdict = await _ask(served, ctx, params.name, *outcome)
                if verdict is not None:
                    if isinstance(verdict, types.InputRequiredResult):
                        return verdict
                    result = verdict
                    break
        except _Refused as refused:
            result = refused.result
        except Exception as exc:  # a bug in redline: this call's error, never the server's end
            result = _internal(exc, params)
        return _answer(result, served.full)

    return Server(
        "redline",
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def serve(served: Served) -> int | None:
    """Serve on stdin/stdout until the client closes them (or goes away), or a signal
    stops the server: then the signal's number (SIGINT, SIGTERM), else None."""
    server = build(served)
    stopped_by: list[int] = []

    async def stop_on_signal(scope: anyio.CancelScope) -> None:
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for signum in signals:
                stopped_by.append(int(signum))
                scope.cancel()
                return

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(stop_on_signal, group.cancel_scope)
            async with stdio_transport() as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())
            group.cancel_scope.cancel()
    finally:
        served.backend.close()
    return stopped_by[0] if stopped_by else None


# --- a call --------------------------------------------------------------------------


class _Refused(Exception):
    """A call that cannot become a request; ``result`` says why."""

    def __init__(self, result: dict[str, Any]) -> None:
        self.result = result


def _request(served: Served, params: types.CallToolRequestParams) -> dict[str, Any]:
    """The wire request for a call (_Refused with the result saying why there is none)."""
    name, arguments = params.name, dict(params.arguments or {})
    offered = ", ".join(served.names)
    if name not in DEFINITIONS:
        raise _Refused(
            _invalid(
                None,
                f"unknown tool {name!r}: this server offers {offered}; call one of them "
                "(tools/list describes them)",
            )
        )
    if "tool" in arguments:
        raise _Refused(
            _invalid(
                _path(arguments),
                f"'tool' is not an argument of {name}: the tool is the one called; "
                "send only the arguments its inputSchema lists",
            )
        )
    request = {**arguments, "tool": name}
    if name not in served.names:
        decision, path = served.permissions.decide(request)
        if decision.action == "deny":  # denied for every path, so not shown
            raise _Refused(rejected_result(decision, name, path))
        raise _Refused(
            _invalid(
                _path(arguments),
                f"{name} is not offered to this model ({served.model or 'no model named'}): "
                f"this server offers {offered}; make the change with one of them",
            )
        )
    if name == "apply_patch":
        downgraded = downgraded_patch_call(arguments, over_mcp=True)
        if downgraded is not None:
            raise _Refused(_invalid(None, downgraded))
    if served.model is not None and "model" not in request:
        request["model"] = served.model  # recorded in the edit's note
    return request


Asked = tuple[Decision, str, Path | None]  # an ask rule's decision, the path, the root


def _attempt(
    served: Served, request: dict[str, Any], client_name: str | None
) -> dict[str, Any] | Asked:
    """On the worker thread: the permission check where the paths will be applied (the
    session's worktree in git mode), then the request. The result, or what to ask."""
    tool = str(request["tool"])
    asked = False
    if needs_permission(tool):
        root = served.backend.where(client_name)
        decision, path = served.permissions.decide(request, root)
        if decision.action == "deny" or (decision.action == "ask" and path is None):
            return rejected_result(decision, tool, path)
        if decision.action == "ask" and path is not None:
            return decision, path, root
        asked = decision.by_person
    return served.backend.apply(request, client_name, asked)


async def _ask(
    served: Served,
    ctx: ServerRequestContext[Any],
    tool: str,
    decision: Decision,
    path: str,
    root: Path | None,
) -> dict[str, Any] | types.InputRequiredResult | None:
    """Ask the person about ``tool`` on ``path``: None once allowed (and remembered),
    else the rejected result, or the question for a client that asks by calling again."""
    if not _can_elicit(ctx):
        return _cannot_ask(decision, tool, path, "it declared no elicitation capability")
    if not ctx.session.can_send_request:  # 2026-07-28: ask through the client's retry
        return _round(served, decision, tool, path, root)
    try:
        answer = await ctx.session.elicit_form(
            _question(decision, tool, path), _FORM, related_request_id=ctx.request_id
        )
    except MCPError as exc:  # the client declared elicitation but could not do it
        return _cannot_ask(decision, tool, path, f"it answered the question with an error ({exc})")
    if answer.action != "accept":
        return _declined(decision, tool, path, answer.action)
    served.permissions.allow(tool, path, root)
    return None


def _answered(served: Served, params: types.CallToolRequestParams) -> dict[str, Any] | None:
    """Take the person's answer to an asking round; the rejected result when it is no."""
    state = params.request_state or ""
    asked = served._asking.pop(state, None)
    if asked is None or asked[0] != params.name:
        return _invalid(
            None,
            "this call answers a question that was not asked (or was answered already); "
            "call the tool again without requestState",
        )
    tool, path, decision, root = asked
    response = (params.input_responses or {}).get(ALLOW)
    action = response.action if isinstance(response, types.ElicitResult) else "cancel"
    if action != "accept":
        return _declined(decision, tool, path, action)
    served.permissions.allow(tool, path, root)
    return None


def _round(
    served: Served, decision: Decision, tool: str, path: str, root: Path | None
) -> types.InputRequiredResult:
    state = secrets.token_urlsafe(16)  # known to this server only: an answer must echo it
    served._asking[state] = (tool, path, decision, root)
    question = types.ElicitRequest(
        params=types.ElicitRequestFormParams(
            message=_question(decision, tool, path), requested_schema=_FORM
        )
    )
    return types.InputRequiredResult(input_requests={ALLOW: question}, request_state=state)


def _can_elicit(ctx: ServerRequestContext[Any]) -> bool:
    capabilities = ctx.session.client_capabilities
    return capabilities is not None and capabilities.elicitation is not None


def _question(decision: Decision, tool: str, path: str) -> str:
    return f"allow {tool} on {path}? (redline permission rule: {decision.rule})"


def _cannot_ask(decision: Decision, tool: str, path: str, why: str) -> dict[str, Any]:
    result = rejected_result(decision, tool, path)
    result["error"] = (
        f"{tool} on {path} needs a person to allow it ({decision.rule}), and this MCP client "
        f"cannot ask one: {why}. Nothing was applied. Use a "
        'client that supports MCP elicitation, or set the rule to "allow" under [permission] '
        "in the repository's .redline.toml (or your user config file)"
    )
    return result


def _declined(decision: Decision, tool: str, path: str, action: str) -> dict[str, Any]:
    result = rejected_result(decision, tool, path)
    how = "declined" if action == "decline" else "did not answer (cancelled)"
    result["error"] = (
        f"the person {how} {tool} on {path}; nothing was applied. Do not retry it as it is: "
        "ask them what they want instead"
    )
    return result


def _client_name(ctx: ServerRequestContext[Any]) -> str | None:
    params = ctx.session.client_params
    return params.client_info.name if params is not None else None


# --- answers -------------------------------------------------------------------------


def _tool(definition: ToolDefinition) -> types.Tool:
    return types.Tool(
        name=definition.name,
        description=definition.description,
        input_schema=dict(definition.parameters),
        annotations=types.ToolAnnotations(
            read_only_hint=not needs_permission(definition.name),
            destructive_hint=definition.name in _DESTRUCTIVE,
            open_world_hint=False,
        ),
    )


def _answer(result: Mapping[str, Any], full: bool) -> types.CallToolResult:
    """The text a model reads (from every field: an exact edit's diff too) and the result as
    structured content, the fields that say something unless ``full`` (engine.result.shown)."""
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=summary(result))],
        structured_content=shown(result, full),
        is_error=is_error(result),
    )


def _invalid(path: str | None, error: str) -> dict[str, Any]:
    return Result("invalid", path=path, error=error).to_dict()


def _path(arguments: Mapping[str, Any]) -> str | None:
    path = arguments.get("path")
    return path if isinstance(path, str) else None


def _internal(exc: Exception, params: types.CallToolRequestParams) -> dict[str, Any]:
    from redline.crashlog import describe, where_logged

    error = (
        f"internal error: {describe(exc)}; it may not have been applied: re-read the file "
        f"before retrying. This is a bug in redline, not in the call ({where_logged(exc)})"
    )
    return Result("failed", path=_path(params.arguments or {}), error=error).to_dict()
