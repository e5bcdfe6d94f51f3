"""The Unix-socket JSON-RPC server: framing, peer checks, dispatch to the threads.

Framing (see :mod:`redline.daemon.protocol`): one message per line, at most
``MAX_MESSAGE`` bytes before its newline. Every complete line is answered,
in order, except a notification: a longer line with "message too large"
once its newline arrives (reading resumes after it), a line that is not JSON,
too deep or not a request with its JSON-RPC error, and a last line the client
sent without a newline before closing its side as if it had one. A failure
inside the server is answered as an internal error; the connection goes on.

A ``hello`` may carry the connection's first request (``then``, see
:data:`protocol.THEN`): it is checked as hello is, then run where its method
runs, and answered inside hello's answer.

Where each method runs (:data:`_PLACES`): ``hello`` and ``session.status`` on
the event loop, at once; ``apply`` and ``session.open`` on a planning thread,
whose steps that read or write the repository go to the one git worker
(``Service.apply``), so that matching — seconds for a large tolerant request —
or a checkout by git — a minute at 100,000 files — never holds up ``hello``,
another session or the worker; every other method on the git worker. Requests
of one session (``apply``, ``session.open``, ``session.close``) are served one
at a time, in the order they came (:meth:`Server._in_turn`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from redline.daemon import protocol
from redline.daemon.peer import peer_uid
from redline.daemon.protocol import MAX_MESSAGE, RpcError, encode
from redline.daemon.service import Service, error_for

log = logging.getLogger("redline.daemon")
# Connections the kernel queues before the daemon accepts them (it caps this at
# net.core.somaxconn); past it, clients wait and retry (daemon.client).
BACKLOG = 1024
QUIET_DELAY = 1.0  # seconds without apply or approve before the idle-time upkeep
REFUSAL_GRACE = 1.0  # seconds a refused client has to take its answer
STOP_GRACE = 5.0  # seconds a stopping daemon waits for a client to take its last answer
LAST_READ = 0.2  # seconds an idle connection of a stopping daemon still reads (see _close_all)
PLANNERS = 8  # requests matched at once, each in its own session
# Where a method runs; any other runs on the git worker.
_PLACES = {
    "hello": "loop",
    "session.status": "loop",
    "apply": "planner",
    "session.open": "planner",  # git checks out beside it; its git steps go to the worker
}
# The parameter naming the session of a method whose requests go one at a time.
_SESSION_OF = {
    "apply": "session",
    "undo": "session",
    "session.open": "name",
    "session.close": "name",
}
T = TypeVar("T")


@dataclass
class _Connection:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    reading: bool = False  # waiting for its next request (not serving one)


class Server:
    def __init__(self, service: Service, socket_path: Path, idle_timeout: float) -> None:
        self.service = service
        self.socket_path = socket_path
        self.idle_timeout = idle_timeout
        # pygit2 objects are not thread-safe: all git work runs on this one thread.
        self._on_git = threading.local()
        self.worker = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="redline-git", initializer=self._mark_git_thread
        )
        # Matching runs beside it, one planning thread per request being matched.
        self.planners = ThreadPoolExecutor(max_workers=PLANNERS, thread_name_prefix="redline-plan")
        service.on_worker = self.on_worker
        self._turns: dict[str, tuple[asyncio.Lock, list[int]]] = {}
        self._methods: dict[str, Callable[[dict[str, Any]], Any]] = {
            "hello": service.hello,
            "session.open": service.session_open,
            "session.status": service.session_status,
            "session.list": service.session_list,
            "session.close": service.session_close,
            "apply": service.apply,
            "undo": service.undo,
            "log": service.log,
        }
        self._connections = 0
        # Each connection's task and state: a stop ends them (see _close_all).
        self._clients: dict[asyncio.Task[None], _Connection] = {}
        self._last_activity = time.monotonic()
        self._stopping: asyncio.Event | None = None
        self._socket_id: tuple[int, int] | None = None  # the socket file this daemon made
        self._upkeep: asyncio.TimerHandle | None = None

    async def run_on_worker(self, fn: Callable[[], Any]) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self.worker, fn)

    def _mark_git_thread(self) -> None:
        self._on_git.here = True

    def on_worker(self, step: Callable[[], T]) -> T:
        """Run a step of a planning thread's request on the git worker, and wait for it
        (on the worker itself, run it there and then)."""
        if getattr(self._on_git, "here", False):
            return step()
        return self.worker.submit(self.service.step, step).result()

    async def _dispatch(
        self, method: str, handler: Callable[[dict[str, Any]], Any], params: dict[str, Any]
    ) -> Any:
        """Run ``handler`` where ``method`` belongs (see the module docstring)."""
        place = _PLACES.get(method, "git")
        if place == "loop":
            return handler(params)
        session = params.get(_SESSION_OF.get(method, ""))
        async with self._in_turn(session if isinstance(session, str) else None):
            if place == "planner":
                loop = asyncio.get_running_loop()
                return await loop.run_in_executor(self.planners, handler, params)
            return await self.run_on_worker(lambda: self.service.call(handler, params))

    @contextlib.asynccontextmanager
    async def _in_turn(self, session: str | None) -> AsyncIterator[None]:
        """Wait for the requests of ``session`` that came before (asyncio's locks are fair)."""
        if session is None:
            yield
            return
        lock, users = self._turns.setdefault(session, (asyncio.Lock(), [0]))
        users[0] += 1
        try:
            async with lock:
                yield
        finally:
            users[0] -= 1
            if not users[0]:
                del self._turns[session]

    async def serve(self) -> None:
        self._stopping = asyncio.Event()
        if self.socket_path.exists() or self.socket_path.is_symlink():
            self.socket_path.unlink()
        listening = _private_socket(self.socket_path)
        # limit: readuntil() returns a line whose newline is at most MAX_MESSAGE
        # bytes in, so a message of MAX_MESSAGE bytes is read and one more is not.
        server = await asyncio.start_unix_server(
            self._handle, sock=listening, limit=MAX_MESSAGE, backlog=BACKLOG
        )
        self._socket_id = _file_id(self.socket_path)
        log.info("listening on %s", self.socket_path)
        idle = asyncio.create_task(self._idle_watch())
        async with server:
            await self._stopping.wait()
            server.close()  # no new connections
            await self._close_all()
        idle.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await idle
        if self._upkeep is not None:
            self._upkeep.cancel()
        self.planners.shutdown(wait=True)  # first: they hand steps to the worker
        self.worker.shutdown(wait=True)
        if _file_id(self.socket_path) == self._socket_id:  # still this daemon's own
            with contextlib.suppress(FileNotFoundError):
                self.socket_path.unlink()
        log.info("stopped")

    def stop(self) -> None:
        if self._stopping is not None:
            self._stopping.set()

    async def _close_all(self) -> None:
        """End every connection once it has answered the request it is on.

        A connection waiting for its next request reads for ``LAST_READ`` more:
        a request its client sent just before the stop is answered "shutting
        down" with its id (closed at once, it would end unanswered, and the client
        could not tell whether it was done); then it takes no more bytes and ends.
        One serving a request answers it, then sees the stop and ends. Each task
        returns as usual: a connection task left to be cancelled when the loop
        closes makes asyncio log an error with a CancelledError traceback (Python
        3.11).
        """
        loop = asyncio.get_running_loop()
        for connection in self._clients.values():
            if connection.reading:
                loop.call_later(LAST_READ, _end_reading, connection)
        pending = set(self._clients)
        if pending:
            _, pending = await asyncio.wait(pending, timeout=STOP_GRACE)
        for task in pending:
            # Its client does not take the answer: drop the connection (the task
            # returns once its request is done, as the worker must finish it anyway).
            self._clients[task].writer.transport.abort()
        if pending:
            await asyncio.wait(pending)

    async def _idle_watch(self) -> None:
        while True:
            await asyncio.sleep(min(1.0, max(0.05, self.idle_timeout / 4)))
            idle_for = time.monotonic() - self._last_activity
            if self._connections == 0 and idle_for >= self.idle_timeout:
                log.info("idle for %.0f s; shutting down", idle_for)
                self.stop()
                return
            if _file_id(self.socket_path) != self._socket_id:
                # Removed (with .git/redline, say) or taken by another daemon: no client
                # can reach this one any more, and the next command starts a new one.
                log.warning("%s was removed or replaced; shutting down", self.socket_path)
                self.stop()
                return

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        connection = self._clients[task] = _Connection(reader, writer)
        self._connections += 1
        self._last_activity = time.monotonic()
        try:
            refusal = _peer_refusal(writer)
            if refusal is not None:
                await _send(writer, refusal)
                await _drain_and_close(reader, writer)
                return
            while True:
                if self._stopping is not None and self._stopping.is_set():
                    return
                connection.reading = True
                try:
                    frame = await _read_frame(reader)
                finally:
                    connection.reading = False
                if frame is None:
                    return
                self._last_activity = time.monotonic()
                if self._stopping is not None and self._stopping.is_set():
                    answer: dict[str, Any] | None = _refused_while_stopping(frame.line)
                elif frame.line is None:
                    answer = _too_large()
                else:
                    answer = await self._answer_safely(frame.line)
                if answer is not None:
                    await _send(writer, answer)
                self._last_activity = time.monotonic()
                if frame.last:
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        except Exception:  # a bug in the framing: log it, and end this connection only
            log.exception("connection ended by an error")
            return
        finally:
            self._clients.pop(task, None)
            self._connections -= 1
            self._last_activity = time.monotonic()
            writer.close()

    async def _answer_safely(self, line: bytes) -> dict[str, Any] | None:
        """The answer to one line; whatever goes wrong, the client gets an answer."""
        try:
            return await self._answer(line)
        except Exception as exc:
            err = error_for(exc)  # logs the traceback of what no method raised on purpose
            return protocol.error(None, err.code, err.message, err.data)

    async def _answer(self, line: bytes) -> dict[str, Any] | None:
        try:
            message = protocol.decode(line)
        except RpcError as refused:
            return protocol.error(None, refused.code, refused.message, refused.data)
        if not isinstance(message, dict):
            what = (
                "batch requests are not supported"
                if isinstance(message, list)
                else ("a request must be a JSON object")
            )
            return protocol.error(None, protocol.INVALID_REQUEST, "invalid request", what)
        request_id = message.get("id")
        problem = _invalid(message)
        if problem is not None:
            return protocol.error(
                request_id if _valid_id(request_id) else None,
                protocol.INVALID_REQUEST,
                "invalid request",
                problem,
            )
        method = message["method"]
        params = message.get("params", {})
        try:
            if method == "hello" and protocol.THEN in params:
                result = await self._hello_then(params)
            else:
                result = await self._run(method, params)
        except Exception as exc:  # every failure is answered; the daemon stays up
            err: RpcError = error_for(exc)
            if "id" not in message:
                return None  # JSON-RPC 2.0: a notification is never answered, errors included
            return protocol.error(request_id, err.code, err.message, err.data)
        return None if "id" not in message else protocol.response(request_id, result)

    async def _run(self, method: str, params: dict[str, Any]) -> Any:
        """The result of one call (RpcError and the method's own exceptions raised)."""
        if method == "shutdown":
            if params.get("unless_in_use") and self._connections > 1:
                # Asked by a command that started this daemon for one request that
                # failed: another client uses it now, so it stays.
                return {"stopping": False}
            self.stop()
            return {"stopping": True}
        handler = self._methods.get(method)
        if handler is None:
            known = ", ".join(sorted([*self._methods, "shutdown"]))
            raise RpcError(
                protocol.METHOD_NOT_FOUND, "method not found", f"{method!r}; known: {known}"
            )
        result = await self._dispatch(method, handler, params)
        if method in ("apply", "approve"):
            self._upkeep_when_quiet()
        return result

    async def _hello_then(self, params: dict[str, Any]) -> dict[str, Any]:
        """``hello`` carrying the connection's first request (see protocol.THEN): hello's
        answer with ``then``, that request's ``{"result": ...}`` or ``{"error": ...}``.

        The protocol version is checked first: a client of another one gets hello's
        error, and its request is not run.
        """
        greeting = self.service.hello(params)
        method, inner = protocol.then_of(params)
        try:
            then: dict[str, Any] = {"result": await self._run(method, inner)}
        except Exception as exc:  # answered inside hello's answer, as it would be alone
            err = error_for(exc)
            then = {"error": protocol.error_body(err.code, err.message, err.data)}
        return {**greeting, "then": then}

    def _upkeep_when_quiet(self) -> None:
        """Do the idle-time upkeep once requests pause (see ``Service.when_quiet``).

        Done when quiet rather than after each request: a burst of edits pays
        nothing, and the catch-up covers all of them at once.
        """
        loop = asyncio.get_running_loop()
        if self._upkeep is not None:
            self._upkeep.cancel()
        self._upkeep = loop.call_later(
            QUIET_DELAY,
            lambda: loop.run_in_executor(self.worker, self.service.when_quiet),
        )


def _private_socket(path: Path) -> socket.socket:
    """A Unix socket bound at ``path``, mode 0600, not yet listening.

    Made private without touching the process umask: the umask is the whole
    process's, and a thread that creates a file meanwhile — git checking a
    session's worktree out, started a moment earlier — would create it with
    this socket's mode (a checked-out script lost its executable bit). On
    Linux the mode given to the socket before ``bind`` is the file's; elsewhere
    the file is tightened right after, inside the daemon's own 0700 folder
    (daemon.paths), which no other user can enter meanwhile.
    """
    listening = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with contextlib.suppress(OSError):
            os.fchmod(listening.fileno(), 0o600)
        listening.bind(str(path))
        os.chmod(path, 0o600)
    except BaseException:
        listening.close()
        raise
    return listening


def _file_id(path: Path) -> tuple[int, int] | None:
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def _refused_while_stopping(line: bytes | None) -> dict[str, Any] | None:
    """The answer to a request read after the stop began (None for a notification)."""
    request_id = None
    if isinstance(line, bytes):
        try:
            message = protocol.decode(line)
        except RpcError:
            message = None
        if isinstance(message, dict):
            if "id" not in message:
                return None
            request_id = message["id"] if _valid_id(message["id"]) else None
    return protocol.error(
        request_id,
        protocol.SHUTTING_DOWN,
        "shutting down",
        "the daemon is stopping and takes no new request; send it again once it has "
        "stopped (a redline command starts a new daemon)",
    )


def _valid_id(value: Any) -> bool:
    return value is None or (isinstance(value, (str, int)) and not isinstance(value, bool))


def _invalid(message: dict[str, Any]) -> str | None:
    if message.get("jsonrpc") != "2.0":
        return 'the "jsonrpc" member must be "2.0"'
    if not isinstance(message.get("method"), str):
        return 'the "method" member must be a string'
    if "id" in message and not _valid_id(message["id"]):
        return 'the "id" member must be a string, a number or null'
    if "params" in message and not isinstance(message["params"], dict):
        return 'the "params" member must be an object (by-name parameters)'
    return None


def _too_large() -> dict[str, Any]:
    return protocol.error(
        None,
        protocol.INVALID_REQUEST,
        "message too large",
        f"one message may hold at most {MAX_MESSAGE} bytes before its newline, and this "
        "one holds more; it was not read. Send smaller requests (split a long patch "
        "into several)",
    )


@dataclass(frozen=True)
class _Frame:
    line: bytes | None  # None: longer than MAX_MESSAGE, skipped
    last: bool = False  # the client closed its side: answer, then end the connection


def _end_reading(connection: _Connection) -> None:
    """End an idle connection of a stopping daemon: no more bytes are taken in, and its
    task sees the end of the stream once it has answered what it read."""
    transport = connection.writer.transport
    if transport.is_closing():
        return
    if isinstance(transport, asyncio.ReadTransport):  # a socket's transport is both
        transport.pause_reading()
    connection.reader.feed_eof()


async def _read_frame(reader: asyncio.StreamReader) -> _Frame | None:
    """The next message line (newline included), or None once the client is done.

    A line longer than MAX_MESSAGE is skipped up to its newline (so the next
    line is read as usual) and comes back as ``_Frame(None)``; bytes after the
    last newline at the end of the stream are a last frame.
    """
    try:
        line = await reader.readuntil(b"\n")
    except asyncio.IncompleteReadError as exc:
        return _Frame(exc.partial, last=True) if exc.partial else None
    except asyncio.LimitOverrunError as exc:
        await reader.readexactly(exc.consumed)
        while True:
            try:
                await reader.readuntil(b"\n")
                return _Frame(None)
            except asyncio.LimitOverrunError as more:
                await reader.readexactly(more.consumed)
            except asyncio.IncompleteReadError:
                return _Frame(None, last=True)
    if len(line) - 1 > MAX_MESSAGE:  # readuntil's limit already says so; the rule is here
        return _Frame(None)
    return _Frame(line)


async def _send(writer: asyncio.StreamWriter, answer: dict[str, Any]) -> None:
    try:
        data = encode(answer)
    except (TypeError, ValueError) as exc:  # a result JSON cannot hold: still answer
        err = error_for(exc)
        data = encode(protocol.error(answer.get("id"), err.code, err.message, err.data))
    writer.write(data)
    await writer.drain()


async def _drain_and_close(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """End a connection after a last answer so that the client can read it.

    Closing a Unix socket with unread bytes resets the connection, and the
    client would see the reset instead of the answer: the daemon ends its side,
    then reads (and drops) what the client sent, for a second at most.
    """
    writer.write_eof()

    async def drain() -> None:
        while await reader.read(1 << 16):
            pass

    with contextlib.suppress(TimeoutError, ConnectionError):
        await asyncio.wait_for(drain(), timeout=REFUSAL_GRACE)


def _peer_refusal(writer: asyncio.StreamWriter) -> dict[str, Any] | None:
    """The answer that refuses a connection from another user (or an unverified one)."""
    sock = writer.get_extra_info("socket")
    uid = peer_uid(sock) if sock is not None else None
    if uid == os.getuid():
        return None
    if uid is None:
        log.warning(
            "refused a connection: the user at its other end cannot be verified (no peer "
            "credentials on %s); the daemon serves only connections it can verify",
            sys.platform,
        )
        why = "the daemon cannot verify which user is connecting, and serves only its own"
    else:
        log.warning("refused a connection from user id %d (the daemon serves only its own)", uid)
        why = "the daemon serves only the user who started it"
    return protocol.error(None, protocol.INVALID_REQUEST, "permission denied", why)
