"""The wire protocol: JSON-RPC 2.0, one UTF-8 JSON object per line.

A connection starts with ``hello`` (the protocol version), which may carry the
connection's first request (:data:`THEN`).

A message is the bytes of one line, its newline excluded: at most
:data:`MAX_MESSAGE` of them (a line of ``MAX_MESSAGE`` bytes and its newline is
read, one byte more is refused), and JSON arrays and objects nested at most
:data:`MAX_DEPTH` deep. :func:`decode` turns a line into its JSON value or
raises the :class:`RpcError` to answer it with.
"""

from __future__ import annotations

import json
from typing import Any

from redline.engine.errors import RedlineError

PROTOCOL_VERSION = 1
# A ``hello`` may carry the connection's first request, ``"then": {"method", "params"}``:
# the daemon checks the protocol version, then runs it and answers hello's result with
# ``"then": {"result": ...}`` (or ``{"error": {code, message, data}}``) — one round trip
# where hello and the request took two. A client of another protocol version gets
# hello's error, and its request is not run. A daemon older than ``then`` ignores it
# (hello's answer has no ``then``, and nothing ran): the client sends the request
# itself, as before. Every daemon that runs ``then`` judges permissions (below).
THEN = "then"
# What ``hello`` answers under "permissions": this daemon judges every ``apply`` by the
# [permission] rules (daemon.settings). A client relying on it refuses a daemon that does not
# say so (one older than the check).
PERMISSIONS_ENFORCED = "enforced"
MAX_MESSAGE = 8 * 1024 * 1024  # bytes of one request line, newline excluded (results are not cut)
MAX_DEPTH = 64  # arrays and objects nested in one message (a request needs about 5)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
# Application errors (JSON-RPC reserves -32000..-32099 for servers).
SESSION_ERROR = -32001
REPOSITORY_ERROR = -32002
SHUTTING_DOWN = -32003
# The client's own: the daemon closed the connection before answering.
CONNECTION_CLOSED = -32000


class RpcError(RedlineError):
    """An error answer from the daemon (or a broken exchange)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        self.code = code
        self.message = message
        self.data = data
        super().__init__(message if data is None else f"{message}: {data}")


def decode(line: bytes) -> Any:
    """The JSON value of one message (its line's bytes); RpcError when it has none.

    Not UTF-8 or not JSON: -32700. Nested deeper than :data:`MAX_DEPTH`: -32600,
    also when it is so deep that the parser gives up (RecursionError), so such
    a message is answered like any other instead of ending the connection.
    """
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RpcError(PARSE_ERROR, "parse error", str(exc)) from None
    return decode_text(text)


def decode_text(text: str) -> Any:
    """As :func:`decode`, for a line already decoded (the MCP server keeps bytes that are
    not UTF-8 as surrogate escapes, for the tools to refuse naming the field)."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise _too_deep() from None
    except ValueError as exc:  # JSONDecodeError is a ValueError
        raise RpcError(PARSE_ERROR, "parse error", str(exc)) from None
    # At most as deep as it has opening brackets: only then walk it.
    if text.count("[") + text.count("{") > MAX_DEPTH and _deeper_than(value, MAX_DEPTH):
        raise _too_deep()
    return value


def _too_deep() -> RpcError:
    return RpcError(
        INVALID_REQUEST,
        "invalid request",
        f"the message nests JSON arrays or objects more than {MAX_DEPTH} levels deep; "
        "a request needs only a few: send it without the extra nesting",
    )


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether arrays and objects nest in ``value`` more than ``limit`` levels (no recursion)."""
    level: list[Any] = [value] if isinstance(value, (list, dict)) else []
    for _ in range(limit):  # ``level`` holds the containers one level further down
        if not level:
            return False
        level = [
            child
            for container in level
            for child in (container.values() if isinstance(container, dict) else container)
            if isinstance(child, (list, dict))
        ]
    return bool(level)


def encode(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode("utf-8", "backslashreplace") + b"\n"


def response(request_id: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": error_body(code, message, data)}


def error_body(code: int, message: str, data: Any = None) -> dict[str, Any]:
    """A JSON-RPC error object: the ``error`` member of an answer."""
    body: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        body["data"] = data
    return body


def then_of(params: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The method and parameters of the request a ``hello`` carries (:data:`THEN`);
    RpcError (invalid params) when ``then`` is not such a request."""
    then = params.get(THEN)
    method = then.get("method") if isinstance(then, dict) else None
    inner = then.get("params", {}) if isinstance(then, dict) else None
    if not isinstance(method, str) or method == "hello" or not isinstance(inner, dict):
        raise RpcError(
            INVALID_PARAMS,
            "invalid params",
            f'{THEN!r} must be an object {{"method": <a method other than hello>, '
            '"params": {...}}: the request to run once the protocol version is checked',
        )
    return method, inner
