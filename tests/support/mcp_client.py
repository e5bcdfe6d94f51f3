"""Driving ``redline mcp`` with the MCP SDK's own clients.

By default the server runs in this process: ``redline mcp ARGS`` is invoked as
the command line would (``support.cli``: the test's environment and working
folder, its options parsed and refused as users see it), and the ``Served``
it would put on stdio is served over the SDK's in-memory transport instead;
the environment and folder stay in force while the connection is open (the
daemon a git-mode server starts is then a thread of this process, stopped
after the test). Its stderr goes to a file the test may read.

With :data:`transport` set to ``"stdio"`` (``tests/mcp/conftest.py`` does it
for ``e2e`` tests) the server is a real ``python -m redline mcp`` subprocess
reached over stdio, this tree's code through the inherited PYTHONPATH.

``connect`` does the handshake an MCP client does (``initialize`` with a
clientInfo, the elicitation capability when a callback is given);
``connect_modern`` opens a 2026-07-28 connection (``server/discover``) with the
SDK's high-level client.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp.client._memory import InMemoryTransport
from mcp.client.session import ClientRequestContext
from mcp.server.lowlevel import Server

from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from redline.cli import mcp as mcp_command
from redline.mcp.server import Served, build
from support import cli as inproc

CLIENT_NAME = "Test Client"  # the session named for it: test-client
Elicit = Callable[[ClientRequestContext, types.ElicitRequestParams], Awaitable[types.ElicitResult]]
transport = "memory"  # or "stdio": a real server subprocess


class ServerRefused(Exception):
    """``redline mcp`` exited before serving (its exit code and stderr say why)."""


@contextlib.contextmanager
def in_process(
    env: Mapping[str, str], cwd: Path, args: tuple[str, ...], log: Path
) -> Iterator[Server[Any]]:
    """The server ``redline mcp ARGS`` would serve on stdio, built in this process; the
    environment and folder stay in force until the block ends, then the server's
    backend is closed as it is when stdio closes."""
    served: list[Served] = []
    saved = mcp_command.run_stdio
    mcp_command.run_stdio = served.append
    try:
        done = inproc.run(["mcp", *args], env=env, cwd=cwd, input=b"")
    finally:
        mcp_command.run_stdio = saved
    with log.open("a") as errlog:
        errlog.write(done.stderr)
    if not served:
        raise ServerRefused(f"redline mcp exited {done.returncode} before serving:\n{done.stderr}")
    try:
        with inproc.process_state(env, cwd, ["redline", "mcp", *args]):
            yield build(served[0])
    finally:
        served[0].backend.close()


def server(env: Mapping[str, str], cwd: Path, *args: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "redline", "mcp", *args],
        env=dict(env),
        cwd=str(cwd),
    )


@contextlib.asynccontextmanager
async def connect(
    env: Mapping[str, str],
    cwd: Path,
    *args: str,
    elicit: Elicit | None = None,
    client_name: str = CLIENT_NAME,
    stderr: Path | None = None,
) -> AsyncIterator[ClientSession]:
    log = stderr or cwd.parent / "mcp-stderr.log"
    async with contextlib.AsyncExitStack() as stack:
        if transport == "stdio":
            errlog = stack.enter_context(log.open("a"))
            streams = stdio_client(server(env, cwd, *args), errlog=errlog)
        else:
            streams = InMemoryTransport(stack.enter_context(in_process(env, cwd, args, log)))
        read, write = await stack.enter_async_context(streams)
        session = await stack.enter_async_context(
            ClientSession(
                read,
                write,
                elicitation_callback=elicit,
                client_info=types.Implementation(name=client_name, version="1.0"),
            )
        )
        await session.initialize()
        yield session


@contextlib.asynccontextmanager
async def connect_modern(
    env: Mapping[str, str], cwd: Path, *args: str, elicit: Elicit | None = None
) -> AsyncIterator[Client]:
    with contextlib.ExitStack() as stack:
        target: Server[Any] | StdioServerParameters = (
            server(env, cwd, *args)
            if transport == "stdio"
            else stack.enter_context(in_process(env, cwd, args, cwd.parent / "mcp-stderr.log"))
        )
        async with Client(
            target,
            mode="auto",
            elicitation_callback=elicit,
            client_info=types.Implementation(name=CLIENT_NAME, version="1.0"),
        ) as client:
            yield client


def answering(action: str, asked: list[str]) -> Elicit:
    """An elicitation callback that records each question and answers ``action``."""

    async def elicit(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        asked.append(params.message)
        content: dict[str, Any] | None = {} if action == "accept" else None
        return types.ElicitResult(action=action, content=content)  # type: ignore[arg-type]

    return elicit


def text(result: types.CallToolResult) -> str:
    blocks = [b.text for b in result.content if isinstance(b, types.TextContent)]
    assert len(blocks) == 1, result.content
    return blocks[0]


def structured(result: types.CallToolResult) -> dict[str, Any]:
    data = result.structured_content
    assert isinstance(data, dict), result
    json.dumps(data)  # plain JSON
    return data
