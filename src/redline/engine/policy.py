"""Protected paths: which edits need a person's review. Pure: no files are read here.

A policy is a list of rules; each protects path globs and says what an edit
there must show: an allowed match type (``require``) and/or a minimum
confidence. An edit breaking a rule is flagged (action ``review``) or refused
(action ``reject``). Exact edits satisfy every ``require``; unprotected paths
always pass.

``approvals = "signed"`` makes only approvals signed by a key of the
repository's allowed-signers file (:data:`ALLOWED_SIGNERS`) count; joined with
a policy that says so, a policy says so too.

One rule is not the policy's to relax: every agent edit to the guard's own
files — the policy file, the hook configuration and the CI definitions
(:data:`DEFAULT_PROTECTED`, and whatever ``[guard] files`` adds) — is flagged
for a person, whatever its match type, and so are adding, deleting, moving or
overwriting them. An exact edit that unprotects a path is
still a change of the gate. And the policy an edit is judged by is never one
that edit (or another unapproved one) wrote: callers combine the policy a
person stands behind with the current one (:meth:`Policy.stricter`), so a
change can add rules but not take them away.

A policy also names the paths whose files must still parse after an edit
(``[[validate]]``, engine.validate); joined policies validate the paths of both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import TYPE_CHECKING, Protocol, TypeVar

from redline.engine.confidence import shown_confidence
from redline.engine.match_types import MATCH_TYPES as ALL_MATCH_TYPES
from redline.engine.records import field, record, replace

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec

ACTIONS = ("review", "reject")
# Which approvals clear a flagged edit: any recorded one, or only those signed by a key
# the repository's allowed-signers file lists (hooks.signed).
APPROVALS = ("any", "signed")
# Every match type a policy may name (engine.match_types: one table of every tier).
MATCH_TYPES: tuple[str, ...] = ALL_MATCH_TYPES
POLICY_FILE = ".redline.toml"
# The policy file's sections the guard reads (settings.policy); settings.tools reads the others.
POLICY_SECTIONS = ("guard", "validate")
PYPROJECT = "pyproject.toml"  # its [tool.redline] table, when there is no .redline.toml
SETTINGS_FILES = (POLICY_FILE, PYPROJECT)  # the files that may hold redline's settings
# The flag of an agent change to redline's own settings (the policy, the permissions):
# found by comparing them parsed, before and after (engine.weakening names a weakening).
POLICY_CHANGE_RULE = "policy change"
# The guard's own files: editing them at all could quietly weaken the gate itself
# (its policy, the hooks that run it, the CI jobs that run it over a pull request),
# so every agent change there waits for a person, exact or not. A policy adds more
# with ``[guard] files``; no policy can take one away.
# The people whose signed approvals count where the policy says ``approvals = "signed"``
# (git's gpg.ssh.allowedSignersFile format): a guard file like the policy itself.
ALLOWED_SIGNERS = ".redline/allowed_signers"
POLICY_FILES = (POLICY_FILE, ALLOWED_SIGNERS)  # and PYPROJECT while it holds the policy
HOOK_FILES = (
    ".pre-commit-config.yaml",
    ".pre-commit-hooks.yaml",
    ".githooks/**",
    ".husky/**",
    "lefthook.yml",
    "lefthook.yaml",
    ".lefthook.yml",
    ".lefthook.yaml",
    "lefthook-local.yml",
    "lefthook-local.yaml",
    ".lefthook-local.yml",
    ".lefthook-local.yaml",
    ".lefthook/**",
    ".overcommit.yml",
)
CI_FILES = (
    ".github/workflows/**",
    ".github/actions/**",
    ".gitlab-ci.yml",
    ".gitlab-ci.yaml",
    ".gitlab/ci/**",
    ".circleci/**",
    ".travis.yml",
    "azure-pipelines.yml",
    "azure-pipelines.yaml",
    ".azure-pipelines/**",
    "bitbucket-pipelines.yml",
    "Jenkinsfile",
    ".buildkite/**",
    ".drone.yml",
    ".woodpecker.yml",
    ".woodpecker/**",
    "appveyor.yml",
    ".appveyor.yml",
    ".cirrus.yml",
    ".semaphore/**",
    ".gitea/workflows/**",
    ".forgejo/workflows/**",
    "codemagic.yaml",
)
DEFAULT_PROTECTED = (*POLICY_FILES, *HOOK_FILES, *CI_FILES)
DEFAULT_RULE = "default (guard files: policy, hooks, CI)"
GUARD_FILE_REASON = (
    "edits to the guard's own files (its policy, hook configuration and CI definitions) "
    "need a person's approval"
)


@record(frozen=True)
class Rule:
    """One rule of the policy: the paths it covers and what an agent's edit there needs."""

    name: str  # how messages refer to it, e.g. "guard.protect[1] (migrations/**)"
    paths: tuple[str, ...]
    require: frozenset[str] | None = None
    min_confidence: float | None = None
    # Every edit here needs a person, whatever its evidence (the guard's own files).
    review_all: bool = False

    def covers(self, path: str) -> bool:
        return _covers(self.paths, path)


@record(frozen=True)
class Violation:
    """An edit a rule flags: the rule, the path, and why."""

    rule: str
    path: str
    reason: str  # e.g. "match_type fuzzy is not one of: exact"


class Evidence(Protocol):
    """An operation as the policy judges it: where, and how its text was matched."""

    @property
    def path(self) -> str: ...
    @property
    def match_type(self) -> str | None: ...  # None: no text matched (add, delete, write)
    @property
    def confidence(self) -> float | None: ...


E = TypeVar("E", bound=Evidence)


@record(frozen=True)
class Policy:
    """The guard's policy: the rules that flag agent edits, the files whose edits must still
    parse, and which approvals count."""

    action: str = "review"
    rules: tuple[Rule, ...] = field(default_factory=tuple)
    source: str = "defaults"  # where it was read from, for messages
    validate: tuple[str, ...] = ()  # globs of the files whose edits must still parse
    approvals: str = "any"  # "signed": only approvals that verify clear a flagged edit

    def validates(self, path: str) -> bool:
        """Must an edit of ``path`` leave it parseable (engine.validate)?"""
        return any(glob_matches(pattern, path) for pattern in self.validate)

    def validated(self, asked: bool) -> Callable[[str], bool] | None:
        """Which paths a request's changes must leave parseable (engine.validate): every
        one when the request asks (``asked``), else those this policy names; None: none.
        The one place where the policy forces validation, for every tool and mode."""
        if asked:
            return _every_path
        return self.validates if self.validate else None

    def judge(self, operations: Iterable[E]) -> list[tuple[E, Violation]]:
        """Each rule each operation breaks (the edit's verdict: none means it passes).

        The daemon judges an edit with this when it is made, and the guard judges
        the same evidence again when it is committed or pushed.
        """
        return [
            (op, violation)
            for op in operations
            for violation in self.check(op.path, op.match_type, op.confidence or 0.0)
        ]

    def check(self, path: str, match_type: str | None, confidence: float) -> list[Violation]:
        """Every rule an edit at ``path`` with this evidence breaks (``match_type`` None:
        the operation matched no text — an add, a delete, a whole-file write)."""
        guarding = next((r for r in self.rules if r.review_all and r.covers(path)), None)
        found = [Violation(guarding.name, path, GUARD_FILE_REASON)] if guarding else []
        if match_type is None or (match_type == "exact" and confidence >= 1.0):
            return found
        for rule in self.rules:
            if rule.review_all or not rule.covers(path):
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
                        f"confidence {shown_confidence(confidence, 6)} is below the minimum "
                        f"{rule.min_confidence:g}",
                    )
                )
        return found

    def stricter(self, other: Policy, where: str) -> Policy:
        """This policy with ``other``'s rules added: an edit is judged by both.

        ``where`` says where ``other`` was read ("at the session's base"); a rule
        only ``other`` has is named with it, so a message can point at the policy
        it came from. The action is ``reject`` when either policy says so.
        """
        own = {_terms(rule) for rule in self.rules}
        added = tuple(
            replace(rule, name=f"{rule.name} of {other.source} {where}")
            for rule in other.rules
            if _terms(rule) not in own
        )
        validate = tuple(dict.fromkeys((*self.validate, *other.validate)))
        same_action = self.action == other.action or self.action == "reject"
        approvals = "signed" if "signed" in (self.approvals, other.approvals) else "any"
        if not added and same_action and validate == self.validate and approvals == self.approvals:
            return self
        action = "reject" if "reject" in (self.action, other.action) else self.action
        return Policy(action, (*self.rules, *added), self.source, validate, approvals)


def _terms(rule: Rule) -> tuple[object, ...]:
    """What a rule demands, whatever it is called."""
    return (rule.paths, rule.require, rule.min_confidence, rule.review_all)


def default_rules(extra: tuple[str, ...] = (), files: tuple[str, ...] = ()) -> tuple[Rule, ...]:
    """The rule no policy can remove: every edit to the guard's own files needs a person.

    ``extra``: more of the guard's files (``pyproject.toml`` when it holds the policy);
    ``files``: the ones the policy adds (``[guard] files``), a rule of their own.
    """
    rules = [Rule(DEFAULT_RULE, DEFAULT_PROTECTED + extra, review_all=True)]
    if files:
        rules.append(Rule(f"guard.files ({', '.join(files)})", files, review_all=True))
    return tuple(rules)


@lru_cache(maxsize=16384)
def _covers(patterns: tuple[str, ...], path: str) -> bool:
    """Whether a glob of ``patterns`` matches ``path`` (remembered: the guard asks again for
    the same paths, and the default rule alone has dozens of globs)."""
    return any(glob_matches(pattern, path) for pattern in patterns)


def glob_matches(pattern: str, path: str) -> bool:
    """gitignore-style globs, read by ``pathspec`` as git reads a ``.gitignore`` line.

    ``*`` stays within a path segment, ``**`` crosses segments; a pattern without
    a slash matches a name at any depth (``*.sql``), a leading slash anchors it at
    the root, and a pattern naming a folder covers everything below it. A glob
    without wildcards (most of the guard files') is matched by the same reading
    without compiling it: the guard runs in every commit's hook.
    """
    form = _literal_form(pattern)
    if form is None:
        return _compile(pattern).match_file(path)
    kind, text = form
    if kind == "name":  # ``Jenkinsfile``: that name at any depth, and all below it
        return text in path.split("/")
    if kind == "inside":  # ``.github/workflows/**``: everything below that folder
        return path.startswith(text + "/")
    return path == text or path.startswith(text + "/")  # ``src/auth``: it, and below


_WILDCARDS = frozenset("*?[\\")


@lru_cache(maxsize=512)
def _literal_form(pattern: str) -> tuple[str, str] | None:
    """How a glob without wildcards matches — ("name", n), ("inside", folder) or
    ("anchored", path) — or None for every other glob (pathspec reads those)."""
    if not pattern or pattern[0] in "!#" or pattern != pattern.strip() or pattern.endswith("/"):
        return None
    inside = pattern.endswith("/**")
    body = pattern[:-3] if inside else pattern
    if not body or _WILDCARDS & set(body) or "//" in body:
        return None
    if inside:
        return "inside", body.removeprefix("/")
    if "/" not in body:
        return "name", body
    anchored = body.removeprefix("/")
    return ("anchored", anchored) if anchored and not anchored.startswith("/") else None


def glob_problem(pattern: str) -> str | None:
    """What is wrong with ``pattern`` as a path glob of a rule, or None when it is usable.

    gitignore's ``!`` (negation) and ``#`` (comment) mean nothing in a list of
    rules and would otherwise match no path at all, quietly.
    """
    if not pattern.strip():
        return "a glob must not be empty"
    if pattern.startswith("!"):
        return "'!' (negation) is not supported here; add a later rule with another action"
    if pattern.startswith("#"):
        return "a glob starting with '#' is a comment in gitignore syntax; write '\\#' for a '#'"
    try:
        _compile(pattern)
    except ValueError as exc:  # pathspec's GitIgnorePatternError
        return f"not a valid gitignore-style glob ({exc})"
    return None


@lru_cache(maxsize=512)
def _compile(pattern: str) -> GitIgnoreSpec:
    # Imported here: the guard hook starts on every commit and a policy may have no globs.
    from pathspec import GitIgnoreSpec

    return GitIgnoreSpec.from_lines([pattern])


def _every_path(path: str) -> bool:
    return True
