"""Permissions for an MCP server's calls, and the approvals a person gave while it runs.

The rules are ``tools.permissions``'; what this adds is memory: when a person
approves a tool on a path (an ``ask`` rule, answered through the client), that
path is allowed for the rest of the server's life, for both edit tools at once
(``family``: an approval of ``edit`` on a path covers ``apply_patch`` on it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from redline.tools.permissions import Decision, Permissions, family, request_decision


class _Remembered(Permissions):
    """The rules, with the paths approved so far allowed instead of asked."""

    def __init__(self, rules: Permissions, approved: set[tuple[str, str]]) -> None:
        self._rules = rules
        self._approved = approved

    def decide(self, tool: str, path: str) -> Decision:
        decision = self._rules.decide(tool, path)
        if decision.action == "ask" and (family(tool), path) in self._approved:
            return Decision("allow", f"approved during this session ({decision.rule})")
        return decision

    def available(self, tool: str) -> bool:
        return self._rules.available(tool)


class Gate:
    def __init__(self, rules: Permissions) -> None:
        self._approved: set[tuple[str, str]] = set()
        self._rules = _Remembered(rules, self._approved)

    def decide(self, request: Mapping[str, Any]) -> tuple[Decision, str | None]:
        """The strictest decision over the paths ``request`` touches, approvals counted,
        and the path it is about."""
        return request_decision(self._rules, request)

    def approve(self, tool: str, path: str) -> None:
        self._approved.add((family(tool), path))
