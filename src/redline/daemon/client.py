"""The daemon's client: a blocking Unix-socket JSON-RPC connection."""

from __future__ import annotations

import itertools
import json
import socket
from pathlib import Path
from typing import Any

from redline.daemon.protocol import CONNECTION_CLOSED, PROTOCOL_VERSION, RpcError, encode


class Client:
    def __init__(self, path: Path, timeout: float | None = 120.0) -> None:
        self.path = path
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(timeout)
        self._sock.connect(str(path))
        self._reader = self._sock.makefile("rb")
        self._ids = itertools.count(1)
        self.server: dict[str, Any] = self.call("hello", {"protocol": PROTOCOL_VERSION})

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        request_id = next(self._ids)
        message = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self._sock.sendall(encode(message))
        # Not bounded by MAX_MESSAGE: the result of an applied edit (its diff and
        # matched text included) must reach the caller whatever its size.
        line = self._reader.readline()
        if not line.endswith(b"\n"):
            raise RpcError(CONNECTION_CLOSED, "the daemon closed the connection")
        answer = json.loads(line)
        if "error" in answer:
            err = answer["error"]
            raise RpcError(err.get("code", -32000), err.get("message", "error"), err.get("data"))
        return answer.get("result")

    def close(self) -> None:
        self._reader.close()
        self._sock.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
