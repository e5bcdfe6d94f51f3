"""Driving a real ``redline mcp`` subprocess with the MCP SDK's own stdio client.

The server is started as users start it (``python -m redline mcp ...``, this
tree's code through the inherited PYTHONPATH) with the test's scrubbed
environment; its stderr goes to a file the test may read. ``connect`` does the
handshake an MCP client does (``initialize`` with a clientInfo, the
elicitation capability when a callback is given); ``connect_modern`` opens a
2026-07-28 connection (``server/discover``) with the SDK's high-level client.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp.client.session import ClientRequestContext

from mcp import Client, ClientSession, StdioServerParameters, stdio_client

CLIENT_NAME = "Test Client"  # the session named for it: test-client
Elicit = Callable[[ClientRequestContext, types.ElicitRequestParams], Awaitable[types.ElicitResult]]


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
    with log.open("a") as errlog:
        async with (
            stdio_client(server(env, cwd, *args), errlog=errlog) as (read, write),
            ClientSession(
                read,
                write,
                elicitation_callback=elicit,
                client_info=types.Implementation(name=client_name, version="1.0"),
            ) as session,
        ):
            await session.initialize()
            yield session


@contextlib.asynccontextmanager
async def connect_modern(
    env: Mapping[str, str], cwd: Path, *args: str, elicit: Elicit | None = None
) -> AsyncIterator[Client]:
    async with Client(
        server(env, cwd, *args),
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
