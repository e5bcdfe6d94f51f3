"""The daemon's client: a blocking Unix-socket JSON-RPC connection.

Connecting waits, up to :data:`CONNECT_DEADLINE`, while the daemon's listen
queue is full (``EAGAIN``) — and, when the caller says a daemon is alive,
while it refuses (``ECONNREFUSED``: a daemon not yet listening, or a full
queue on macOS) — with growing pauses, then raises :class:`DaemonBusy`. Once
connected it checks, before sending anything, that the socket is served by
this very user (peer credentials, :mod:`redline.daemon.peer`), and raises
:class:`UntrustedDaemon` when it is not or cannot be verified.

The protocol version is said with the first call: its ``hello`` carries that
call (``then``, see :data:`redline.daemon.protocol.THEN`), so one round trip
does both. A daemon of another protocol version runs nothing and the call
raises :class:`OtherProtocol`; one older than ``then`` answers hello alone, and
the call is then sent by itself, as it always was.
"""

from __future__ import annotations

import errno
import itertools
import json
import os
import select
import socket
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from redline.daemon.peer import peer_uid
from redline.daemon.protocol import (
    CONNECTION_CLOSED,
    INVALID_PARAMS,
    PROTOCOL_VERSION,
    THEN,
    RpcError,
    encode,
)
from redline.engine.errors import RedlineError

CONNECT_DEADLINE = 5.0  # seconds a client waits for a busy daemon to accept it


def pauses(first: float, longest: float) -> Iterator[float]:
    """The pauses between tries of something a moment may settle (a busy daemon's
    queue, a daemon coming up or going away): ``first``, doubling up to ``longest`` —
    what is nearly there is seen at once, what takes its time is not asked too often."""
    pause = first
    while True:
        yield pause
        pause = min(pause * 2, longest)


class DaemonError(RedlineError):
    """The daemon could not be started, reached or stopped; the message says why."""


class DaemonBusy(DaemonError):
    """The daemon did not accept a connection within the deadline."""

    def __init__(self, path: Path, waited: float, reason: str, log: Path | None = None) -> None:
        self.path = path
        self.waited = waited
        self.reason = reason
        self.log = log
        where = f" and its log {log}" if log is not None else ""
        super().__init__(
            f"the redline daemon on {path} did not accept a connection within "
            f"{waited:g} s ({reason}): it has too many clients waiting, or it is stuck. "
            f"Retry in a moment; `redline daemon status`{where} tell more, and "
            "`redline daemon stop` restarts it"
        )


class UntrustedDaemon(DaemonError):
    """The socket is served by another user, or by a peer whose user cannot be verified."""

    def __init__(self, path: Path, uid: int | None) -> None:
        self.path = path
        self.uid = uid
        if uid is None:
            problem = (
                f"cannot verify which user serves {path} (this platform, {sys.platform}, "
                "gives no peer credentials), and redline talks only to a daemon of your own"
            )
        else:
            problem = (
                f"{path} is served by user id {uid}, not by you (user id {os.getuid()}); "
                "redline talks only to a daemon of your own"
            )
        super().__init__(
            f"refusing to talk to the redline daemon: {problem}. If another user runs "
            "redline in this repository, work in a clone of your own; otherwise remove "
            "the socket and retry"
        )


class OtherProtocol(DaemonError):
    """The daemon speaks another protocol version: it ran nothing this client sent."""

    def __init__(self, path: Path, said: str) -> None:
        self.path = path
        self.said = said
        super().__init__(
            f"the redline daemon on {path} speaks another protocol version than this "
            f"redline ({said}), and ran nothing it was sent: run `redline daemon stop` "
            "(the next redline command starts a daemon of this version), then retry"
        )


Vet = Callable[[dict[str, Any]], None]


class Client:
    def __init__(
        self,
        path: Path,
        timeout: float | None = 120.0,
        *,
        deadline: float | None = None,
        retry_refused: Callable[[], bool] | None = None,
    ) -> None:
        """Connect to the daemon on ``path`` (hello is said with the first call).

        ``deadline``: seconds to wait for a busy daemon (CONNECT_DEADLINE when
        None). ``retry_refused``: asked after a refused connection whether a
        daemon is alive (then connecting is retried until the deadline);
        without it a refusal is raised at once (ConnectionRefusedError: nobody
        listens).
        """
        self.path = path
        wait = CONNECT_DEADLINE if deadline is None else deadline
        self._sock = _connect(path, timeout, wait, retry_refused)
        try:
            uid = peer_uid(self._sock)
            if uid != os.getuid():
                raise UntrustedDaemon(path, uid)
        except BaseException:
            self._sock.close()
            raise
        self._reader = self._sock.makefile("rb")
        self._ids = itertools.count(1)
        self._server: dict[str, Any] | None = None  # hello's answer, once said

    @property
    def greeted(self) -> bool:
        """Whether hello has been said on this connection."""
        return self._server is not None

    @property
    def server(self) -> dict[str, Any]:
        """The daemon's answer to hello (said now when no call has said it yet)."""
        if self._server is None:
            self._server = self._hello(None)
        return self._server

    def call(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        vet: Vet | None = None,
        say_hello: bool = True,
    ) -> Any:
        """The result of ``method``; RpcError when the daemon answers with an error.

        The first call of a connection travels inside its hello. ``vet`` is shown
        hello's answer before the call is sent by itself (to a daemon older than
        that, or after another call said hello), and raises to send nothing.
        ``say_hello=False`` sends the call without hello (``shutdown``: every daemon
        takes it so, and one of another protocol version must be stoppable).
        """
        if self._server is None and method != "hello" and say_hello:
            then = {"method": method, "params": params if params is not None else {}}
            self._server = greeting = self._hello(then)
            done = greeting.pop(THEN, None)
            if isinstance(done, dict):
                if "error" in done:
                    raise _error(done["error"])
                return done.get("result")
            # A daemon older than ``then``: it said hello, and ran nothing.
        if vet is not None:
            vet(self.server)
        return self._exchange(method, params)

    def _hello(self, then: dict[str, Any] | None) -> dict[str, Any]:
        """Say hello (carrying ``then``); hello's answer. OtherProtocol when the daemon
        speaks another protocol version."""
        params: dict[str, Any] = {"protocol": PROTOCOL_VERSION}
        if then is not None:
            params[THEN] = then
        try:
            answer = self._exchange("hello", params)
        except RpcError as exc:
            if exc.code == INVALID_PARAMS and exc.message == "unsupported protocol version":
                raise OtherProtocol(self.path, str(exc.data or exc.message)) from None
            raise
        if not isinstance(answer, dict):
            raise RpcError(INVALID_PARAMS, "invalid answer", f"hello answered {answer!r}")
        return answer

    def _exchange(self, method: str, params: dict[str, Any] | None) -> Any:
        """Send one request and read its answer."""
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
            raise _error(answer["error"])
        return answer.get("result")

    def peer_closed(self) -> bool:
        """Whether the daemon has closed this connection (it stopped or restarted) while
        no call was in flight: checked without blocking, before sending anything, so a
        long-lived client (the MCP server) reconnects instead of losing a request."""
        try:
            readable, _, _ = select.select([self._sock], [], [], 0)
        except (OSError, ValueError):  # closed on our side
            return True
        return bool(readable)  # nothing is due between calls: only an end of stream

    def close(self) -> None:
        if hasattr(self, "_reader"):
            self._reader.close()
        self._sock.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _error(err: Any) -> RpcError:
    """The RpcError of a JSON-RPC error object."""
    if not isinstance(err, dict):
        return RpcError(-32000, "error", err)
    return RpcError(err.get("code", -32000), err.get("message", "error"), err.get("data"))


def _connect(
    path: Path,
    timeout: float | None,
    deadline: float,
    retry_refused: Callable[[], bool] | None,
) -> socket.socket:
    """A socket connected to ``path``, waiting out a full listen queue (see the module)."""
    give_up = time.monotonic() + deadline
    waits = pauses(0.005, 0.25)
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        # A socket with a timeout does not block in connect(): a full queue is EAGAIN
        # at once, which is retried here, rather than a wait without end.
        sock.settimeout(deadline if timeout is None else min(timeout, deadline))
        try:
            sock.connect(str(path))
        except OSError as exc:
            sock.close()
            busy = exc.errno in (errno.EAGAIN, errno.EWOULDBLOCK) or (
                exc.errno == errno.ECONNREFUSED and retry_refused is not None and retry_refused()
            )
            if not busy:
                raise
            left = give_up - time.monotonic()
            if left <= 0:
                raise DaemonBusy(path, deadline, exc.strerror or str(exc)) from None
            time.sleep(min(next(waits), left))  # the last try is at the deadline
            continue
        sock.settimeout(timeout)
        return sock
