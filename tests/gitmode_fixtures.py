"""Real git repositories and a redline CLI bound to one, for the git-mode tests.

Repositories are built with the ``git`` binary in ``tmp_path`` and read back
with it (``support.repos``). The CLI (:class:`Redline`) runs in this process
through click's runner (``support.cli``) with the explicit environment a
subprocess would get — an empty HOME, no inherited ``GIT_*`` variable, a short
``XDG_RUNTIME_DIR`` (the socket fallback for long paths) and a short
``REDLINE_IDLE_TIMEOUT`` — and the daemon it starts is the real server on a real
Unix socket, run on a thread of this process (``support.daemon``). Tests marked
``e2e`` get real ``python -m redline`` processes and a real daemon process.

The test modules import the helpers; ``tests/gitops/conftest.py`` and
``tests/daemon/conftest.py`` import the fixtures. The repository and environment
helpers are re-exported from ``support`` under their old names.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from support import cli as inproc
from support import daemon as daemons
from support.env import IDENTITY, IDLE_TIMEOUT, scrubbed_env, short_runtime_dir
from support.repos import (
    FILES,
    CommitRecord,
    assert_fsck_clean,
    branch_commits,
    changed_files,
    commit_records,
    digest_tree,
    git,
    git_wrapper,
    make_repo,
    note_of,
    porcelain,
    rev,
    trailer,
    write,
)

__all__ = [
    "FILES",
    "IDENTITY",
    "IDLE_TIMEOUT",
    "REDLINE",
    "CommitRecord",
    "GitMode",
    "Redline",
    "alive",
    "assert_fsck_clean",
    "branch_commits",
    "changed_files",
    "commit_records",
    "digest_tree",
    "git",
    "git_mode",
    "git_wrapper",
    "gm",
    "is_redline_daemon",
    "kill_daemon",
    "make_repo",
    "note_of",
    "porcelain",
    "rev",
    "scrubbed_env",
    "short_runtime_dir",
    "trailer",
    "wait_dead",
    "write",
]

REDLINE = [sys.executable, "-m", "redline"]


# --- the daemon --------------------------------------------------------------------


def alive(pid: int) -> bool:
    """Whether ``pid`` runs. A zombie counts as dead once all its threads have ended: a
    process killed with SIGKILL shows its first thread as a zombie while the others are
    still closing its files (its socket, its lock)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for task in tasks:
        try:
            state = Path(f"/proc/{pid}/task/{task}/stat").read_text().rsplit(")", 1)[-1].split()[0]
        except OSError:
            continue
        if state not in ("Z", "X"):
            return True
    return False


def wait_dead(pid: int, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while alive(pid):
        assert time.monotonic() < deadline, f"process {pid} is still alive after {timeout} s"
        time.sleep(0.02)


def is_redline_daemon(pid: int) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"redline" in cmdline and b"daemon" in cmdline and b"run" in cmdline


def kill_daemon(pid: int) -> None:
    """SIGKILL one daemon process of ours (checked by its command line) and wait."""
    if alive(pid) and is_redline_daemon(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    wait_dead(pid)


class Redline:
    """The ``redline`` CLI against one repository: run in this process (``support.cli``),
    or, with ``real``, as ``python -m redline`` processes."""

    def __init__(self, repo: Path, env: dict[str, str], *, real: bool = False) -> None:
        self.repo = repo
        self.env = env
        self.real = real
        self.started: set[int] = set()  # every daemon pid seen, for teardown

    def run(
        self,
        *args: str,
        input: str | bytes | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float = 60,
    ) -> subprocess.CompletedProcess[str]:
        if not self.real:
            done = inproc.run(
                args, input=input, env=self.env if env is None else env, cwd=self.repo
            )
            self._remember()
            return done
        data = input.encode() if isinstance(input, str) else input
        proc = subprocess.run(
            [*REDLINE, *args],
            input=data,
            capture_output=True,
            env=dict(env) if env is not None else self.env,
            cwd=self.repo,
            timeout=timeout,
        )
        self._remember()
        return subprocess.CompletedProcess(
            proc.args,
            proc.returncode,
            proc.stdout.decode("utf-8", errors="replace"),
            proc.stderr.decode("utf-8", errors="replace"),
        )

    def ok(self, *args: str, input: str | bytes | None = None, **kw: Any) -> str:
        proc = self.run(*args, input=input, **kw)
        assert proc.returncode == 0, f"redline {' '.join(args)}: {proc.stderr}{proc.stdout}"
        return proc.stdout

    def json(self, *args: str, input: str | bytes | None = None, **kw: Any) -> Any:
        return json.loads(self.ok(*args, input=input, **kw))

    def status(self) -> dict[str, Any]:
        found = self.json("daemon", "status", "--json", "--repo", str(self.repo))
        assert isinstance(found, dict)
        return found

    def open_session(self, name: str, *extra: str) -> dict[str, Any]:
        opened = self.json(
            "session", "open", "--json", "--name", name, "--repo", str(self.repo), *extra
        )
        assert isinstance(opened, dict)
        return opened

    def apply(
        self, session: str, request: Mapping[str, Any] | str, *extra: str
    ) -> tuple[int, dict[str, Any]]:
        payload = request if isinstance(request, str) else json.dumps(request)
        proc = self.run(
            "apply", "--session", session, "--repo", str(self.repo), *extra, input=payload
        )
        assert proc.stdout, f"no result (exit {proc.returncode}): {proc.stderr}"
        result = json.loads(proc.stdout)
        assert isinstance(result, dict)
        return proc.returncode, result

    @property
    def pid_file(self) -> Path:
        return self.repo / ".git" / "redline" / "daemon.pid"

    def pid(self) -> int | None:
        try:
            return int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            return None

    def _remember(self) -> None:
        pid = self.pid()
        if pid is not None:
            self.started.add(pid)

    def stop(self) -> None:
        """Stop the daemon politely, then make sure no daemon we saw survives."""
        self._remember()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.run("daemon", "stop", "--repo", str(self.repo), timeout=30)
        for pid in sorted(self.started):
            kill_daemon(pid)


@dataclass
class GitMode:
    """A repository with a CLI bound to it and the environment its processes get."""

    repo: Path
    home: Path
    runtime: Path
    env: dict[str, str]
    cli: Redline
    _socket: Path | None = None

    def git(self, *args: str, cwd: Path | None = None, check: bool = True) -> str:
        return git(cwd or self.repo, *args, env=self.env, check=check)

    def socket(self) -> Path:
        """The daemon's socket path (asked once: it does not move)."""
        if self._socket is None:
            self._socket = Path(self.cli.status()["socket"])
        return self._socket


@contextlib.contextmanager
def git_mode(
    base: Path,
    home: Path,
    files: Mapping[str, str | bytes] = FILES,
    repo_name: str = "repo",
    *,
    real: bool = False,
) -> Iterator[GitMode]:
    """A repository under ``base`` and a daemon CLI for it (``real``: run as processes); the
    daemon is stopped at the end."""
    with short_runtime_dir() as runtime:
        env = scrubbed_env(home, runtime)
        repo = make_repo(base / repo_name, files, env, executable=("tool.sh",))
        cli = Redline(repo, env, real=real)
        with daemons.kept_for(repo):
            try:
                yield GitMode(repo, home, runtime, env, cli)
            finally:
                cli.stop()


@pytest.fixture
def gm(
    tmp_path: Path, hermetic_environment: Path, request: pytest.FixtureRequest
) -> Iterator[GitMode]:
    """A fresh repository and its CLI (real processes for an ``e2e`` test); any daemon a
    test starts is stopped afterwards."""
    real = request.node.get_closest_marker("e2e") is not None
    with git_mode(tmp_path, hermetic_environment, real=real) as mode:
        yield mode
