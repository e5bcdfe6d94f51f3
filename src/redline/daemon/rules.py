"""The ``[permission]`` rules that govern a daemon session's requests.

The daemon judges every ``apply`` itself (tools.permissions.verdict), so no
socket client skips the rules. They are read as ``redline apply --session``
reads them: the user's config file (the one of the environment the daemon
started in) and the repository's settings files as the session's main line has
them committed (gitops.committed.governing_rev) — never the session's worktree,
where the agent works. Read through the daemon's own repository handle, and read
again only when that commit or the user's file changes.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pygit2

from redline.engine.policy import SETTINGS_FILES
from redline.gitops.committed import governing_rev
from redline.gitops.session import Session
from redline.settings.files import Committed
from redline.settings.tools import load_config
from redline.tools.permissions import Permissions
from redline.userdirs import user_config_file

_Key = tuple[str, str | None, tuple[int, int, int] | None]


class SessionRules:
    """``rules(session)``: the permissions for ``session``'s requests, paths relative to its
    worktree (ConfigError when a settings file cannot be used)."""

    def __init__(self, repo: pygit2.Repository, user_file: Path | None = None) -> None:
        self.repo = repo
        self.user_file = user_file or user_config_file()  # fixed when the daemon starts
        self._read: dict[str, tuple[_Key, Permissions]] = {}

    def __call__(self, session: Session) -> Permissions:
        rev, where = governing_rev(session.origin, session.base)
        commit = self._commit(rev)
        key = (where, str(commit.id) if commit is not None else None, self._stat())
        kept = self._read.get(session.name)
        if kept is not None and kept[0] == key:
            return kept[1]
        files = _files(self.repo, commit)
        config = load_config(Path(session.worktree), Committed(files, where), self.user_file)
        permissions = replace(config.permissions, root=session.worktree)
        self._read[session.name] = (key, permissions)
        return permissions

    def forget(self, name: str) -> None:
        self._read.pop(name, None)

    def _commit(self, rev: str) -> pygit2.Commit | None:
        try:
            return self.repo.revparse_single(rev).peel(pygit2.Commit)
        except (KeyError, ValueError, pygit2.GitError):
            return None  # not there (yet): no repository settings, as the CLI reads it

    def _stat(self) -> tuple[int, int, int] | None:
        try:
            stat = os.stat(self.user_file)
        except OSError:
            return None
        return (stat.st_mtime_ns, stat.st_size, stat.st_ino)


def _files(repo: pygit2.Repository, commit: pygit2.Commit | None) -> dict[str, bytes | None]:
    found: dict[str, bytes | None] = dict.fromkeys(SETTINGS_FILES)
    if commit is None:
        return found
    for path in SETTINGS_FILES:
        try:
            entry = commit.tree[path]
        except KeyError:
            continue
        blob = repo.get(entry.id)
        if isinstance(blob, pygit2.Blob):
            found[path] = blob.data
    return found
