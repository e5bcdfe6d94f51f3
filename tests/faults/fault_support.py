"""The machinery of the fault suite: a small tmpfs, a daemon in this process, load, checks.

- :class:`Tmpfs` mounts a small tmpfs for one test module (root only; skipped
  with the reason otherwise) and fills it, frees it, makes it read-only and
  writable again. Its teardown unmounts it, and fails loudly if it cannot.
- :class:`Daemon` runs the daemon's Service and Server on a thread of this
  process (its socket outside the tmpfs), with a hook at the journal's fault
  points (gitops.publish.FAULT_POINTS) where a test makes the machine fail.
- :class:`Load` is a client per session on a thread of its own, each sending
  edits that count up one line of its own file; it keeps every answer.
- :func:`check_sessions` asserts what must hold after any fault: every request
  was answered with a status and a message; the branch holds exactly the
  commits the answers reported, in order, each with its note; the worktree is
  the branch's tip, and its file says what the answers say; ``git fsck
  --strict`` is clean.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from gitmode_fixtures import (
    REDLINE,
    alive,
    assert_fsck_clean,
    commit_records,
    git,
    kill_daemon,
    porcelain,
    rev,
)
from redline.daemon.client import Client
from redline.daemon.protocol import RpcError
from redline.daemon.server import Server
from redline.daemon.service import Service
from redline.gitops.gitenv import without_git_redirects


def need_root_and_mount() -> None:
    if os.geteuid() != 0:
        pytest.skip("the fault suite mounts a tmpfs: it needs root (CI runs it as root)")
    if shutil.which("mount") is None or not Path("/proc/filesystems").exists():
        pytest.skip("the fault suite needs mount(8) and /proc (Linux)")
    if "tmpfs" not in Path("/proc/filesystems").read_text():
        pytest.skip("the fault suite needs tmpfs in this kernel")


class Tmpfs:
    """A tmpfs of ``size`` mounted at ``path`` (see the module)."""

    def __init__(self, path: Path, size: str = "24m") -> None:
        self.path = path
        self.size = size
        self._filler = path / ".filler"

    def mount(self) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={self.size},mode=0755", "tmpfs", str(self.path)],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here ({proc.stderr.strip()})")

    def umount(self) -> None:
        self.writable()
        proc = subprocess.run(["umount", str(self.path)], capture_output=True, text=True)
        if proc.returncode != 0:  # a process of a test still uses it: detach it anyway
            subprocess.run(["umount", "-l", str(self.path)], capture_output=True, check=False)
        assert not os.path.ismount(self.path), f"{self.path} is still mounted"

    def fill(self) -> None:
        """Take every free byte (the next write that needs a new page fails: ENOSPC)."""
        chunk = b"\0" * (1 << 20)
        fd = os.open(self._filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            for size in (1 << 20, 1 << 12, 1):
                try:
                    while os.write(fd, chunk[:size]):
                        pass
                except OSError as exc:
                    assert exc.errno == errno.ENOSPC, exc
        finally:
            os.close(fd)

    def free(self) -> None:
        self._filler.unlink(missing_ok=True)

    def read_only(self) -> None:
        subprocess.run(["mount", "-o", "remount,ro", str(self.path)], check=True)

    def writable(self) -> None:
        subprocess.run(["mount", "-o", "remount,rw", str(self.path)], check=False)


@contextlib.contextmanager
def short_dir() -> Iterator[Path]:
    """A short-named private folder outside the tmpfs (socket paths stay short)."""
    path = Path(tempfile.mkdtemp(prefix="rlf-", dir="/tmp"))
    path.chmod(0o700)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@dataclass
class Machine:
    """The module's tmpfs, a repository on it, and the environment of its processes."""

    disk: Tmpfs
    repo: Path
    env: dict[str, str]
    runtime: Path


@dataclass
class Place:
    """A repository on the ordinary disk, and the environment of its processes."""

    repo: Path
    env: dict[str, str]
    runtime: Path


class Hook:
    """The daemon's fault hook: ``arm(point, action)`` runs ``action`` once, the first time
    a request reaches ``point``."""

    def __init__(self) -> None:
        self._armed: dict[str, Callable[[], None]] = {}
        self._lock = threading.Lock()
        self.reached: list[str] = []

    def arm(self, point: str, action: Callable[[], None]) -> None:
        with self._lock:
            self._armed[point] = action

    def __call__(self, point: str) -> None:
        with self._lock:
            action = self._armed.pop(point, None)
        if action is not None:
            self.reached.append(point)
            action()


class Daemon:
    """The daemon of ``repo`` on a thread of this process (see the module)."""

    def __init__(self, repo: Path, socket_dir: Path) -> None:
        self.repo = repo
        self.hook = Hook()
        self.socket = socket_dir / "d.sock"
        self.service = Service(repo, git_env=without_git_redirects(os.environ), fault=self.hook)
        self.server = Server(self.service, self.socket, idle_timeout=600)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.Thread(target=asyncio.run, args=(self._main(),), daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 60
        while not self.socket.exists():
            assert time.monotonic() < deadline, "the daemon did not start"
            assert self._thread.is_alive(), "the daemon's thread ended at start"
            time.sleep(0.01)

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        await self.server.run_on_worker(self.service.startup)
        await self.server.serve()

    def client(self) -> Client:
        return Client(self.socket, timeout=120)

    def call(self, method: str, params: dict[str, Any]) -> Any:
        with self.client() as conn:
            return conn.call(method, params)

    def open(self, name: str) -> Path:
        return Path(self.call("session.open", {"name": name})["worktree"])

    def stop(self) -> None:
        """Stop the daemon (again: nothing more to do)."""
        if self._thread.ident is not None and not self._thread.is_alive():
            return
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self.server.stop)
        self._thread.join(timeout=60)
        self.service.shutdown()
        assert not self._thread.is_alive(), "the daemon did not stop"


class RealDaemon:
    """The daemon of ``repo`` as users run it: a process of its own, started by the CLI."""

    def __init__(self, repo: Path, env: dict[str, str]) -> None:
        self.repo = repo
        self.env = env
        self.cli("daemon", "start")
        status = json.loads(self.cli("daemon", "status", "--json"))
        self.socket = Path(status["socket"])
        self.pid = int(status["pid"])

    def cli(self, *args: str, payload: str | None = None) -> str:
        proc = subprocess.run(
            [*REDLINE, *args, "--repo", str(self.repo)],
            input=payload,
            capture_output=True,
            text=True,
            env=self.env,
            cwd=self.repo,
            timeout=120,
        )
        assert proc.returncode == 0, f"redline {' '.join(args)}: {proc.stderr}{proc.stdout}"
        return proc.stdout

    def client(self) -> Client:
        return Client(self.socket, timeout=120)

    def open(self, name: str) -> Path:
        with self.client() as conn:
            return Path(conn.call("session.open", {"name": name})["worktree"])

    def alive(self) -> bool:
        return alive(self.pid)

    def stop(self) -> None:
        with contextlib.suppress(AssertionError, subprocess.TimeoutExpired):
            self.cli("daemon", "stop")
        kill_daemon(self.pid)


@dataclass
class Answer:
    request: dict[str, Any]
    result: dict[str, Any] | None = None  # the result, or None for an error answer
    error: dict[str, Any] | None = None  # a JSON-RPC error answer (code, message, data)


@dataclass
class Writer:
    """One session's client: edits counting up ``n = <k>`` in its own file."""

    session: str
    path: str
    value: int = 0  # what the file holds, as the answers say
    answers: list[Answer] = field(default_factory=list)
    commits: list[str] = field(default_factory=list)  # reported by applied answers, in order

    def request(self) -> dict[str, Any]:
        old, new = f"n = {self.value}", f"n = {self.value + 1}"
        return {"tool": "edit", "path": self.path, "old_string": old, "new_string": new}

    def send(self, conn: Client) -> Answer:
        request = self.request()
        answer = Answer(request)
        try:
            answer.result = conn.call("apply", {"session": self.session, "request": request})
        except RpcError as exc:
            answer.error = {"code": exc.code, "message": exc.message, "data": exc.data}
        self.answers.append(answer)
        if answer.result is not None and answer.result["status"] == "applied":
            self.value += 1
            self.commits += [
                c["commit"] for c in answer.result.get("commits", []) if c["source"] == "agent"
            ]
        return answer


class Load:
    """A thread per writer, each sending ``count`` requests on its own connection."""

    def __init__(self, daemon: Daemon | RealDaemon, writers: list[Writer], count: int) -> None:
        self.problems: list[BaseException] = []
        self._threads = [
            threading.Thread(target=self._run, args=(daemon, w, count), daemon=True)
            for w in writers
        ]

    def _run(self, daemon: Daemon | RealDaemon, writer: Writer, count: int) -> None:
        try:
            with daemon.client() as conn:
                for _ in range(count):
                    writer.send(conn)
        except BaseException as exc:  # a request that got no answer at all: the test fails
            self.problems.append(exc)

    def __enter__(self) -> Load:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        for thread in self._threads:
            thread.join(timeout=300)
        assert not [t for t in self._threads if t.is_alive()], "a client is still waiting"
        assert not self.problems, f"requests without an answer: {self.problems!r}"


def start_writers(daemon: Daemon | RealDaemon, repo: Path, names: list[str]) -> list[Writer]:
    """A session per name, each with its own file ``<name>.txt`` holding ``n = 0``."""
    writers = []
    for name in names:
        worktree = daemon.open(name)
        (worktree / f"{name}.txt").write_text("n = 0\n")
        writer = Writer(name, f"{name}.txt")
        with daemon.client() as conn:  # commits the file (external), then the edit
            first = writer.send(conn)
        assert first.result is not None and first.result["status"] == "applied", first
        writers.append(writer)
    return writers


def answered(writer: Writer) -> None:
    """Every request got a status and a message, or a JSON-RPC error with its words."""
    for answer in writer.answers:
        if answer.result is None:
            assert answer.error is not None and answer.error.get("data"), answer
            continue
        status = answer.result["status"]
        assert status in ("applied", "failed", "invalid", "no_match"), answer.result
        if status != "applied":
            assert answer.result["error"], answer.result
            assert answer.result.get("commits", []) == [], answer.result


def check_sessions(repo: Path, writers: list[Writer], base: str) -> None:
    """The invariants of the module docstring, for every writer's session."""
    for writer in writers:
        answered(writer)
        records = commit_records(repo, f"redline/{writer.session}", base)
        agent = [r for r in records if r.note is not None and r.note["source"] == "agent"]
        assert [r.commit for r in agent] == writer.commits  # the answers are the branch
        for record in records:  # note iff commit, each with the trailer of its note
            assert record.note is not None, f"{record.commit} has no note"
            assert record.trailers == [record.note["edit"]], record
        worktree = repo / ".git" / "redline" / "worktrees" / writer.session
        assert porcelain(worktree) == ""  # the worktree is the tip, with no leftover
        shown = git(repo, "show", f"redline/{writer.session}:{writer.path}")
        assert shown == (worktree / writer.path).read_text() == f"n = {writer.value}\n"
    assert_fsck_clean(repo)


def fault_under_load(
    machine: Machine,
    daemon: Daemon,
    point: str | None,
    cause: Callable[[], None],
    clear: Callable[[], None],
    names: list[str],
    count: int,
) -> tuple[str, list[Writer], list[str]]:
    """Three sessions write while a fault is caused — before the load (``point`` None) or
    when a request first reaches ``point`` (the daemon's hook) — and cleared after it.
    The branch base, the writers, and the errors of the requests that failed."""
    base = rev(machine.repo, "HEAD", machine.env)
    writers = start_writers(daemon, machine.repo, names)
    if point is None:
        cause()
    else:
        daemon.hook.arm(point, cause)
    try:
        with Load(daemon, writers, count=count):
            pass
        assert point is None or point in daemon.hook.reached
    finally:
        clear()
    errors = [
        str(a.result["error"])
        for w in writers
        for a in w.answers
        if a.result is not None and a.result["status"] == "failed"
    ]
    return base, writers, errors


def recovers(daemon: Daemon | RealDaemon, writers: list[Writer]) -> None:
    """The next request of every session succeeds, on the same daemon."""
    for writer in writers:
        with daemon.client() as conn:
            answer = writer.send(conn)
        assert answer.result is not None and answer.result["status"] == "applied", answer
