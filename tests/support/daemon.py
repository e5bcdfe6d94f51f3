"""The daemon on a thread of the test process, where the CLI would start a process.

``redline.daemon.lifecycle.spawn`` is the process edge: ``redline apply
--session``, ``session open`` or ``daemon start`` call it to start
``redline daemon run``. While :func:`in_process` is in force it starts
:func:`redline.daemon.lifecycle.run` — the very function that command runs — on
a thread instead (``ThreadDaemon``): the same lock, pid file, log, socket,
server, service and watcher, reached through ``daemon.client.Client`` as
always. Its pid file holds the thread's id, which is alive while the daemon
runs, so ``redline daemon stop`` and ``status`` work unchanged.

A real process is started instead when the test asks for one
(:func:`real_processes`, the ``daemon_process`` marker) or when the daemon is to
kill itself at a fault point (``REDLINE_FAULT``): a process is what such a test
proves. Every daemon a test starts on a thread is stopped after that test
(:func:`stop_started_since`).

A daemon on a thread keeps ``THREAD_SPARES`` spare files (``gitops.spares``), not
the thousand a daemon process keeps: the pool's size changes no answer (a pool run
dry creates files as usual, and ``tests/gitops/test_spares.py`` proves the pool
at every size it is built with), while a thousand files made for every daemon
were most of the files a run of the suite wrote, and removed later.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
import time
import traceback
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from redline.daemon import lifecycle
from redline.daemon.paths import DaemonFiles
from redline.gitops import spares

STOP_TIMEOUT = 30.0
PROCESS_SPARES = spares.KEEP  # spare files a daemon keeps, as users run it
THREAD_SPARES = 64  # spare files a daemon on a thread keeps


class ThreadDaemon:
    """``redline daemon run`` on a thread; looks like the ``Popen`` of that process."""

    def __init__(
        self, files: DaemonFiles, repo: Path, idle_timeout: float, env: Mapping[str, str]
    ) -> None:
        self.files = files
        self.repo = repo
        self.idle_timeout = idle_timeout
        self.env = dict(env)
        self.returncode: int | None = None
        self.pid = 0
        self._started = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"redline-daemon:{repo}", daemon=True)

    def start(self) -> ThreadDaemon:
        self.thread.start()
        self._started.wait()
        return self

    def _run(self) -> None:
        self.pid = threading.get_native_id()
        self._started.set()
        try:
            lifecycle.run(self.repo, self.files, self.idle_timeout, None, env=self.env)
            self.returncode = 0
        except BaseException as exc:
            # What ``redline daemon run`` prints on its stderr (the log): the CLI boundary's
            # words — its message, or "unexpected error" and where the crash log went.
            from redline.crashlog import describe, where_logged
            from redline.engine.errors import RedlineError

            if isinstance(exc, RedlineError):
                said, self.returncode = f"redline: {exc}\n", exc.exit_code
            elif isinstance(exc, Exception):
                said = f"redline: unexpected error: {describe(exc)}\nredline: {where_logged(exc)}\n"
                self.returncode = 1
            else:
                said, self.returncode = "".join(traceback.format_exception(exc)), 1
            with contextlib.suppress(OSError), open(self.files.log, "a") as log:
                log.write(said)

    def poll(self) -> int | None:
        return None if self.thread.is_alive() else self.returncode

    @property
    def alive(self) -> bool:
        return self.thread.is_alive()

    def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        """Stop it as ``redline daemon stop`` does (the ``shutdown`` call), and wait."""
        if self.thread.is_alive():
            with contextlib.suppress(lifecycle.DaemonError, OSError):
                lifecycle.stop(self.files, timeout=timeout)
        self.thread.join(timeout)


_lock = threading.Lock()
_started: list[ThreadDaemon] = []
_kept: list[Path] = []  # the git dirs of repositories whose owner stops their daemons
_real = {"on": False}  # not per thread: an MCP server starts its daemon on a worker


def spawn(
    files: DaemonFiles, repo: Path, idle_timeout: float, env: Mapping[str, str]
) -> lifecycle.Process:
    """Start a daemon the way the test wants it: on a thread, or as a real process."""
    if _real["on"] or env.get("REDLINE_FAULT"):
        return reaped(lifecycle.start_process(files, repo, idle_timeout, env))
    # A process keeps the working folder it started in; a thread shares the test's.
    daemon = ThreadDaemon(files, repo.resolve(), idle_timeout, env)
    with _lock:
        _started.append(daemon)
    return daemon.start()


def reaped(process: lifecycle.Process) -> lifecycle.Process:
    """``process`` waited for on a thread, as init waits for a daemon whose starter has
    exited: it is gone (not a zombie of this process) once all its threads have ended."""
    wait = getattr(process, "wait", None)
    if wait is not None:
        threading.Thread(target=wait, name=f"reaper:{process.pid}", daemon=True).start()
    return process


@contextlib.contextmanager
def in_process() -> Iterator[None]:
    """Daemons the CLI starts in this process run on threads while the block runs."""
    saved = lifecycle.spawn, spares.KEEP
    lifecycle.spawn, spares.KEEP = spawn, THREAD_SPARES
    try:
        yield
    finally:
        lifecycle.spawn, spares.KEEP = saved


@contextlib.contextmanager
def real_processes() -> Iterator[None]:
    """Daemons started while the block runs are real processes."""
    saved = _real["on"]
    _real["on"] = True
    try:
        yield
    finally:
        _real["on"] = saved


def started() -> int:
    """How many daemons were started on threads so far (a mark for stop_started_since)."""
    with _lock:
        return len(_started)


def running() -> list[ThreadDaemon]:
    with _lock:
        return [d for d in _started if d.alive]


@contextlib.contextmanager
def kept_for(repo: Path) -> Iterator[None]:
    """The daemons of ``repo`` are stopped by whoever owns it (a fixture that outlives a
    test, say), not after the test that started them: a test may restart a module's
    daemon."""
    common = (repo / ".git").resolve()
    with _lock:
        _kept.append(common)
    try:
        yield
    finally:
        with _lock:
            _kept.remove(common)


def stop_started_since(mark: int) -> list[ThreadDaemon]:
    """Stop every daemon started on a thread since ``mark`` (except those of a repository
    someone keeps); those that would not stop."""
    with _lock:
        mine = [d for d in _started[mark:] if Path(d.files.common).resolve() not in _kept]
    for daemon in mine:
        daemon.stop()
    return [d for d in mine if d.alive]


def own_ids() -> set[int]:
    """This process's id and its threads' ids."""
    try:
        return {os.getpid(), *(int(t) for t in os.listdir("/proc/self/task"))}
    except OSError:
        return {os.getpid()}


_real_kill = os.kill


def guarded_kill(pid: int, sig: int) -> None:
    """``os.kill``, refusing to signal the test process itself (a daemon on a thread has a
    thread's id for its pid): a test that kills a daemon needs a real one."""
    if sig != 0 and pid in own_ids():
        raise AssertionError(
            f"a test sent signal {signal.Signals(sig).name} to pid {pid}, which is the test "
            "process itself (a daemon started on a thread has its thread's id): a test that "
            "signals a daemon needs a real process — mark it @pytest.mark.daemon_process"
        )
    _real_kill(pid, sig)


def describe(daemons: list[Any]) -> str:
    return ", ".join(f"{d.thread.name} (id {d.pid})" for d in daemons)


@dataclass
class Served:
    """The daemon's server alone on a thread of this process (no lock, pid file or
    watcher): its socket, the server, the event loop it runs on, and the thread."""

    path: Path
    server: Any
    loop: asyncio.AbstractEventLoop
    thread: threading.Thread


@contextlib.contextmanager
def served(repo: Path) -> Iterator[Served]:
    """Serve ``repo`` with the daemon's ``Server`` and ``Service`` on a thread until the
    block ends (or the test stops the server itself)."""
    from redline.daemon.server import Server
    from redline.daemon.service import Service
    from support.env import short_runtime_dir

    with short_runtime_dir() as folder:
        path = folder / "d.sock"
        service = Service(repo, git_env=dict(os.environ))
        server = Server(service, path, idle_timeout=300)
        loops: list[asyncio.AbstractEventLoop] = []

        async def main() -> None:
            loops.append(asyncio.get_running_loop())
            await server.serve()

        thread = threading.Thread(target=asyncio.run, args=(main(),))
        thread.start()
        _wait_listening(path, time.monotonic() + 30)
        try:
            yield Served(path, server, loops[0], thread)
        finally:
            if thread.is_alive():
                loops[0].call_soon_threadsafe(server.stop)
                thread.join(timeout=30)
            service.shutdown()


def _wait_listening(path: Path, deadline: float) -> None:
    """Until the server at ``path`` listens: its socket file appears when it is bound, a
    moment before it listens (a connection meanwhile is refused). Read from the kernel's
    table of Unix sockets, not by connecting (a test may count the connections)."""
    while not _listening(path):
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.01)


def _listening(path: Path) -> bool:
    accepting = 0x10000  # __SO_ACCEPTCON: the socket listens
    with open("/proc/net/unix") as table:
        next(table)  # Num RefCount Protocol Flags Type St Inode Path
        for row in table:
            fields = row.split()
            if len(fields) == 8 and fields[7] == str(path) and int(fields[3], 16) & accepting:
                return True
    return False
