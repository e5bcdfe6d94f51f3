"""The wire protocol: JSON-RPC 2.0, one UTF-8 JSON object per line."""

from __future__ import annotations

import json
from typing import Any

from redline.engine.errors import RedlineError

PROTOCOL_VERSION = 1
MAX_MESSAGE = 8 * 1024 * 1024  # bytes in one request line (results are not cut)

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


def encode(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode("utf-8", "backslashreplace") + b"\n"


def response(request_id: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        body["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": body}
