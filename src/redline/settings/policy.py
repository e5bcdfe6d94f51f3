"""Reading and validating the guard policy (``.redline.toml`` or ``[tool.redline]``).

Validated by hand rather than with pydantic: ``redline guard`` runs in every
commit's hook, and its start-up time is part of every commit. pygit2 loads only
to read a policy from a commit: embedded ``redline apply`` reads the file on disk.

The file holds ``[guard]`` (the protected paths, and ``approvals = "signed"``
when only signed approvals count) and ``[[validate]]`` (the
paths whose files must still parse after an edit)::

    [[validate]]
    paths = ["**/*.py", "**/*.json"]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from redline.engine.errors import SettingsError
from redline.engine.policy import (
    ACTIONS,
    APPROVALS,
    MATCH_TYPES,
    POLICY_FILE,
    POLICY_SECTIONS,
    PYPROJECT,
    Policy,
    Rule,
    default_rules,
    glob_problem,
)
from redline.settings import files
from redline.settings.files import Reader

if TYPE_CHECKING:
    import pygit2

_GUARD_KEYS = {"action", "protect", "files", "approvals"}
_RULE_KEYS = {"paths", "require", "min_confidence"}
_VALIDATE_KEYS = {"paths"}
# Sections of the same file that redline.settings.tools reads: the guard leaves them alone.
OTHER_SECTIONS = ("permission", "compat", "agent")


class PolicyError(SettingsError):
    """The guard policy in ``source`` cannot be used (see :class:`SettingsError`)."""

    what = "guard policy"
    see = "the README's Guard section for the format"


def policy_from_tree(repo: pygit2.Repository, tree: pygit2.Tree | None) -> Policy:
    """The policy committed in ``tree`` (defaults when it has none)."""
    if tree is None:
        return Policy(rules=default_rules())
    return policy_from_files(lambda path: _blob_data(repo, tree, path))


def policy_from_files(read: Reader) -> Policy:
    """The policy in the files ``read`` gives (defaults when there is none): a
    ``.redline.toml``, else the ``[tool.redline]`` table of ``pyproject.toml``."""
    return _policy_of(files.find(read, mentioning=False))


def policy_in_directory(root: Path, disk: Reader | None = None) -> Policy:
    """The policy in the files under ``root`` (defaults when it has none): the embedded
    mode's, read from disk (``disk``: how, default :func:`~redline.settings.files.folder_reader`).
    A ``pyproject.toml`` that does not name redline is not parsed, nor one that cannot be
    read."""
    disk = disk or files.folder_reader(root)

    def read(name: str) -> bytes | None:
        try:
            return disk(name)
        except OSError as exc:
            if name != POLICY_FILE:
                return None
            raise PolicyError(POLICY_FILE, "file", f"cannot be read ({exc.strerror})") from None

    return _policy_of(files.find(read))


def _policy_of(found: files.Found | None) -> Policy:
    if found is None:
        return Policy(rules=default_rules())
    if found.whole:
        return parse_policy(found.text(), POLICY_FILE)
    section = files.section(files.parse(found.text(), PYPROJECT, PolicyError))
    if section is not None:
        return _policy(section, f"{PYPROJECT} [tool.redline]", extra=(PYPROJECT,))
    return Policy(rules=default_rules())


def stricter_policy(
    repo: pygit2.Repository,
    sides: Sequence[tuple[pygit2.Tree | None, str]],
    policy_of: Callable[[pygit2.Tree | None], Policy] | None = None,
) -> Policy:
    """The policies committed in several trees, joined: every rule of each applies.

    ``sides`` are (tree, where) pairs; the first readable policy leads and the
    rules only another has are named with its ``where`` ("before the push of
    …"). So a change that takes a rule out of the policy is still judged by it:
    the policy can be made stricter by a commit, never weaker, until that
    commit is the base the next change starts from. A side whose policy does not
    parse is left out; PolicyError (the first) when none parses. ``policy_of`` reads
    a tree's policy (default :func:`policy_from_tree`; the daemon's is cached).
    """
    joined: Policy | None = None
    first_error: PolicyError | None = None
    for tree, where in sides:
        try:
            policy = policy_of(tree) if policy_of is not None else policy_from_tree(repo, tree)
        except PolicyError as exc:
            first_error = first_error or exc
            continue
        joined = policy if joined is None else joined.stricter(policy, where)
    if joined is None:
        assert first_error is not None
        raise first_error
    return joined


def parse_policy(text: str, source: str) -> Policy:
    return _policy(files.parse(text, source, PolicyError), source)


def _blob_data(repo: pygit2.Repository, tree: pygit2.Tree, path: str) -> bytes | None:
    import pygit2

    try:
        obj = repo[tree[path].id]
    except KeyError:
        return None
    if not isinstance(obj, pygit2.Blob):
        return None
    return bytes(obj.data)


def _policy(data: Any, source: str, extra: tuple[str, ...] = ()) -> Policy:
    if not isinstance(data, dict):
        raise PolicyError(source, "top level", "must be a table")
    unknown = set(data) - {*POLICY_SECTIONS, *OTHER_SECTIONS}
    if unknown:
        raise PolicyError(
            source,
            ", ".join(sorted(unknown)),
            "unknown key; use [guard], [[validate]], [permission], [compat] or [agent]",
        )
    guard = data.get("guard", {})
    if not isinstance(guard, dict):
        raise PolicyError(source, "guard", "must be a table")
    unknown = set(guard) - _GUARD_KEYS
    if unknown:
        raise PolicyError(
            source,
            "guard." + sorted(unknown)[0],
            "unknown key; use action, approvals, files and [[guard.protect]]",
        )
    action = guard.get("action", "review")
    if action not in ACTIONS:
        raise PolicyError(
            source, "guard.action", f"must be one of {', '.join(ACTIONS)} (got {action!r})"
        )
    approvals = guard.get("approvals", "any")
    if approvals not in APPROVALS:
        raise PolicyError(
            source,
            "guard.approvals",
            f"must be one of {', '.join(APPROVALS)} (got {approvals!r})",
        )
    raw_rules = guard.get("protect", [])
    if not isinstance(raw_rules, list):
        raise PolicyError(source, "guard.protect", "must be an array of tables ([[guard.protect]])")
    rules = [_rule(raw, f"guard.protect[{i}]", source) for i, raw in enumerate(raw_rules, start=1)]
    validate = _validate(data.get("validate", []), source)
    files = tuple(_paths(guard["files"], "guard.files", source)) if "files" in guard else ()
    return Policy(action, (*default_rules(extra, files), *rules), source, validate, approvals)


def _validate(raw: Any, source: str) -> tuple[str, ...]:
    """The globs of ``[[validate]]`` tables (engine.validate)."""
    if not isinstance(raw, list):
        raise PolicyError(
            source, "validate", 'must be an array of tables: [[validate]] paths = ["**/*.py"]'
        )
    globs: list[str] = []
    for i, entry in enumerate(raw, start=1):
        where = f"validate[{i}]"
        if not isinstance(entry, dict):
            raise PolicyError(source, where, 'must be a table with paths, e.g. paths = ["**/*.py"]')
        unknown = set(entry) - _VALIDATE_KEYS
        if unknown:
            raise PolicyError(source, f"{where}.{sorted(unknown)[0]}", "unknown key; use paths")
        globs += _paths(entry.get("paths"), f"{where}.paths", source)
    return tuple(dict.fromkeys(globs))


def _paths(paths: Any, where: str, source: str) -> list[str]:
    if isinstance(paths, str):
        paths = [paths]
    if not paths or not isinstance(paths, list) or not all(isinstance(p, str) and p for p in paths):
        raise PolicyError(source, where, "must be a glob or a non-empty list of globs")
    for pattern in paths:
        problem = glob_problem(pattern)
        if problem is not None:
            raise PolicyError(source, where, f"{pattern!r}: {problem}")
    return paths


def _rule(raw: Any, where: str, source: str) -> Rule:
    if not isinstance(raw, dict):
        raise PolicyError(source, where, "must be a table with paths and require/min_confidence")
    unknown = set(raw) - _RULE_KEYS
    if unknown:
        raise PolicyError(
            source,
            f"{where}.{sorted(unknown)[0]}",
            "unknown key; use paths, require, min_confidence",
        )
    paths = _paths(raw.get("paths"), f"{where}.paths", source)
    require = raw.get("require")
    allowed: frozenset[str] | None = None
    if require is not None:
        names = [require] if isinstance(require, str) else require
        if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
            raise PolicyError(source, f"{where}.require", "must be a match type or a list of them")
        bad = [n for n in names if n not in MATCH_TYPES]
        if bad:
            raise PolicyError(
                source,
                f"{where}.require",
                f"unknown match type {bad[0]!r}; use {', '.join(MATCH_TYPES)}",
            )
        allowed = frozenset(names)
    minimum = raw.get("min_confidence")
    if minimum is not None and (
        isinstance(minimum, bool) or not isinstance(minimum, (int, float)) or not 0 <= minimum <= 1
    ):
        raise PolicyError(
            source, f"{where}.min_confidence", f"must be a number from 0 to 1 (got {minimum!r})"
        )
    if allowed is None and minimum is None:
        raise PolicyError(source, where, "says neither require nor min_confidence")
    name = f"{where} ({', '.join(paths)})"
    return Rule(name, tuple(paths), allowed, float(minimum) if minimum is not None else None)
