"""One daemon per repository: the lock a daemon holds for its life.

A client that finds a stale socket (the daemon before was killed) asks
``holds_lock`` whether a daemon lives; that probe takes the lock for an
instant. A daemon starting at that instant waits it out instead of refusing to
start as if another daemon ran; a daemon that does run is still refused.
"""

from __future__ import annotations

import contextlib
import fcntl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from gitmode_fixtures import GitMode
from redline.daemon import lifecycle
from redline.daemon.lifecycle import DaemonError, daemon_lock, holds_lock
from redline.daemon.paths import DaemonFiles
from redline.daemon.service import Service
from support import daemon


@pytest.fixture
def files(tmp_path: Path) -> DaemonFiles:
    common = tmp_path / ".git"
    common.mkdir()
    found = DaemonFiles(common)
    found.ensure()
    return found


@contextlib.contextmanager
def held_for(files: DaemonFiles, seconds: float) -> Iterator[None]:
    """The lock taken as a probe would take it (another open file), released after
    ``seconds`` on a thread."""
    handle = open(files.lock, "a+")  # noqa: SIM115
    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)

    def release() -> None:
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()

    timer = threading.Timer(seconds, release)
    timer.start()
    try:
        yield
    finally:
        timer.join()


def dead_pid() -> int:
    """The id of a process that has exited (and been waited for)."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


@pytest.mark.parametrize("pid_file", ["none", "a killed daemon's"])
def test_a_daemon_starting_during_a_probe_waits_for_the_lock(
    files: DaemonFiles, pid_file: str
) -> None:
    if pid_file != "none":
        files.pid.write_text(f"{dead_pid()}\n")
    with held_for(files, 0.3):
        started = time.monotonic()
        with daemon_lock(files):
            waited = time.monotonic() - started
            assert files.pid.read_text() == f"{lifecycle.daemon_pid()}\n"
            assert holds_lock(files)
    assert waited >= 0.25
    assert not holds_lock(files)
    assert not files.pid.exists()


PROBE = """
import sys
from pathlib import Path
from redline.daemon.lifecycle import holds_lock
from redline.daemon.paths import DaemonFiles
files = DaemonFiles(Path(sys.argv[1]))
holds_lock(files)
print("probing", flush=True)
while True:
    holds_lock(files)
"""


def test_a_daemon_starts_while_a_client_probes_the_lock(files: DaemonFiles) -> None:
    """A client (another process) that meets a stale socket probes the lock again and again
    while daemons start, for half a second."""
    with open(files.lock, "a"):
        pass
    prober = subprocess.Popen(
        [sys.executable, "-c", PROBE, str(files.common)], stdout=subprocess.PIPE, text=True
    )
    starts, refused = 0, []
    try:
        assert prober.stdout is not None and prober.stdout.readline() == "probing\n"
        until = time.monotonic() + 0.5
        while time.monotonic() < until:
            starts += 1
            try:
                with daemon_lock(files):
                    pass
            except DaemonError as exc:
                refused.append(str(exc))
        assert prober.poll() is None, "the probing client stopped early"
    finally:
        prober.kill()
        prober.communicate()
    assert refused == [], f"{len(refused)} of {starts} starts refused: {refused[0]}"


def test_a_second_daemon_is_refused_at_once(files: DaemonFiles) -> None:
    """The daemon that runs (here on a thread) holds the lock and its pid file names it."""
    running, stop = threading.Event(), threading.Event()

    def first_daemon() -> None:
        with daemon_lock(files):
            running.set()
            stop.wait(30)

    first = threading.Thread(target=first_daemon)
    first.start()
    try:
        assert running.wait(30)
        pid = files.pid.read_text().strip()
        started = time.monotonic()
        with pytest.raises(DaemonError) as caught, daemon_lock(files):
            pass
        assert time.monotonic() - started < lifecycle.LOCK_WAIT / 2
        assert files.pid.read_text().strip() == pid  # the running daemon's, untouched
        assert holds_lock(files)
    finally:
        stop.set()
        first.join()
    message = str(caught.value)
    assert f"a redline daemon is already running for {files.common} (pid {pid})" in message
    assert "`redline daemon stop` first" in message
    assert pid == str(first.native_id)


def test_a_start_that_lost_the_race_waits_for_the_daemon_that_won(
    gm: GitMode, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Commands started at once each start a daemon; all but one exit at once ("already
    running"). Each of those commands waits for the one that won, which holds the lock
    from its first moment but may take a while to answer — it is not an error."""
    files = lifecycle.files_for(gm.repo, gm.runtime)
    service_init = Service.__init__

    def slow_to_answer(self: Service, *args: Any, **kwargs: Any) -> None:
        time.sleep(0.5)  # the winner holds the lock, and does not listen yet
        service_init(self, *args, **kwargs)

    monkeypatch.setattr(Service, "__init__", slow_to_answer)
    winners: list[lifecycle.Process] = []

    class Lost:
        """The daemon this command started, gone at once: another holds the lock."""

        pid = dead_pid()
        returncode = 1

        def poll(self) -> int:
            return self.returncode

    def spawn_and_lose(
        files: DaemonFiles, repo: Path, idle_timeout: float, env: Mapping[str, str]
    ) -> lifecycle.Process:
        winners.append(daemon.spawn(files, repo, idle_timeout, env))  # another command's
        deadline = time.monotonic() + 30
        while not holds_lock(files):  # what made this command's daemon exit at once
            assert time.monotonic() < deadline, "the winner never took the lock"
            time.sleep(0.005)
        return Lost()

    monkeypatch.setattr(lifecycle, "spawn", spawn_and_lose)
    client, started = lifecycle.connect_or_start(files, gm.repo, 30.0, gm.env)
    with client:
        assert client.call("hello", {"protocol": 1})["protocol"] == 1
    assert started is False
    assert [w.pid for w in winners] == [lifecycle.status(files).pid]
