"""The session an MCP server uses when none is named: one named for the client."""

from __future__ import annotations

import re

FALLBACK = "mcp"  # a client that gives no usable name
_INVALID = re.compile(r"[^a-z0-9._-]+")
_LIMIT = 63  # the longest session name (redline.gitops.names)


def session_name_for(client_name: str | None) -> str:
    """A valid session name from the client's ``clientInfo.name``: lower case, every run of
    other characters as one '-', no leading or trailing punctuation, no '..', no '.lock'
    ending, at most 63 characters; ``mcp`` when nothing usable is left."""
    name = _INVALID.sub("-", (client_name or "").lower())
    name = re.sub(r"\.{2,}", ".", name)
    name = name[:_LIMIT].strip("._-")
    while name.endswith(".lock"):
        name = name.removesuffix(".lock").rstrip("._-")
    return name or FALLBACK
