"""Starting, finding and stopping a repository's daemon.

One daemon per repository: ``daemon.lock`` (flock) is held for the daemon's
life, so a second one refuses to start and a crashed one leaves nothing that
blocks the next. Its log, pid and lock files are private (0600, see
:mod:`redline.daemon.paths`). The client side of this module imports no heavy
library.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any, NamedTuple, Protocol

from redline.daemon.client import Client, DaemonBusy, pauses
from redline.daemon.client import DaemonError as DaemonError  # where callers import it from
from redline.daemon.paths import DaemonFiles, common_dir, private_opener
from redline.daemon.protocol import RpcError
from redline.gitops.gitenv import without_git_redirects

DEFAULT_IDLE_TIMEOUT = 900.0
START_TIMEOUT = 15.0
# How long a starting daemon waits for a lock that no live daemon holds (a client's
# probe of holds_lock holds it for an instant).
LOCK_WAIT = 2.0


class Status(NamedTuple):  # not a dataclass: see DaemonFiles
    running: bool
    pid: int | None
    socket: str
    repo: str

    def to_dict(self) -> dict[str, Any]:
        return {"running": self.running, "pid": self.pid, "socket": self.socket, "repo": self.repo}


def files_for(repo: Path, runtime_dir: Path | None) -> DaemonFiles:
    return DaemonFiles(common_dir(repo), runtime_dir)


def _read_pid(files: DaemonFiles) -> int | None:
    try:
        return int(files.pid.read_text().strip())
    except (OSError, ValueError):
        return None


def try_connect(
    files: DaemonFiles, timeout: float | None = 120.0, *, hello: bool = False
) -> Client | None:
    """A connected client, or None when no daemon answers (stale socket included).

    A refused connection is retried while a daemon holds the lock (it is
    starting, or its queue is full); a daemon that does not accept within the
    client's deadline is a DaemonBusy naming its log. ``hello``: said now, and a
    daemon that does not answer it within ``timeout`` is none (otherwise hello goes
    with the client's first call, see daemon.client).
    """
    try:
        client = Client(files.socket, timeout=timeout, retry_refused=lambda: holds_lock(files))
    except DaemonBusy as exc:
        raise DaemonBusy(exc.path, exc.waited, exc.reason, files.log) from None
    except (TimeoutError, FileNotFoundError, ConnectionRefusedError):
        return None
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ECONNREFUSED, errno.ENOTSOCK):
            return None
        raise
    if hello:
        try:
            client.server  # noqa: B018 - says hello
        except (TimeoutError, ConnectionError):
            client.close()
            return None
        except BaseException:
            client.close()
            raise
    return client


def status(files: DaemonFiles) -> Status:
    client = try_connect(files, timeout=5, hello=True)
    running = client is not None
    if client is not None:
        client.close()
    return Status(
        running, _read_pid(files) if running else None, str(files.socket), str(files.common)
    )


def start(files: DaemonFiles, repo: Path, idle_timeout: float, env: Mapping[str, str]) -> Status:
    """Start the daemon in the background (no-op if one runs); wait until it answers.

    It runs with ``env`` less the ``GIT_*`` variables that could send git to
    another repository (a hook's ``GIT_DIR``, a caller's ``GIT_INDEX_FILE``):
    it serves the repository ``repo`` is in, and nothing else.
    """
    return _launch(files, repo, idle_timeout, env)[0]


class Process(Protocol):
    """What starting a daemon gives back: a ``subprocess.Popen``, or alike."""

    pid: int
    returncode: int | None

    def poll(self) -> int | None: ...


def start_process(
    files: DaemonFiles, repo: Path, idle_timeout: float, env: Mapping[str, str]
) -> Process:
    """``redline daemon run`` in a new process of its own session, logging to the log."""
    import subprocess  # only when a daemon must be started

    command = [
        sys.executable,
        "-m",
        "redline",
        "daemon",
        "run",
        "--repo",
        str(repo),
        "--idle-timeout",
        str(idle_timeout),
    ]
    with open(files.log, "ab", opener=private_opener) as log:
        return subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            close_fds=True,
            env=dict(env),
        )


# How a daemon is started: a process edge, which the tests replace with a daemon on a
# thread of their own process (tests/support/daemon.py).
spawn: Callable[[DaemonFiles, Path, float, Mapping[str, str]], Process] = start_process


def _launch(
    files: DaemonFiles, repo: Path, idle_timeout: float, env: Mapping[str, str]
) -> tuple[Status, bool]:
    """The daemon's status once it answers, and whether this call started it."""
    current = status(files)
    if current.running:
        return current, False
    files.ensure()
    process = spawn(files, repo, idle_timeout, without_git_redirects(env))
    deadline = time.monotonic() + START_TIMEOUT
    waits = pauses(0.001, 0.02)  # a daemon nearly there is seen at once
    while time.monotonic() < deadline:
        client = try_connect(files, timeout=5, hello=True)
        if client is not None:
            client.close()
            current = status(files)
            return current, current.pid == process.pid
        if process.poll() is not None and not status(files).running:
            # Another start may have won the race: that daemon holds the lock from its
            # first moment and answers once it listens (START_TIMEOUT at most).
            if _lock_held(files):
                time.sleep(next(waits))
                continue
            raise DaemonError(
                f"the daemon exited at start (code {process.returncode}); see {files.log}:\n"
                + _tail(files.log)
            )
        time.sleep(next(waits))
    raise DaemonError(f"the daemon did not answer within {START_TIMEOUT:.0f} s; see {files.log}")


def connect(files: DaemonFiles, repo: Path, idle_timeout: float, env: Mapping[str, str]) -> Client:
    """A client of the repository's daemon, starting the daemon when none runs."""
    return connect_or_start(files, repo, idle_timeout, env)[0]


def connect_or_start(
    files: DaemonFiles, repo: Path, idle_timeout: float, env: Mapping[str, str]
) -> tuple[Client, bool]:
    """A client of the repository's daemon, and whether this call started the daemon."""
    client = try_connect(files)
    if client is not None:
        return client, False
    _, started = _launch(files, repo, idle_timeout, env)
    client = try_connect(files)
    if client is None:
        raise DaemonError(f"the daemon started but does not answer on {files.socket}")
    return client, started


def stop(files: DaemonFiles, timeout: float = 15.0, unless_in_use: bool = False) -> bool:
    """Ask the daemon to stop and wait for it; False when none was running.

    ``unless_in_use``: only if no other client is connected to it (False then).
    """
    client = try_connect(files, timeout=5)
    if client is None:
        return False
    pid = _read_pid(files)
    params = {"unless_in_use": True} if unless_in_use else None
    try:
        # Without hello: a daemon of another protocol version is stopped too (the way out
        # its refusal names).
        answer = client.call("shutdown", params, say_hello=False)
    except (RpcError, OSError):
        answer = None
    finally:
        client.close()
    if isinstance(answer, dict) and answer.get("stopping") is False:
        return False
    deadline = time.monotonic() + timeout
    waits = pauses(0.001, 0.02)  # a daemon nearly there is seen at once
    while time.monotonic() < deadline:
        if (pid is None or not _alive(pid)) and not holds_lock(files):
            return True
        time.sleep(next(waits))
    raise DaemonError(f"the daemon (pid {pid}) did not stop within {timeout:.0f} s")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child of ours still "exists"; treat it as gone.
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def _lock_held(files: DaemonFiles) -> bool:
    """holds_lock, False when the lock cannot be asked (the daemon could not take it)."""
    try:
        return holds_lock(files)
    except OSError:
        return False


def holds_lock(files: DaemonFiles) -> bool:
    """Whether some process holds the daemon lock (a daemon is alive)."""
    if not files.lock.exists():
        return False
    with open(files.lock, "a+", opener=private_opener) as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False


def daemon_pid() -> int:
    """The id the daemon's pid file holds: this process's, or, for a daemon run on a
    thread of another program (the tests run one so), that thread's (Linux names
    threads in the same space as processes, so a thread's id is alive while it runs)."""
    import threading

    if threading.current_thread() is threading.main_thread():
        return os.getpid()
    return threading.get_native_id()


def _take_lock(files: DaemonFiles, handle: IO[str]) -> bool:
    """Take the daemon lock on ``handle``; False when a daemon holds it.

    A client that finds a stale socket asks :func:`holds_lock` whether a daemon
    lives, and that probe holds the lock for an instant. So a lock found held
    while the pid file names no live daemon (none yet, or the one that was
    killed) is tried again, up to LOCK_WAIT, rather than refused as if a daemon
    ran; a lock held by a daemon whose pid file names it is refused at once.
    """
    deadline = time.monotonic() + LOCK_WAIT
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            holder = _read_pid(files)
            running = holder is not None and holder != daemon_pid() and _alive(holder)
            if running or time.monotonic() >= deadline:
                return False
        time.sleep(0.01)


@contextlib.contextmanager
def daemon_lock(files: DaemonFiles) -> Iterator[IO[str]]:
    """Hold the one-daemon-per-repository lock, or raise DaemonError."""
    files.ensure()
    # Held open for the daemon's whole life.
    handle = open(files.lock, "a+", opener=private_opener)  # noqa: SIM115
    if not _take_lock(files, handle):
        handle.close()
        raise DaemonError(
            f"a redline daemon is already running for {files.common} (pid {_read_pid(files)}); "
            "use `redline daemon status`, or `redline daemon stop` first"
        ) from None
    try:
        with open(files.pid, "w", opener=private_opener) as pid:
            pid.write(f"{daemon_pid()}\n")
        yield handle
    finally:
        # Only this daemon's own: after .git/redline was removed under it, another
        # daemon may have made these files again (the server removes its own socket).
        if _read_pid(files) == daemon_pid():
            with contextlib.suppress(FileNotFoundError):
                files.pid.unlink()
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def run(
    repo: Path,
    files: DaemonFiles,
    idle_timeout: float,
    fault: Callable[[str], None] | None = None,
    *,
    env: Mapping[str, str],
) -> None:
    """Run the daemon in the foreground until it is stopped or idle.

    ``env`` is the environment of the git processes it starts, less the
    ``GIT_*`` variables that could send git to another repository. On the main
    thread SIGTERM and SIGINT stop it; on another thread (a daemon embedded in a
    test process) only ``shutdown`` and the idle timeout do.
    """
    import asyncio
    import logging
    import signal
    import threading

    from redline.daemon.server import Server
    from redline.daemon.service import Service
    from redline.daemon.watcher import Watcher

    with daemon_lock(files), _logging_to(files.log):
        log = logging.getLogger("redline.daemon")
        log.info("starting for %s", files.common)
        watcher = Watcher()
        service = Service(repo, git_env=without_git_redirects(env), fault=fault)
        service.on_session_open = lambda a: watcher.watch(a.session.name, a.root, a.dirty)
        service.on_session_close = watcher.unwatch
        server = Server(service, files.socket, idle_timeout)

        async def main() -> None:
            loop = asyncio.get_running_loop()
            if threading.current_thread() is threading.main_thread():
                for sig in (signal.SIGTERM, signal.SIGINT):
                    loop.add_signal_handler(sig, server.stop)
            await server.run_on_worker(service.startup)
            await server.serve()

        try:
            asyncio.run(main())
        finally:
            service.shutdown()
            watcher.stop()


@contextlib.contextmanager
def _logging_to(path: Path) -> Iterator[None]:
    """Every log record of this process (INFO and up) appended to ``path`` while the daemon
    runs, each line stamped with the id of its pid file."""
    import logging

    os.close(private_opener(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND))
    ident = daemon_pid()

    def stamp(record: logging.LogRecord) -> bool:
        record.daemon_pid = ident
        return True

    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(daemon_pid)d %(levelname)s %(message)s"))
    handler.addFilter(stamp)
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(min(level, logging.INFO))
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
        handler.close()
