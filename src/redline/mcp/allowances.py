"""Permissions for an MCP server's calls, and what a person allowed while it runs.

The rules are ``tools.permissions``'; what this adds is memory: when a person
allows a tool on a path (an ``ask`` rule, answered through the client), that
path is allowed for the rest of the server's life, for both edit tools at once
(``family``: allowing ``edit`` on a path covers ``apply_patch`` on it).

(Not to be confused with ``redline approve``, by which a person clears an edit the
guard flagged: that is never offered to an agent's channel.)
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from redline.engine.records import field, record, replace
from redline.tools.permissions import Decision, Permissions, family, request_decision


@record(frozen=True)
class _Remembered(Permissions):
    """The rules, with the paths a person allowed so far allowed instead of asked."""

    allowed: set[tuple[str, str]] = field(default_factory=set)  # (family, relative path)

    def decide(self, tool: str, path: str) -> Decision:
        decision = super().decide(tool, path)
        if decision.action == "ask" and (family(tool), self.relative(path)) in self.allowed:
            rule = f"allowed by the person during this session ({decision.rule})"
            return Decision("allow", rule, decision.source, by_person=True)
        return decision


class Allowances:
    def __init__(self, rules: Permissions) -> None:
        self._rules = _Remembered(rules.rules, rules.root, rules.user)

    def decide(
        self, request: Mapping[str, Any], root: Path | None = None
    ) -> tuple[Decision, str | None]:
        """The strictest decision over the paths ``request`` touches (what a person allowed counts),
        and the path it is about. ``root``: the folder its paths are relative to (in git
        mode the session's worktree), so an absolute path inside it is judged as the
        relative one it names."""
        return request_decision(self._under(root), request)

    def allow(self, tool: str, path: str, root: Path | None = None) -> None:
        self._rules.allowed.add((family(tool), self._under(root).relative(path)))

    def _under(self, root: Path | None) -> _Remembered:
        return self._rules if root is None else replace(self._rules, root=str(root))
