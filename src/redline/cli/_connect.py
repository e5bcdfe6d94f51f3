"""Reaching the repository's daemon from a command (starting it when needed).

Only the CLI reads the environment: the runtime directory for long socket
paths, the idle timeout, and the fault-injection point used by crash tests.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from redline.cli.boundary import SettingError
from redline.daemon.client import Client
from redline.daemon.lifecycle import (
    DEFAULT_IDLE_TIMEOUT,
    DaemonError,
    connect_or_start,
    files_for,
)
from redline.daemon.paths import DaemonFiles
from redline.engine.errors import RedlineError

if TYPE_CHECKING:
    from redline.settings.files import Committed


def runtime_dir() -> Path | None:
    value = os.environ.get("XDG_RUNTIME_DIR")
    return Path(value) if value else None


def idle_timeout(option: float | None) -> float:
    if option is not None:
        return option
    value = os.environ.get("REDLINE_IDLE_TIMEOUT")
    try:
        return float(value) if value else DEFAULT_IDLE_TIMEOUT
    except ValueError:
        raise SettingError(
            f"REDLINE_IDLE_TIMEOUT={value!r} is not a number of seconds; set it to one "
            f"(the default is {DEFAULT_IDLE_TIMEOUT:.0f}) or unset it"
        ) from None


def daemon_files(repo: Path) -> DaemonFiles:
    """The daemon's files for the repository around ``repo`` (NoRepository when none)."""
    return files_for(repo, runtime_dir())


def daemon_client(repo: Path, idle: float | None = None) -> Client:
    """A client of the repository's daemon, started when none runs (DaemonError when it
    cannot be, RpcError when it will not talk to this client)."""
    return daemon_client_started(repo, idle)[0]


def daemon_client_started(repo: Path, idle: float | None = None) -> tuple[Client, bool]:
    """A client of the repository's daemon, and whether this command started the daemon."""
    files = daemon_files(repo)
    timeout = idle_timeout(idle)
    try:
        return connect_or_start(files, repo, timeout, os.environ)
    except OSError as exc:
        raise DaemonError(
            f"cannot reach the redline daemon on {files.socket}: {exc.strerror or exc}; "
            "`redline daemon status` shows whether it runs (its log is "
            f"{files.log}); `redline daemon stop`, then retry, restarts it"
        ) from None


def mainline_settings(repo: Path, session: str | None) -> Committed:
    """The repository's settings files as the session's main line has them committed
    (never the session's worktree, where the agent could change them)."""
    from redline.engine.policy import SETTINGS_FILES
    from redline.gitops.committed import committed_files, mainline_rev
    from redline.settings.files import Committed

    try:
        common = daemon_files(repo).common
    except RedlineError:  # not a repository: the runner says so for every request
        return Committed({}, "")
    rev, where = mainline_rev(common, session)
    return Committed(committed_files(common, rev, SETTINGS_FILES), where)
