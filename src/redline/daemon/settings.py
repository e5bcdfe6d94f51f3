"""The settings that govern a daemon session's requests: its guard policy and its
``[permission]`` rules, from one reading of the main line's committed files.

The daemon judges every ``apply`` itself (tools.permissions.verdict), so no
socket client skips the rules. Git mode takes both from the committed main line
(gitops.committed.governing_rev for the permissions; hooks.mainline for the
policy, which joins the session's base and its origin's tip) — never from the
session's worktree, where the agent works — and the user's config file (the one
of the environment the daemon started in) adds its rules, whose deny the
repository's file never lifts (settings.tools.load_config).

The settings files of a commit are read once, by the ids of their blobs, and
what they say is parsed once per set of blob ids (settings.files: one ``find``,
one ``parse``) and handed to both: a main-line commit that leaves the settings
alone costs no new parse, and the policy and the permissions can never be read
from two different versions of one file.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from pathlib import Path
from typing import Generic, TypeVar

import pygit2

from redline.engine.policy import SETTINGS_FILES, Policy, default_rules
from redline.engine.records import replace
from redline.gitops.committed import governing_rev
from redline.gitops.session import Session
from redline.settings.files import Committed
from redline.settings.policy import policy_from_files
from redline.settings.tools import Config, load_config
from redline.tools.permissions import Permissions
from redline.userdirs import user_config_file

Blobs = tuple[pygit2.Oid | None, ...]  # the settings files' blob ids, in SETTINGS_FILES order
_Stat = tuple[int, int, int] | None
_KEPT = 32  # readings kept (each a few small parsed files)
K = TypeVar("K")
V = TypeVar("V")


class _Kept(Generic[K, V]):
    """The last few values by key (oldest dropped first)."""

    def __init__(self) -> None:
        self._items: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> V:
        self._items[key] = value
        while len(self._items) > _KEPT:
            self._items.popitem(last=False)
        return value


class CommittedSettings:
    """The repository's committed settings for the daemon: :meth:`policy` of a tree (what
    hooks.mainline joins) and :meth:`permissions` of a session (ConfigError or PolicyError
    when a settings file cannot be used)."""

    def __init__(self, repo: pygit2.Repository, user_file: Path | None = None) -> None:
        self.repo = repo
        self.user_file = user_file or user_config_file()  # fixed when the daemon starts
        self._policies: _Kept[Blobs, Policy] = _Kept()
        self._configs: _Kept[tuple[Blobs, str, _Stat], Config] = _Kept()
        self._sessions: dict[str, tuple[tuple[Blobs, str, _Stat, str], Permissions]] = {}

    def policy(self, tree: pygit2.Tree | None) -> Policy:
        """The guard policy committed in ``tree`` (defaults when it has none)."""
        if tree is None:
            return Policy(rules=default_rules())
        blobs = self.blobs(tree)
        kept = self._policies.get(blobs)
        if kept is not None:
            return kept
        return self._policies.put(blobs, policy_from_files(self._committed(blobs, "").read))

    def permissions(self, session: Session) -> Permissions:
        """The permissions for ``session``'s requests, paths relative to its worktree: the
        user's file and the settings committed where the session came from."""
        rev, where = governing_rev(session.origin, session.base)
        blobs = self.blobs(_tree(self.repo, rev))
        key = (blobs, where, _stat(self.user_file), session.worktree)
        kept = self._sessions.get(session.name)
        if kept is not None and kept[0] == key:
            return kept[1]
        config_key = (blobs, where, key[2])
        config = self._configs.get(config_key)
        if config is None:
            committed = self._committed(blobs, where)
            config = load_config(Path(session.worktree), committed, self.user_file)
            self._configs.put(config_key, config)
        permissions = replace(config.permissions, root=session.worktree)
        self._sessions[session.name] = (key, permissions)
        return permissions

    def forget(self, name: str) -> None:
        self._sessions.pop(name, None)

    def blobs(self, tree: pygit2.Tree | None) -> Blobs:
        """The ids of the settings files' blobs in ``tree`` (None: not there)."""
        found: list[pygit2.Oid | None] = []
        for path in SETTINGS_FILES:
            try:
                entry = tree[path] if tree is not None else None
            except KeyError:
                entry = None
            found.append(entry.id if entry is not None and entry.type_str == "blob" else None)
        return tuple(found)

    def _committed(self, blobs: Blobs, where: str) -> Committed:
        files: dict[str, bytes | None] = {}
        for path, oid in zip(SETTINGS_FILES, blobs, strict=True):
            blob = self.repo.get(oid) if oid is not None else None
            files[path] = bytes(blob.data) if isinstance(blob, pygit2.Blob) else None
        return Committed(files, where)


def _tree(repo: pygit2.Repository, rev: str) -> pygit2.Tree | None:
    try:
        return repo.revparse_single(rev).peel(pygit2.Commit).tree
    except (KeyError, ValueError, pygit2.GitError):
        return None  # not there (yet): no repository settings, as the CLI reads it


def _stat(path: Path) -> _Stat:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return (stat.st_mtime_ns, stat.st_size, stat.st_ino)
