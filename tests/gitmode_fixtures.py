"""Real git repositories and a real redline daemon for the git-mode tests.

Everything here goes through real programs: repositories are built with the
``git`` binary in ``tmp_path`` (identity in the repository's config, since
pygit2 takes it from there), what pygit2 wrote is read back with ``git``, and
the daemon is the real one, started by ``redline`` subprocesses on a real Unix
socket. Subprocesses get an explicit environment: an empty HOME, no inherited
``GIT_*`` variable, a short ``XDG_RUNTIME_DIR`` (the socket fallback for long
paths) and a short ``REDLINE_IDLE_TIMEOUT`` so that a stray daemon dies soon.

The test modules import the helpers; ``tests/gitops/conftest.py`` and
``tests/daemon/conftest.py`` import the fixtures.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

IDENTITY = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00+00:00",
    "GIT_COMMITTER_NAME": "Test Committer",
    "GIT_COMMITTER_EMAIL": "committer@example.com",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00+00:00",
    "GIT_CONFIG_NOSYSTEM": "1",
}
IDLE_TIMEOUT = "30"  # seconds: a daemon a failed test leaves behind dies soon
REDLINE = [sys.executable, "-m", "redline"]


# --- environment -----------------------------------------------------------------


def scrubbed_env(home: Path, runtime: Path, **extra: str) -> dict[str, str]:
    """A subprocess environment: our HOME and runtime dir, no GIT_*/REDLINE_* leaking in."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "REDLINE_"))}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_RUNTIME_DIR=str(runtime),
        REDLINE_IDLE_TIMEOUT=IDLE_TIMEOUT,
        PYTHONDONTWRITEBYTECODE="1",
    )
    env.update(IDENTITY)
    env.update(extra)
    return env


@contextlib.contextmanager
def short_runtime_dir() -> Iterator[Path]:
    """A short-named XDG_RUNTIME_DIR (socket paths must stay under ~100 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="rl-", dir="/tmp"))
    path.chmod(0o700)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


# --- git ---------------------------------------------------------------------------


def git(cwd: Path, *args: str, env: Mapping[str, str] | None = None, check: bool = True) -> str:
    """Run the git binary; return its stdout (raise with stderr when it fails)."""
    proc = subprocess.run(
        ["git", *args],
        cwd=cwd,
        env=dict(env) if env is not None else None,
        capture_output=True,
        timeout=60,
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"git {' '.join(args)} failed ({proc.returncode}):\n"
            + proc.stderr.decode(errors="replace")
        )
    return proc.stdout.decode("utf-8", errors="replace")


def git_wrapper(folder: Path, *, pack_objects: str) -> Path:
    """A folder holding a ``git`` that runs the shell command ``pack_objects`` in place of
    ``git pack-objects`` (the daemon's roll-up of its packs) and the real git for anything
    else: put it first on PATH."""
    real = shutil.which("git")
    assert real is not None, "these tests need git on the PATH"
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "git"
    script.write_text(
        "#!/bin/sh\n"
        'for arg in "$@"; do\n'
        '  if [ "$arg" = pack-objects ]; then\n'
        f"    {pack_objects}\n"
        "    exit 0\n"
        "  fi\n"
        "done\n"
        f'exec {real} "$@"\n'
    )
    script.chmod(0o755)
    return folder


def write(path: Path, content: str | bytes, mode: int | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    if mode is not None:
        path.chmod(mode)


def make_repo(
    path: Path,
    files: Mapping[str, str | bytes],
    env: Mapping[str, str] | None = None,
    executable: tuple[str, ...] = (),
) -> Path:
    """A repository on branch main with ``files`` in its first commit."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main", env=env)
    git(path, "config", "user.name", "Repo User", env=env)
    git(path, "config", "user.email", "repo-user@example.com", env=env)
    for name, content in files.items():
        write(path / name, content, 0o755 if name in executable else None)
    git(path, "add", "-A", env=env)
    git(path, "commit", "-q", "-m", "initial", env=env)
    return path


def rev(repo: Path, spec: str, env: Mapping[str, str] | None = None) -> str:
    return git(repo, "rev-parse", "--verify", "-q", spec, env=env).strip()


def branch_commits(
    repo: Path, branch: str, base: str, env: Mapping[str, str] | None = None
) -> list[str]:
    """The commits on ``branch`` after ``base``, oldest first."""
    out = git(repo, "rev-list", "--reverse", f"{base}..{branch}", env=env)
    return out.split()


def note_of(repo: Path, commit: str, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The redline note of ``commit`` as git itself reads it."""
    note = json.loads(git(repo, "notes", "--ref=redline", "show", commit, env=env))
    assert isinstance(note, dict)
    return note


def trailer(repo: Path, commit: str, env: Mapping[str, str] | None = None) -> list[str]:
    out = git(
        repo,
        "log",
        "-1",
        "--format=%(trailers:key=Redline-Edit,valueonly,separator=%x00)",
        commit,
        env=env,
    )
    return [v for v in out.strip().split("\0") if v]


@dataclass(frozen=True)
class CommitRecord:
    commit: str
    trailers: list[str]  # Redline-Edit values
    note: dict[str, Any] | None
    files: list[str]


def commit_records(
    repo: Path, branch: str, base: str, env: Mapping[str, str] | None = None
) -> list[CommitRecord]:
    """Every commit after ``base`` on ``branch`` (oldest first) with what git reads of it:
    its Redline-Edit trailers, its redline note and the files it changed. One git call."""
    out = git(
        repo,
        "log",
        "--reverse",
        "--notes=redline",
        "--name-only",
        "--no-renames",
        "--format=%x02%H%x01%(trailers:key=Redline-Edit,valueonly,separator=%x00)%x01%N%x01",
        f"{base}..{branch}",
        env=env,
    )
    records = []
    for chunk in out.split("\x02")[1:]:
        commit, trailers, note, files = chunk.split("\x01")
        records.append(
            CommitRecord(
                commit,
                [t for t in trailers.strip().split("\0") if t],
                json.loads(note) if note.strip() else None,
                sorted(files.split()),
            )
        )
    return records


def changed_files(repo: Path, commit: str, env: Mapping[str, str] | None = None) -> list[str]:
    out = git(repo, "diff-tree", "--no-commit-id", "--name-only", "-r", commit, env=env)
    return sorted(out.split())


def assert_fsck_clean(repo: Path, env: Mapping[str, str] | None = None) -> None:
    """``git fsck --strict`` finds nothing wrong (dangling objects are fine)."""
    proc = subprocess.run(
        ["git", "fsck", "--strict", "--no-dangling", "--no-progress"],
        cwd=repo,
        env=dict(env) if env is not None else None,
        capture_output=True,
        timeout=120,
    )
    report = (proc.stdout + proc.stderr).decode(errors="replace")
    assert proc.returncode == 0, report
    assert report.strip() == "", report


def porcelain(worktree: Path, env: Mapping[str, str] | None = None) -> str:
    """``git status --porcelain`` without refreshing the index as a side effect."""
    return git(
        worktree,
        "--no-optional-locks",
        "status",
        "--porcelain",
        "--untracked-files=all",
        env=env,
    )


def digest_tree(root: Path, skip: tuple[str, ...] = ()) -> dict[str, str]:
    """Every file and link under ``root`` (relative path -> content hash or link target)."""
    out: dict[str, str] = {}
    for folder, dirs, files in os.walk(root):
        rel_folder = Path(folder).relative_to(root)
        dirs[:] = [d for d in dirs if (rel_folder / d).as_posix() not in skip]
        for name in [*files, *[d for d in dirs if (Path(folder) / d).is_symlink()]]:
            path = Path(folder) / name
            key = path.relative_to(root).as_posix()
            if key in skip:
                continue
            if path.is_symlink():
                out[key] = "link:" + os.readlink(path)
            else:
                out[key] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


# --- the daemon --------------------------------------------------------------------


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie counts as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


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
    """The ``redline`` CLI, run as real processes against one repository."""

    def __init__(self, repo: Path, env: dict[str, str]) -> None:
        self.repo = repo
        self.env = env
        self.started: set[int] = set()  # every daemon pid seen, for teardown

    def run(
        self,
        *args: str,
        input: str | bytes | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float = 60,
    ) -> subprocess.CompletedProcess[str]:
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


FILES: dict[str, str | bytes] = {
    "a.py": "def greet(name):\n    return 'Hello, ' + name\n",
    "b.py": "VALUE = 1\n",
    "c.txt": "alpha\nbeta\ngamma\n",
    "docs/readme.md": "# Title\n\nSome text.\n",
    "tool.sh": "#!/bin/sh\necho one\n",
    "blob.bin": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x01\x00\x00",
    ".gitignore": "*.log\n",
}


@contextlib.contextmanager
def git_mode(
    base: Path, home: Path, files: Mapping[str, str | bytes] = FILES, repo_name: str = "repo"
) -> Iterator[GitMode]:
    """A repository under ``base`` and a daemon CLI for it; the daemon is stopped at the end."""
    with short_runtime_dir() as runtime:
        env = scrubbed_env(home, runtime)
        repo = make_repo(base / repo_name, files, env, executable=("tool.sh",))
        cli = Redline(repo, env)
        try:
            yield GitMode(repo, home, runtime, env, cli)
        finally:
            cli.stop()


@pytest.fixture
def gm(tmp_path: Path, hermetic_environment: Path) -> Iterator[GitMode]:
    """A fresh repository and its CLI; any daemon a test starts is stopped afterwards."""
    with git_mode(tmp_path, hermetic_environment) as mode:
        yield mode
