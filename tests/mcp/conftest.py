"""Fixtures of the MCP server tests: a real repository (its daemon stopped afterwards) and
a plain folder for embedded mode, each with the environment its processes get."""

from __future__ import annotations

from mcp_fixtures import folder

from gitmode_fixtures import gm

__all__ = ["folder", "gm"]
