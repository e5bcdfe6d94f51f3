"""A daemon of another version, played on a real Unix socket: what it answers is scripted.

Old/new mixes of client and daemon need a daemon this checkout does not contain
(one older than a protocol feature, or of another protocol version). A
:class:`ScriptedDaemon` listens on a socket in a thread of the test process,
reads one JSON-RPC message per line, records it, and answers with what its
``answer`` function returns for it (None: no answer). The client under test is
the real one, over the real socket.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

Answer = Callable[[dict[str, Any]], Any]

HELLO_BEFORE_THEN = {"server": "redline", "version": "0.9.0", "protocol": 1}


def result(message: dict[str, Any], value: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": message.get("id"), "result": value}


def error(message: dict[str, Any], code: int, text: str, data: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": message.get("id"),
        "error": {"code": code, "message": text, "data": data},
    }


def older_daemon(hello: dict[str, Any], applied: dict[str, Any]) -> Answer:
    """A daemon that predates ``then``: hello answers ``hello`` (ignoring what else its
    params hold), every other method ``applied``."""

    def answer(message: dict[str, Any]) -> Any:
        if message.get("method") == "hello":
            return result(message, dict(hello))
        return result(message, dict(applied))

    return answer


def other_protocol(version: int) -> Answer:
    """A daemon of protocol ``version``: it refuses a hello of any other, as redline's do,
    and stops when asked (``shutdown`` needs no hello)."""

    def answer(message: dict[str, Any]) -> Any:
        if message.get("method") == "shutdown":
            return result(message, {"stopping": True})
        if message.get("method") == "hello":
            return error(
                message,
                -32602,
                "unsupported protocol version",
                f"this daemon speaks protocol {version}, the client asked for "
                f"{message.get('params', {}).get('protocol')!r}",
            )
        return error(message, -32600, "invalid request", "say hello first")

    return answer


class ScriptedDaemon:
    def __init__(self, path: Path, answer: Answer) -> None:
        self.path = path
        self.answer = answer
        self.received: list[dict[str, Any]] = []
        self._listening = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listening.bind(str(path))
        self._listening.listen(8)
        self._thread = threading.Thread(target=self._serve, name="scripted-daemon", daemon=True)
        self._stop = threading.Event()

    @property
    def methods(self) -> list[str]:
        return [str(m.get("method")) for m in self.received]

    def _serve(self) -> None:
        self._listening.settimeout(0.1)
        while not self._stop.is_set():
            try:
                conn, _ = self._listening.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn, conn.makefile("rb") as lines:
                for line in lines:
                    message = json.loads(line)
                    self.received.append(message)
                    reply = self.answer(message)
                    if reply is not None:
                        conn.sendall(json.dumps(reply).encode() + b"\n")

    def __enter__(self) -> ScriptedDaemon:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._listening.close()
        self._thread.join(5)
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


@contextlib.contextmanager
def scripted(path: Path, answer: Answer) -> Iterator[ScriptedDaemon]:
    with ScriptedDaemon(path, answer) as daemon:
        yield daemon
