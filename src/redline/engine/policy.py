"""Protected paths: which edits need a person's review. Pure: no files are read here.

A policy is a list of rules; each protects path globs and says what an edit
there must show: an allowed match type (``require``) and/or a minimum
confidence. An edit breaking a rule is flagged (action ``review``) or refused
(action ``reject``). Exact edits satisfy every ``require``; unprotected paths
always pass.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Protocol, TypeVar

ACTIONS = ("review", "reject")
MATCH_TYPES = (
    "exact",
    "trailing_newline",
    "punctuation",
    "whitespace",
    "escaped",
    "fuzzy",
    "line_fuzzy",
    "rstrip",
    "strip",
)
POLICY_FILE = ".redline.toml"
# The policy file and the hook configuration: editing them tolerantly could
# quietly weaken the gate itself.
DEFAULT_PROTECTED = (
    POLICY_FILE,
    ".pre-commit-config.yaml",
    ".pre-commit-hooks.yaml",
    ".githooks/**",
    ".husky/**",
)


@dataclass(frozen=True)
class Rule:
    name: str  # how messages refer to it, e.g. "guard.protect[1] (migrations/**)"
    paths: tuple[str, ...]
    require: frozenset[str] | None = None
    min_confidence: float | None = None

    def covers(self, path: str) -> bool:
        return any(glob_matches(pattern, path) for pattern in self.paths)


@dataclass(frozen=True)
class Violation:
    rule: str
    path: str
    reason: str  # e.g. "match_type fuzzy is not one of: exact"


class Evidence(Protocol):
    """An operation as the policy judges it: where, and how its text was matched."""

    @property
    def path(self) -> str: ...
    @property
    def match_type(self) -> str | None: ...  # None: no text was matched (an add, a delete)
    @property
    def confidence(self) -> float | None: ...


E = TypeVar("E", bound=Evidence)


@dataclass(frozen=True)
class Policy:
    action: str = "review"
    rules: tuple[Rule, ...] = field(default_factory=tuple)
    source: str = "defaults"  # where it was read from, for messages

    def judge(self, operations: Iterable[E]) -> list[tuple[E, Violation]]:
        """Each rule each operation breaks (the edit's verdict: none means it passes).

        The daemon judges an edit with this when it is made, and the guard judges
        the same evidence again when it is committed or pushed.
        """
        return [
            (op, violation)
            for op in operations
            if op.match_type is not None
            for violation in self.check(op.path, op.match_type, op.confidence or 0.0)
        ]

    def check(self, path: str, match_type: str, confidence: float) -> list[Violation]:
        """Every rule an edit at ``path`` with this evidence breaks."""
        if match_type == "exact" and confidence >= 1.0:
            return []
        found = []
        for rule in self.rules:
            if not rule.covers(path):
                continue
            if rule.require is not None and match_type not in rule.require:
                allowed = ", ".join(sorted(rule.require))
                found.append(
                    Violation(rule.name, path, f"match_type {match_type} is not one of: {allowed}")
                )
            elif rule.min_confidence is not None and confidence < rule.min_confidence:
                found.append(
                    Violation(
                        rule.name,
                        path,
                        f"confidence {confidence:g} is below the minimum {rule.min_confidence:g}",
                    )
                )
        return found


def default_rules(extra: tuple[str, ...] = ()) -> tuple[Rule, ...]:
    paths = DEFAULT_PROTECTED + extra
    return (Rule("default (policy and hook files)", paths, frozenset({"exact"})),)


def glob_matches(pattern: str, path: str) -> bool:
    """gitignore-style globs: ``*`` within a segment, ``**`` across segments.

    A pattern without a slash matches a file name at any depth (``*.sql``).
    """
    return _compile(pattern).fullmatch(path) is not None


@lru_cache(maxsize=512)
def _compile(pattern: str) -> re.Pattern[str]:
    anchored = "/" in pattern.rstrip("/")
    pattern = pattern.strip("/")
    out = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = pattern.find("]", i + 1)
            if end == -1:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : end].replace("\\", "\\\\")
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = end
        else:
            out.append(re.escape(c))
        i += 1
    body = "".join(out)
    # A directory pattern covers everything below it.
    body = f"{body}(?:/.*)?"
    if not anchored:
        body = f"(?:.*/)?{body}"
    return re.compile(body)
