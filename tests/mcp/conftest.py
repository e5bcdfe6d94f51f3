"""Fixtures of the MCP server tests: a real repository (its daemon stopped afterwards) and
a plain folder for embedded mode, each with the environment its processes get. The
server runs in this process, over the SDK's in-memory streams; an ``e2e`` test gets a
real ``redline mcp`` subprocess over stdio."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from mcp_fixtures import folder

from gitmode_fixtures import gm
from support import mcp_client

__all__ = ["folder", "gm"]


@pytest.fixture(autouse=True)
def mcp_transport(request: pytest.FixtureRequest) -> Iterator[None]:
    real = request.node.get_closest_marker("e2e") is not None
    mcp_client.transport = "stdio" if real else "memory"
    yield
    mcp_client.transport = "memory"
