"""The session an MCP server opens when none is named: named for the client."""

from __future__ import annotations

import pytest

from redline.gitops.names import check_name
from redline.mcp.naming import FALLBACK, session_name_for


@pytest.mark.parametrize(
    ("client", "session"),
    [
        ("claude-code", "claude-code"),
        ("Claude Desktop", "claude-desktop"),
        ("Cursor", "cursor"),
        ("codex-mcp-client", "codex-mcp-client"),
        ("my agent (v2.1)", "my-agent-v2.1"),
        ("  --weird__name..lock", "weird__name"),
        ("a..b", "a.b"),
        ("Ω client ✓", "client"),
        ("x" * 100, "x" * 63),
        ("", FALLBACK),
        (None, FALLBACK),
        ("✓✓✓", FALLBACK),
        ("name.lock.lock", "name"),
    ],
)
def test_a_client_name_becomes_a_valid_session_name(client: str | None, session: str) -> None:
    assert session_name_for(client) == session
    check_name(session_name_for(client))  # raises when invalid
