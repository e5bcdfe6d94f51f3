"""Which tool may change which path: the ``[permission]`` rules, decided.

Rules are read by :mod:`redline.settings.tools`; this module only decides. A
tool's rules are, in order, those of ``*`` and then its own, and the last rule
whose glob matches the path decides (no rule at all: allow). The user's own
rules and the repository's are two sets decided apart, and the stricter
decision stands (deny beats ask beats allow): a repository's file can add a
restriction, never lift one of the user's. ``edit`` and
``apply_patch`` are one family: a tool of the two without rules of its own takes
its sibling's — ``deny`` included — so ``apply_patch = "deny"`` keeps a model
from making the same change through ``edit``, unless ``edit`` has rules of its
own. Explicit tool rules beat ``*`` because they come after it.
A path through a symbolic link inside the root is judged by the file it leads
to as well (the strictest of the two), as the file system layer follows it.

``read`` changes nothing and needs no permission (:func:`needs_permission`).

:func:`verdict` is the one decision every caller reaches — ``redline apply``
embedded, ``redline mcp``, and the daemon for every ``apply`` it is sent: None
lets a request through, a ``rejected`` result names the rule. An ``ask`` rule
passes only when the caller asked a person and they allowed it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from redline.engine.paths import strip_root
from redline.engine.policy import glob_matches
from redline.engine.records import field, record

Action = Literal["allow", "deny", "ask"]
ACTIONS: tuple[Action, ...] = ("allow", "deny", "ask")
GUARDED_TOOLS = ("edit", "apply_patch", "write", "delete")
TOOL_KEYS = (*GUARDED_TOOLS, "*")
ALIASES = {"patch": "apply_patch"}
_SIBLING = {"edit": "apply_patch", "apply_patch": "edit"}
# Globs that match every path: a rule with one decides for the whole tool.
_EVERY_PATH = frozenset({"*", "**", "**/*", "/*", "/**", "**/**"})
_SEVERITY = {"allow": 0, "ask": 1, "deny": 2}
DEFAULT_RULE = "default (no rule)"
READ_RULE = "read needs no permission"
READ_TOOLS = frozenset({"read"})  # tools that change nothing


def needs_permission(tool: object) -> bool:
    """Whether a request of ``tool`` is judged by the rules: every tool but ``read``, which
    changes nothing (the one place this rule is written)."""
    return ALIASES.get(tool, tool) not in READ_TOOLS if isinstance(tool, str) else True


@record(frozen=True)
class Decision:
    """What the permission rules say of one request: the action, and the rule that decided."""

    action: Action
    # The rule that decided, as written, e.g. 'permission.edit."migrations/**" = "deny"'.
    rule: str
    source: str | None = None  # the file the rule was read from
    # allowed by a person asked about an ``ask`` rule (redline mcp's allowances)
    by_person: bool = False


ALLOWED = Decision("allow", DEFAULT_RULE)


@record(frozen=True)
class PathRule:
    """One rule of one tool key: ``pattern`` None covers every path."""

    pattern: str | None
    action: Action
    rule: str  # as written, for messages
    source: str | None = None

    def matches(self, path: str) -> bool:
        return self.pattern is None or glob_matches(self.pattern, path)

    @property
    def covers_everything(self) -> bool:
        return self.pattern is None or self.pattern in _EVERY_PATH

    @property
    def decision(self) -> Decision:
        return Decision(self.action, self.rule, self.source)


@record(frozen=True)
class Permissions:
    """Rules by tool key (``edit``, ``apply_patch``, ``write``, ``delete``, ``*``).

    ``root`` is the folder request paths are relative to: an absolute path
    inside it is judged by its relative path, as the file system layer reads it.
    """

    rules: Mapping[str, tuple[PathRule, ...]] = field(default_factory=dict)
    root: str | None = None
    # The user's own rules: decided apart from ``rules`` (the repository's), the
    # stricter decision standing, so that no repository file lifts the user's.
    user: Mapping[str, tuple[PathRule, ...]] = field(default_factory=dict)

    def decide(self, tool: str, path: str) -> Decision:
        """The action for ``tool`` (edit|apply_patch|write|delete) at ``path``."""
        tool = ALIASES.get(tool, tool)
        if not needs_permission(tool):
            return Decision("allow", READ_RULE)
        relative = self.relative(path)
        decision = self._decide(tool, relative)
        linked = self.resolved(relative)
        if linked is not None and linked != relative:  # a link inside the root: judge its file too
            decision = strictest([decision, self._decide(tool, linked)])
        return decision

    def _decide(self, tool: str, relative: str) -> Decision:
        """The user's decision and the repository's, the stricter; on a tie, one a rule made
        (the user's when both have one)."""
        decisions = []
        for rules in (self.user, self.rules):
            decision = ALLOWED
            for rule in _chain(rules, tool):
                if rule.matches(relative):
                    decision = rule.decision
            decisions.append(decision)
        return max(decisions, key=lambda d: (_SEVERITY[d.action], d.rule != DEFAULT_RULE))

    def resolved(self, relative: str) -> str | None:
        """Where ``relative`` leads under the root through symbolic links (as the file system
        layer follows them), relative to the root; None without a root, or outside it."""
        if self.root is None or relative.startswith("/"):
            return None
        try:
            base = os.path.realpath(self.root)
            inside = strip_root(os.path.realpath(os.path.join(base, relative)), base)
        except (OSError, ValueError):  # a NUL byte: no file; the wire format refuses it
            return None
        return inside if inside not in (None, ".") else None

    def available(self, tool: str) -> bool:
        """False when ``tool`` is denied for every path (a tool no call could use)."""
        tool = ALIASES.get(tool, tool)
        if not needs_permission(tool):
            return True
        return _available(_chain(self.user, tool)) and _available(_chain(self.rules, tool))

    def chain(self, tool: str) -> tuple[PathRule, ...]:
        """The repository's rules that apply to ``tool``, in the order they are read (the
        last match wins); the user's are :meth:`user_chain`."""
        return _chain(self.rules, tool)

    def user_chain(self, tool: str) -> tuple[PathRule, ...]:
        return _chain(self.user, tool)

    @property
    def every_rule(self) -> list[PathRule]:
        """The user's rules, then the repository's, as read."""
        return [rule for rules in (self.user, self.rules) for chain in rules.values()
                for rule in chain]  # fmt: skip

    def relative(self, path: str) -> str:
        """``path`` as the rules see it: relative to the root, without ``.`` or ``//``."""
        if path.startswith("/") and self.root is not None:
            path = _inside(path, self.root) or path
        parts = [part for part in path.split("/") if part and part != "."]
        return "/".join(parts) if parts else path


def _chain(rules: Mapping[str, tuple[PathRule, ...]], tool: str) -> tuple[PathRule, ...]:
    """``"*"``'s rules and then the tool's own (its sibling's when it has none)."""
    tool = ALIASES.get(tool, tool)
    own = rules.get(tool)
    if own is None and tool in _SIBLING:
        own = rules.get(_SIBLING[tool])
    return (*rules.get("*", ()), *(own or ()))


def _available(chain: tuple[PathRule, ...]) -> bool:
    last = max((i for i, rule in enumerate(chain) if rule.covers_everything), default=None)
    if last is None:
        return True  # some path falls through to the default, allow
    return any(rule.action != "deny" for rule in chain[last:])


def _inside(path: str, root: str) -> str | None:
    """After ``fsops.confine.relative_to_root``: the root as given, then resolved."""
    given = os.path.abspath(root)
    for base in (given, os.path.realpath(given)):
        inside = strip_root(path, base)
        if inside is not None:
            return inside
    folder, name = os.path.split(path.rstrip("/"))
    try:
        return strip_root(os.path.join(os.path.realpath(folder), name), os.path.realpath(given))
    except (OSError, ValueError):
        return None


def family(tool: str) -> str:
    """``edit`` for edit and apply_patch (allowing one on a path allows both), else the tool."""
    tool = ALIASES.get(tool, tool)
    return "edit" if tool in _SIBLING else tool


def request_paths(request: Mapping[str, Any]) -> list[str]:
    """The paths a wire request would touch (apply_patch: every header, move targets too).

    A request too malformed to name its paths names none: it is refused as
    ``invalid`` before it touches anything.
    """
    tool = ALIASES.get(str(request.get("tool")), request.get("tool"))
    if tool == "apply_patch":
        return _patch_paths(request.get("patch"))
    path = request.get("path")
    if tool in GUARDED_TOOLS and isinstance(path, str) and path:
        return [path]
    return []


def _patch_paths(text: object) -> list[str]:
    if not isinstance(text, str):
        return []
    from redline.engine.errors import RequestError
    from redline.engine.patch_parse import UpdateFile, parse_patch

    try:
        patch = parse_patch(text)
    except RequestError:
        return []
    paths: list[str] = []
    for op in patch.operations:
        paths.append(op.path)
        if isinstance(op, UpdateFile) and op.move_to is not None:
            paths.append(op.move_to)
    return paths


def request_decision(
    permissions: Permissions, request: Mapping[str, Any]
) -> tuple[Decision, str | None]:
    """The strictest decision over the paths ``request`` touches, and that path.

    deny beats ask beats allow; among equals the first path named (an allow a person
    gave before a plain one). A request
    naming no path (a read, or one too malformed to say) is allowed here and
    judged by the wire format.
    """
    if not isinstance(request, Mapping):
        return ALLOWED, None
    tool = str(request.get("tool"))
    found: tuple[Decision, str | None] = (ALLOWED, None)
    for path in request_paths(request):
        decision = permissions.decide(tool, path)
        stricter = _SEVERITY[decision.action] - _SEVERITY[found[0].action]
        if stricter > 0 or (stricter == 0 and decision.by_person and not found[0].by_person):
            found = (decision, path)  # an allow a person gave is kept: the daemon asks for it
    return found


def strictest(decisions: Iterable[Decision]) -> Decision:
    """The strictest of several decisions (allow when there are none)."""
    return max(decisions, key=lambda d: _SEVERITY[d.action], default=ALLOWED)


def verdict(permissions: Permissions, obj: Any, asked: bool = False) -> dict[str, Any] | None:
    """None when the rules let request ``obj`` through; else its ``rejected`` result naming
    the rule. ``asked``: the caller asked a person about an ``ask`` rule and they allowed
    it (only a front end that can ask says so; the rest are refused with what to set)."""
    if not isinstance(obj, dict):
        return None  # refused as invalid by the wire format
    decision, path = request_decision(permissions, obj)
    if decision.action == "allow" or (decision.action == "ask" and asked):
        return None
    return rejected_result(decision, str(obj.get("tool")), path)


def unknown_rules(error: str, obj: Any) -> dict[str, Any] | None:
    """The answer to request ``obj`` when the settings holding the rules cannot be read
    (``error`` says why): ``failed``, nothing applied — except a read, which needs no
    permission."""
    from redline.engine.result import Result

    if isinstance(obj, dict) and not needs_permission(obj.get("tool")):
        return None
    path = obj.get("path") if isinstance(obj, dict) else None
    given = path if isinstance(path, str) else None
    message = f"{error}; nothing was applied, since the permissions it holds are unknown"
    return Result("failed", path=given, error=message).to_dict()


def rejected_result(decision: Decision, tool: str, path: str | None) -> dict[str, Any]:
    """The JSON result of a request a rule stops: status ``rejected``, the rule, what to do."""
    from redline.engine.result import Result

    tool = ALIASES.get(tool, tool)
    return Result("rejected", path=path, error=rejection_message(decision, tool, path)).to_dict()


def rejection_message(decision: Decision, tool: str, path: str | None) -> str:
    tool = ALIASES.get(tool, tool)
    where = f" of {path!r}" if path else ""
    rule = decision.rule + (f" (in {decision.source})" if decision.source else "")
    target = path or "<path>"
    configure = (
        f'[permission.{tool}] "{target}" = "allow" as its last entry, in the repository\'s '
        ".redline.toml or the user's config file"
    )
    if decision.action == "ask":
        return (
            f"{tool}{where} needs the user to allow it (rule {rule}), and this caller cannot "
            "ask: nothing was changed. Run the agent through an MCP client (`redline mcp`), "
            f"which asks the user, or allow it without asking: {configure}"
        )
    return (
        f"{tool}{where} is denied by the permission rule {rule}; nothing was changed. "
        "Do not try the same change with another tool: ask the user. To allow it, a person "
        f"sets {configure}"
    )
