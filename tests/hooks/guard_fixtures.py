"""Real repositories with flagged redline edits, for the guard tests.

A user repository is built with the ``git`` binary (identity in its config, as
pygit2 reads it there); edits come from the in-process git-mode layer
(:class:`SessionApplier` with the policy committed in the session's tree), so
no daemon is needed. ``redline`` commands run in this process (``support.cli``,
with the environment and working folder a subprocess would have); the hooks
git runs start ``python -m redline`` as they do for users. Everything inherits
the hermetic environment of ``tests/conftest.py`` (empty HOME, no caller GIT_*,
pinned identity).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gitmode_fixtures import git, make_repo
from redline.engine.edit import EditItem, EditRequest
from redline.engine.patch import PatchRequest
from redline.gitops.apply import PolicyReading, SessionApplier
from redline.gitops.repo import main_repository
from redline.gitops.session import open_session
from redline.hooks import ledger
from redline.hooks.mainline import Mainline
from redline.settings.files import settings_table
from redline.settings.policy import policy_from_files
from support import cli as inproc

REDLINE = [sys.executable, "-m", "redline"]
REVIEWER = "Repo User <repo-user@example.com>"  # the identity make_repo configures

MIGRATION = "migrations/001_users.sql"
MIGRATION_TEXT = (
    "CREATE TABLE users (\n"
    "    id INTEGER PRIMARY KEY,\n"
    "    name TEXT NOT NULL,\n"
    "    email TEXT\n"
    ");\n"
)
# One character off in a line the edit keeps ("KY"): a fuzzy match of lines 2-4.
FUZZY_OLD = "    id INTEGER PRIMARY KY,\n    name TEXT NOT NULL,\n    email TEXT\n"
FUZZY_NEW = (
    "    id INTEGER PRIMARY KY,\n"
    "    name TEXT NOT NULL,\n"
    "    email TEXT UNIQUE,\n"
    "    created_at TIMESTAMP\n"
)
EXACT_OLD = "    email TEXT\n"
EXACT_NEW = "    email TEXT UNIQUE,\n    created_at TIMESTAMP\n"
INSERTED = ("    email TEXT UNIQUE,", "    created_at TIMESTAMP")

APP = "src/app.py"
APP_TEXT = (
    "def main():\n"
    "    config = load_config()\n"
    "    server = make_server(config)\n"
    "    server.serve_forever()\n"
)
APP_FUZZY_OLD = (
    "    config = load_confg()\n    server = make_server(config)\n    server.serve_forever()\n"
)
APP_FUZZY_NEW = (
    "    config = load_confg()\n"
    "    server = make_server(config, port=8080)\n"
    "    server.serve_forever()\n"
)

POLICY = """\
[guard]
action = "review"

[[guard.protect]]
paths = ["migrations/**"]
require = "exact"
"""
MIGRATION_RULE = "guard.protect[1] (migrations/**)"
DEFAULT_RULE = "default (guard files: policy, hooks, CI)"


def user_repo(path: Path, policy: str | None = POLICY, **extra: str) -> Path:
    """A repository on main with a migration, an app module and (optionally) a policy."""
    files: dict[str, str | bytes] = {MIGRATION: MIGRATION_TEXT, APP: APP_TEXT, **extra}
    if policy is not None:
        files[".redline.toml"] = policy
    return make_repo(path, files)


def redline(
    cwd: Path,
    *args: str,
    input: str | None = None,
    check: bool | None = None,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``redline ARGS`` in ``cwd``, in this process with this process's environment (or
    ``env``), as a subprocess would run (``support.cli``); ``check`` asserts success (or
    failure)."""
    proc = inproc.run(args, input=input, env=env, cwd=cwd)
    if check is not None:
        ok = proc.returncode == 0
        assert ok == check, f"redline {' '.join(args)} exited {proc.returncode}:\n{proc.stderr}"
    return proc


def install_hooks(repo: Path, *extra: str) -> str:
    return redline(repo, "hooks", "install", "--repo", str(repo), *extra, check=True).stdout


def run_git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """git, without raising: for commands a hook may refuse."""
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def head(repo: Path, ref: str = "HEAD") -> str:
    return git(repo, "rev-parse", "--verify", ref).strip()


@dataclass
class Agent:
    """A redline session on a user repository, driven in-process."""

    applier: SessionApplier
    name: str

    @property
    def branch(self) -> str:
        return f"redline/{self.name}"

    @property
    def worktree(self) -> Path:
        return Path(self.applier.session.worktree)

    def edit(self, path: str, old: str, new: str) -> dict[str, Any]:
        request = EditRequest(path, (EditItem(old, new),))
        return self.applier.apply(request).to_dict()

    def patch(self, body: str) -> dict[str, Any]:
        request = PatchRequest(f"*** Begin Patch\n{body}*** End Patch\n")
        return self.applier.apply(request).to_dict()


def agent(repo: Path, name: str = "s") -> Agent:
    git_repo, layout = main_repository(repo)
    session = open_session(git_repo, layout, name, None)
    applier = SessionApplier(  # as the daemon makes it (daemon.service)
        git_repo,
        layout,
        session,
        reading=PolicyReading(policy_from_files, settings_table),
        mainline=Mainline(git_repo, session, ledger.load),
    )
    return Agent(applier, name)


@dataclass(frozen=True)
class Flagged:
    """A user repository whose session branch carries one flagged edit."""

    repo: Path
    base: str  # main before the edit
    branch: str
    edit: str
    commit: str  # the edit's commit on the session branch
    match_type: str
    confidence: float
    result: dict[str, Any]


def flagged_edit(
    repo: Path,
    path: str = MIGRATION,
    old: str = FUZZY_OLD,
    new: str = FUZZY_NEW,
    name: str = "s",
) -> Flagged:
    """Apply a tolerant edit in a new session and check that it was flagged."""
    base = head(repo)
    result = agent(repo, name).edit(path, old, new)
    assert result["status"] == "applied", result
    assert result["flags"], f"the edit was not flagged: {result}"
    [commit] = result["commits"]
    return Flagged(
        repo,
        base,
        f"redline/{name}",
        commit["edit"],
        commit["commit"],
        result["match_type"],
        result["confidence"],
        result,
    )


def refusal(proc: subprocess.CompletedProcess[str]) -> str:
    """The guard's refusal from a git command it stopped (asserting that it did)."""
    assert proc.returncode != 0, f"git was not refused:\n{proc.stdout}{proc.stderr}"
    assert "redline guard: refused" in proc.stderr, proc.stderr
    return proc.stderr


def pre_commit() -> list[str]:
    """How to run pre-commit: this interpreter's (the dev extras), or the ``pre-commit``
    script on PATH. The module comes first: a script found through a version manager's
    shim (pyenv) would put that manager's folders first on the hooks' PATH."""
    if importlib.util.find_spec("pre_commit") is not None:
        return [sys.executable, "-m", "pre_commit"]
    found = shutil.which("pre-commit")
    if found is not None:
        return [found]
    pytest.skip(
        "pre-commit is not installed; install the dev extras (pip install -e '.[dev]') "
        "to run these tests — they never install it themselves"
    )


def redline_on_path(folder: Path) -> str:
    """A PATH on which ``redline`` runs this tree (a shim in ``folder``, made here) before
    anything else: what a ``language: system`` hook's ``entry: redline guard`` finds."""
    folder.mkdir(parents=True, exist_ok=True)
    shim = folder / "redline"
    shim.write_text(f'#!/bin/sh\nexec {sys.executable} -m redline "$@"\n')
    shim.chmod(0o755)
    return f"{folder}{os.pathsep}{os.environ['PATH']}"


def pre_commit_caches(root: Path) -> dict[str, str]:
    """Where pre-commit keeps its store and caches, under ``root`` (HOME stays empty).

    pre-commit asks ``cargo --version`` while loading its languages; where cargo is
    a rustup proxy, that would create ``$HOME/.rustup`` — so rustup gets a home here.
    """
    return {
        "PRE_COMMIT_HOME": str(root / "pre-commit"),
        "XDG_CACHE_HOME": str(root / "cache"),
        "XDG_DATA_HOME": str(root / "data"),
        "RUSTUP_HOME": str(root / "rustup"),
        "CARGO_HOME": str(root / "cargo"),
    }
