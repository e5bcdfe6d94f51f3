"""Wire requests, as an agent sends them to ``redline apply``, the daemon or MCP."""

from __future__ import annotations

from typing import Any


def edit(path: str, old: str, new: str, **fields: Any) -> dict[str, Any]:
    """An ``edit`` request: ``old`` replaced by ``new`` in ``path``."""
    return {"tool": "edit", "path": path, "old_string": old, "new_string": new, **fields}


def patch(body: str, **fields: Any) -> dict[str, Any]:
    """An ``apply_patch`` request whose patch is ``body`` between the Begin/End markers."""
    return {"tool": "apply_patch", "patch": f"*** Begin Patch\n{body}*** End Patch\n", **fields}


def write(path: str, content: str, **fields: Any) -> dict[str, Any]:
    return {"tool": "write", "path": path, "content": content, **fields}


def delete(path: str, **fields: Any) -> dict[str, Any]:
    return {"tool": "delete", "path": path, **fields}


def read(path: str, **fields: Any) -> dict[str, Any]:
    return {"tool": "read", "path": path, **fields}


def arguments(request: dict[str, Any]) -> dict[str, Any]:
    """A request's fields as an MCP tool call's arguments (without ``tool``)."""
    return {k: v for k, v in request.items() if k != "tool"}
