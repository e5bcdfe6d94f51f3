"""Reaching a busy daemon: the listen queue, waiting with a deadline, the message after it.

A daemon stopped with SIGSTOP accepts nothing, so its listen queue fills up as
it would under a burst of clients: the kernel then refuses a connection at
once (EAGAIN). Clients wait for room, up to a deadline, then say what happened
and what to do — as one ``redline:`` line, never a traceback.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import resource
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitmode_fixtures import REDLINE, GitMode, short_runtime_dir
from redline.daemon import client as client_module
from redline.daemon.client import Client, DaemonBusy, pauses
from redline.daemon.lifecycle import daemon_lock, try_connect
from redline.daemon.paths import DaemonFiles
from redline.daemon.server import BACKLOG

FILL_LIMIT = 5000  # sockets at most: the queue is full well before


def test_pauses_double_from_the_first_and_stay_at_the_longest() -> None:
    waits = list(itertools.islice(pauses(0.001, 0.02), 8))
    assert waits == [0.001, 0.002, 0.004, 0.008, 0.016, 0.02, 0.02, 0.02]


def _somaxconn() -> int:
    try:
        return int(Path("/proc/sys/net/core/somaxconn").read_text())
    except OSError:
        return BACKLOG


@contextlib.contextmanager
def stopped(pid: int) -> Iterator[None]:
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


@contextlib.contextmanager
def full_queue(path: Path) -> Iterator[list[socket.socket]]:
    """Connections queued on ``path`` until the kernel refuses one (EAGAIN)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = FILL_LIMIT + 100
    if soft < wanted:
        if hard != resource.RLIM_INFINITY and hard < wanted:
            pytest.skip(f"needs {wanted} open files; the hard limit is {hard}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    queued: list[socket.socket] = []
    try:
        while len(queued) < FILL_LIMIT:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.setblocking(False)
            try:
                sock.connect(str(path))
            except BlockingIOError:
                sock.close()
                break
            queued.append(sock)
        else:
            pytest.fail(f"{FILL_LIMIT} connections queued and the queue is still not full")
        yield queued
    finally:
        for sock in queued:
            sock.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.mark.daemon_process
def test_the_listen_queue_holds_a_burst_of_a_thousand_clients(gm: GitMode) -> None:
    gm.cli.ok("daemon", "start", "--repo", str(gm.repo))
    pid = gm.cli.pid()
    assert pid is not None
    path = gm.socket()  # asked while the daemon runs
    with stopped(pid), full_queue(path) as queued:
        # Linux queues backlog + 1; the kernel caps the backlog at somaxconn.
        assert len(queued) >= min(BACKLOG, _somaxconn()) >= 128
    assert gm.cli.status()["running"] is True


@pytest.mark.daemon_process
def test_a_client_waits_while_the_queue_is_full(gm: GitMode) -> None:
    gm.cli.ok("daemon", "start", "--repo", str(gm.repo))
    pid = gm.cli.pid()
    assert pid is not None
    path = gm.socket()  # asked while the daemon runs
    with stopped(pid), full_queue(path):
        status = subprocess.Popen(
            [*REDLINE, "daemon", "status", "--json", "--repo", str(gm.repo)],
            env=gm.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        time.sleep(1.0)  # it is waiting for room in the queue now
        assert status.poll() is None
    out, err = status.communicate(timeout=60)  # the daemon runs again: it gets in
    assert status.returncode == 0, err.decode()
    assert b'"running": true' in out
    assert err == b""


@pytest.mark.daemon_process
def test_a_daemon_that_accepts_nothing_is_a_clear_message_after_the_deadline(
    gm: GitMode, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The command runs in this process: its deadline is lowered from the 5 s users
    # get, so the test waits a tenth of that; the message names the deadline waited,
    # which users read as "within 5 s".
    assert client_module.CONNECT_DEADLINE == 5.0
    assert "within 5 s (" in str(DaemonBusy(Path("s"), client_module.CONNECT_DEADLINE, "r"))
    monkeypatch.setattr(client_module, "CONNECT_DEADLINE", 0.5)
    gm.cli.ok("daemon", "start", "--repo", str(gm.repo))
    pid = gm.cli.pid()
    assert pid is not None
    sock = gm.socket()
    log = gm.repo / ".git" / "redline" / "daemon.log"
    with stopped(pid), full_queue(sock):
        started = time.monotonic()
        proc = gm.cli.run("daemon", "status", "--repo", str(gm.repo))
        waited = time.monotonic() - started
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr == (
        f"redline: the redline daemon on {sock} did not accept a connection within 0.5 s "
        "(Resource temporarily unavailable): it has too many clients waiting, or it is "
        f"stuck. Retry in a moment; `redline daemon status` and its log {log} tell more, "
        "and `redline daemon stop` restarts it\n"
    )
    assert 0.5 <= waited < 20
    assert gm.cli.status()["running"] is True


# --- refused connections ------------------------------------------------------------------------


@pytest.fixture
def stale_socket(tmp_path: Path) -> Iterator[Path]:
    """A socket file nobody listens on (as a crashed daemon leaves it)."""
    path = tmp_path / "daemon.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    sock.close()
    yield path


def test_a_refused_connection_is_raised_at_once_when_no_daemon_lives(stale_socket: Path) -> None:
    started = time.monotonic()
    with pytest.raises(ConnectionRefusedError):
        Client(stale_socket)
    assert time.monotonic() - started < 1.0


def test_a_refused_connection_is_retried_while_a_daemon_lives(stale_socket: Path) -> None:
    asked = []

    def alive() -> bool:
        asked.append(time.monotonic())
        return True

    with pytest.raises(DaemonBusy) as caught:
        Client(stale_socket, deadline=0.5, retry_refused=alive)
    assert len(asked) >= 3  # retried, with pauses between
    assert asked[-1] - asked[0] >= 0.3
    assert str(caught.value) == (
        f"the redline daemon on {stale_socket} did not accept a connection within 0.5 s "
        "(Connection refused): it has too many clients waiting, or it is stuck. Retry in "
        "a moment; `redline daemon status` tell more, and `redline daemon stop` restarts it"
    )


@pytest.fixture
def files(tmp_path: Path) -> Iterator[DaemonFiles]:
    """The daemon's files for a git directory with a long path: the socket is elsewhere."""
    common = tmp_path / ("long-" * 20) / ".git"
    common.mkdir(parents=True)
    with short_runtime_dir() as runtime:
        found = DaemonFiles(common, runtime)
        found.ensure()
        assert found.socket.parent == runtime / "redline"
        yield found


def test_a_stale_socket_without_a_daemon_means_none_runs(files: DaemonFiles) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.bind(str(files.socket))
    started = time.monotonic()
    assert try_connect(files) is None
    assert time.monotonic() - started < 1.0


def test_a_refusing_socket_while_the_lock_is_held_is_a_busy_daemon_naming_its_log(
    files: DaemonFiles, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(client_module, "CONNECT_DEADLINE", 0.4)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.bind(str(files.socket))
    with daemon_lock(files), pytest.raises(DaemonBusy) as caught:
        try_connect(files)
    assert caught.value.log == files.log
    assert f"`redline daemon status` and its log {files.log} tell more" in str(caught.value)
    assert caught.value.reason == os.strerror(errno.ECONNREFUSED)
