"""Whether a new guard policy lets through an edit the old one stopped. Pure: no I/O.

An agent's change of the policy is compared as parsed rules, before and after,
never as lines of text: two lines swapped between rules (``src/auth/**`` now
takes ``min_confidence = 0.5``, ``docs/**`` ``require = "exact"``) change no
line's text and still relax the policy. :func:`weakenings` names every way the
new policy passes an edit the old one flagged or refused.

What a policy decides (:meth:`~redline.engine.policy.Policy.check`) is a
function of the edit's path, match type and confidence. Every rule covering the
path applies (their order does not matter: no rule "wins" over another), so at
one path a policy's rules join into one demand: the match types every
``require`` there allows, the highest ``min_confidence``, and whether every
edit there needs a person (the guard's own files). The old policy is weakened
exactly when, at some path, it flags some (match type, confidence) the new one
passes; that happens exactly when some rule of the old policy is not implied
there by the new one's rules. Here each old rule is compared, glob by glob, with
the new rules that cover *every* path of that glob (:func:`glob_covers`, which
errs only towards "not covered"): if those alone demand at least as much,
nothing under the glob got weaker; otherwise a weakening is reported. So a real
weakening is never missed; a change the comparison cannot prove harmless (a
rule re-scoped to a glob it cannot relate to the old one) is reported too, and
a person looks at it.

The comparison also reports ``action = "reject"`` turned into ``"review"`` and
a ``[[validate]]`` glob no longer covered.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from redline.engine.policy import MATCH_TYPES, Policy, Rule, glob_matches

_MATCH_ALL = frozenset({"*", "**", "**/*", "/*", "/**", "**/**"})
_GLOB_CHARS = frozenset("*?[\\")


@dataclass(frozen=True)
class _Glob:
    """A gitignore-style glob taken apart: its components, whether it is anchored at
    the root, and whether it names folders only (a trailing slash)."""

    parts: tuple[str, ...]
    anchored: bool
    folders_only: bool

    @classmethod
    def parse(cls, pattern: str) -> _Glob:
        folders_only = pattern.endswith("/")
        body = pattern.rstrip("/")
        anchored = "/" in body  # a leading slash, or one in the middle
        parts = tuple(part for part in body.split("/") if part)
        return cls(parts, anchored, folders_only)


def _literal(part: str) -> bool:
    return not (_GLOB_CHARS & set(part))


@lru_cache(maxsize=4096)
def glob_covers(outer: str, inner: str) -> bool:
    """Whether every path ``inner`` matches is matched by ``outer`` too.

    Sound, not complete: True only when it is certain (the same glob, a glob
    matching everything, a folder holding every path of ``inner``, or a name
    every path of ``inner`` passes through); False whenever in doubt.
    """
    if outer == inner or outer in _MATCH_ALL:
        return True
    out, inn = _Glob.parse(outer), _Glob.parse(inner)
    if not out.parts or not inn.parts:
        return False
    if out.anchored:
        return _under_folder(out, inn)
    if len(out.parts) != 1:
        return False
    return _through_name(out.parts[0], out.folders_only, inn)


def _under_folder(out: _Glob, inn: _Glob) -> bool:
    """``outer`` anchored: ``L``, ``L/`` or ``L/**`` for a literal folder path ``L``
    covers the anchored globs whose first components spell ``L`` and go below it."""
    parts = out.parts
    below_only = parts[-1] == "**" or out.folders_only  # ``L/**`` and ``L/`` skip L itself
    if parts[-1] == "**":
        parts = parts[:-1]
    if not parts or not all(_literal(p) for p in parts) or not inn.anchored:
        return False
    if inn.parts[: len(parts)] != parts:
        return False
    deeper = len(inn.parts) > len(parts) or (inn.folders_only and not out.folders_only)
    return deeper or (not below_only and len(inn.parts) == len(parts))


def _through_name(name: str, folders_only: bool, inn: _Glob) -> bool:
    """``outer`` a single name glob (``docs``, ``*.sql``), matched at any depth: it covers
    ``inner`` when every path of ``inner`` has a component it matches — a literal
    component of ``inner`` (a folder one, when ``outer`` names folders only)."""
    for i, part in enumerate(inn.parts):
        last = i == len(inn.parts) - 1 and not inn.folders_only
        if folders_only and last:
            continue
        if _literal(part) and glob_matches(name, part):
            return True
    return False


@dataclass(frozen=True)
class _Demand:
    """What the rules covering a path demand together."""

    review_all: bool
    allowed: frozenset[str]  # the match types every ``require`` allows
    minimum: float  # the highest min_confidence (0: none)


def _demand(rules: list[Rule]) -> _Demand:
    allowed = frozenset(MATCH_TYPES)
    minimum = 0.0
    for rule in rules:
        if rule.require is not None:
            allowed &= rule.require
        if rule.min_confidence is not None:
            minimum = max(minimum, rule.min_confidence)
    return _Demand(any(r.review_all for r in rules), allowed, minimum)


def _passes_somewhere(match_type: str, minimum: float) -> bool:
    """Whether some confidence in [0, 1] passes ``minimum`` for ``match_type`` (an exact
    match at full confidence is never judged, so an exact one must pass below 1)."""
    return minimum < 1.0 if match_type == "exact" else minimum <= 1.0


def weakenings(old: Policy, new: Policy) -> list[str]:
    """Every way ``new`` lets through what ``old`` stopped, in words (empty: none)."""
    found: list[str] = []
    if old.action == "reject" and new.action != "reject":
        found.append(
            'guard.action "reject" became "review": an edit breaking a rule would be '
            "applied (flagged) instead of refused"
        )
    if old.approvals == "signed" and new.approvals != "signed":
        found.append(
            'guard.approvals "signed" was dropped: an approval nobody signed (any name, '
            "written by anyone with push access) would clear a flagged edit"
        )
    for rule in old.rules:
        for pattern in rule.paths:
            covering = [r for r in new.rules if _covers(r, pattern)]
            found += _rule_weakened(rule, pattern, _demand(covering))
    for pattern in old.validate:
        if not any(glob_covers(g, pattern) for g in new.validate):
            found.append(f"[[validate]] {pattern}: files there would no longer be validated")
    return list(dict.fromkeys(found))


def _covers(rule: Rule, pattern: str) -> bool:
    return pattern in rule.paths or any(glob_covers(g, pattern) for g in rule.paths)


def _rule_weakened(rule: Rule, pattern: str, now: _Demand) -> list[str]:
    if now.review_all:
        return []
    if rule.review_all:
        return [
            f"{pattern} ({rule.name}): every agent change there needed a person's approval; "
            "the new policy no longer says so"
        ]
    out = []
    if rule.require is not None:
        freed = sorted(t for t in now.allowed - rule.require if _passes_somewhere(t, now.minimum))
        if freed:
            required = ", ".join(sorted(rule.require))
            out.append(
                f"{pattern} ({rule.name}): required match type {required}; the new policy "
                f"also takes {', '.join(freed)}"
            )
    if (
        rule.min_confidence is not None
        and now.minimum < rule.min_confidence
        and any(_passes_somewhere(t, now.minimum) for t in now.allowed)
    ):
        out.append(
            f"{pattern} ({rule.name}): required confidence {rule.min_confidence:g}; the new "
            f"policy takes {now.minimum:g}"
        )
    return out
