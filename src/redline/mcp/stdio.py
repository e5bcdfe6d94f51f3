"""The MCP server's stdio transport: every line answered as JSON-RPC 2.0 asks.

The SDK's own transport drops what it cannot parse: a line that is not JSON,
a batch, a message nested deeper than its parser goes, a request of the wrong
shape get no answer at all, and a client that goes away mid-answer ends the
server with a broken-pipe error. This one reads each line itself:

- not JSON: ``-32700`` parse error, ``id: null``;
- JSON but not a message (a string, an empty batch, nested deeper than the
  daemon's protocol allows, a request of the wrong shape): ``-32600`` invalid
  request, with the request's id when it has a valid one, else ``null``;
- a batch: an array of ``-32600`` answers, one per request in it (MCP removed
  batches in 2025-06-18): each says to send one message per line;
- anything else goes to the server, which answers it.

Bytes that are not UTF-8 inside a JSON string reach the tools as they are
(as surrogate escapes), so a tool answers ``invalid`` naming the field rather
than the text being silently altered. A string JSON cannot carry as it is
(a lone surrogate an argument carried in) is written back as its escape.

While serving, file descriptors 0 and 1 point at the null device and at
stderr, so nothing a child process or a library prints reaches the wire; the
wire is read and written through private duplicates. A client that closes the
wire ends the server quietly: reading reaches its end, or writing finds no
reader.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import threading
from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import mcp_types as types
from mcp.shared._context_streams import (
    ContextReceiveStream,
    ContextSendStream,
    create_context_streams,
)
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from redline.daemon.protocol import INVALID_REQUEST, RpcError, decode_text

Streams = tuple[ContextReceiveStream[SessionMessage | Exception], ContextSendStream[SessionMessage]]
_GONE = (errno.EPIPE, errno.ECONNRESET, errno.EBADF)


def frame(line: bytes) -> tuple[list[types.JSONRPCMessage], list[bytes]]:
    """What one line carries: the messages for the server, and the answers owed at once."""
    if not line.strip():
        return [], []
    # Not UTF-8 inside a string: kept as surrogate escapes for the tools to name.
    try:
        value = decode_text(line.decode("utf-8", "surrogateescape"))
    except RpcError as refused:
        return [], [_error(None, refused.code, refused.message, refused.data)]
    if isinstance(value, list):
        return [], _batch(value)
    if not isinstance(value, dict):
        return [], [_error(None, INVALID_REQUEST, "invalid request", "send a JSON-RPC object")]
    try:
        message = types.jsonrpc_message_adapter.validate_python(value, by_name=False)
    except ValidationError as exc:
        if "method" in value and "id" not in value:
            return [], []  # a notification is never answered, not even with an error
        return [], [_error(_id(value), INVALID_REQUEST, "invalid request", _explain(exc))]
    return [message], []


def _batch(items: list[Any]) -> list[bytes]:
    if not items:
        return [_error(None, INVALID_REQUEST, "invalid request", "an empty batch asks nothing")]
    why = (
        "batches are not supported (MCP removed them in 2025-06-18): send each message "
        "as one JSON object on a line of its own"
    )
    answers = []
    for item in items:
        try:
            message = types.jsonrpc_message_adapter.validate_python(item, by_name=False)
        except ValidationError:
            answers.append(_error_object(None, INVALID_REQUEST, "invalid request", why))
            continue
        if isinstance(message, types.JSONRPCRequest):  # notifications and responses: no answer
            answers.append(_error_object(message.id, INVALID_REQUEST, "invalid request", why))
    return [_encode_raw(answers)] if answers else []


def _id(value: Any) -> str | int | None:
    found = value.get("id") if isinstance(value, dict) else None
    valid = isinstance(found, (str, int)) and not isinstance(found, bool)
    return found if valid else None


def _explain(exc: ValidationError) -> str:
    problems = []
    for error in exc.errors()[:5]:
        where = ".".join(str(part) for part in error["loc"]) or "message"
        problems.append(f"{where}: {error['msg']}")
    return "not a JSON-RPC 2.0 message (" + "; ".join(problems) + ")"


def _error_object(request_id: Any, code: int, message: str, data: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {"code": code, "message": message, "data": data},
    }


def _error(request_id: Any, code: int, message: str, data: Any) -> bytes:
    return _encode_raw(_error_object(request_id, code, message, data))


def _encode_raw(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode("utf-8", "backslashreplace") + b"\n"


def encode(message: types.JSONRPCMessage) -> bytes:
    """One message as a line of UTF-8 JSON."""
    try:
        text = message.model_dump_json(by_alias=True, exclude_unset=True)
    except Exception:  # a lone surrogate an argument carried in: written as its escape
        return _encode_raw(message.model_dump(mode="json", by_alias=True, exclude_unset=True))
    return text.encode("utf-8") + b"\n"


class ClientGone(Exception):
    """The client closed the wire while the server was answering."""


@contextlib.asynccontextmanager
async def stdio_transport() -> AsyncIterator[Streams]:
    """The server's streams over this process's stdin and stdout (see the module)."""
    with _claimed() as (wire_in, wire_out):
        reader = os.fdopen(wire_in, "rb", closefd=False)
        read_send, read_stream = create_context_streams[SessionMessage | Exception](0)
        write_stream, write_receive = create_context_streams[SessionMessage](0)
        out_send, out_receive = anyio.create_memory_object_stream[bytes](64)

        lines_send, lines_receive = anyio.create_memory_object_stream[bytes](16)
        token = anyio.lowlevel.current_token()

        def read_wire() -> None:
            """On a daemon thread of its own: one blocked in a read of the wire never holds
            up the end of the process (a client may keep the wire open and go quiet)."""
            try:
                while line := reader.readline():
                    anyio.from_thread.run(lines_send.send, line, token=token)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, RuntimeError):
                return  # the server ended first (or its event loop did)
            except OSError:
                pass  # the wire is broken: as good as closed
            with contextlib.suppress(RuntimeError):
                anyio.from_thread.run(lines_send.aclose, token=token)

        async def read_lines() -> None:
            async with read_send, lines_receive:
                async for line in lines_receive:
                    messages, answers = frame(line)
                    for answer in answers:
                        await out_send.send(answer)
                    for message in messages:
                        await read_send.send(SessionMessage(message))

        async def server_lines() -> None:
            async with write_receive:
                async for session_message in write_receive:
                    await out_send.send(encode(session_message.message))

        async def write_out(group: anyio.abc.TaskGroup) -> None:
            async with out_receive:
                async for data in out_receive:
                    try:
                        await anyio.to_thread.run_sync(_write_all, wire_out, data)
                    except ClientGone:
                        group.cancel_scope.cancel()  # nobody reads the answers: stop quietly
                        return

        async with anyio.create_task_group() as group:
            group.start_soon(write_out, group)
            async with anyio.create_task_group() as producers:
                producers.start_soon(server_lines)
                reading = anyio.CancelScope()

                async def read_until_done() -> None:
                    with reading:
                        await read_lines()

                producers.start_soon(read_until_done)
                threading.Thread(target=read_wire, name="redline-mcp-stdin", daemon=True).start()
                try:
                    yield read_stream, write_stream
                finally:
                    reading.cancel()  # the server is done: no more lines are read
                    await write_stream.aclose()  # ...and its last answers go out
            await out_send.aclose()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view) :]
    except OSError as exc:
        if exc.errno in _GONE:
            raise ClientGone from exc
        raise


@contextlib.contextmanager
def _claimed() -> Any:
    """Private duplicates of fds 0 and 1 (the wire); 0 and 1 point elsewhere meanwhile."""
    try:
        wire_in = os.dup(0)
        wire_out = os.dup(1)
    except OSError:  # no standard descriptors to move: serve them as they are
        yield 0, 1
        return
    moved = False
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            os.dup2(null, 0)
        finally:
            os.close(null)
        os.dup2(2, 1)
        moved = True
    except OSError:
        pass
    try:
        yield wire_in, wire_out
    finally:
        if moved:
            with contextlib.suppress(OSError):
                os.dup2(wire_in, 0)
            with contextlib.suppress(OSError):
                os.dup2(wire_out, 1)
        with contextlib.suppress(OSError):
            os.close(wire_out)
        # wire_in stays open: the reading thread may still be blocked on it (read_wire)
