"""Out of file descriptors: the daemon's open-file limit (``ulimit -n``) low, under load.

The daemon is a process of its own here: its limit is set with ``prlimit`` (as
root: lowered and raised again on the running process). A long session stays
within a bound however many packs it writes; a limit at what the daemon holds
already answers requests with what ran out, and once the limit is raised the
next request succeeds without a restart.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Iterator

import pytest
from fault_support import (
    Load,
    Machine,
    RealDaemon,
    Writer,
    check_sessions,
    recovers,
    start_writers,
)

from gitmode_fixtures import rev
from redline.daemon.client import Client
from redline.daemon.server import QUIET_DELAY

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def daemon(machine: Machine) -> Iterator[RealDaemon]:
    running = RealDaemon(machine.repo, machine.env)
    try:
        yield running
    finally:
        running.stop()


def _open_files(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _limit(pid: int, soft: int) -> None:
    hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)[1]
    resource.prlimit(pid, resource.RLIMIT_NOFILE, (soft, hard))


def test_a_long_session_stays_within_a_small_limit(machine: Machine, daemon: RealDaemon) -> None:
    """A pack per request: libgit2 once kept each open, and 200 descriptors lasted ~190
    requests."""
    base = rev(machine.repo, "HEAD", machine.env)
    [writer] = start_writers(daemon, machine.repo, ["long"])
    _limit(daemon.pid, 200)
    try:
        with daemon.client() as conn:
            for _ in range(260):
                answer = writer.send(conn)
                assert answer.result is not None and answer.result["status"] == "applied", answer
        assert _open_files(daemon.pid) < 200
    finally:
        _limit(daemon.pid, 4096)
    check_sessions(machine.repo, [writer], base)


def _settle(daemon: RealDaemon, clients: list[Client], writers: list[Writer]) -> None:
    """Pause and send a request, until the daemon's descriptors stop falling.

    When requests pause, housekeeping removes the packs it rolled together, and the next
    request gives libgit2 a fresh object database, which lets go of their descriptors
    (dozens). That must happen before the limit is set, not lift it from under the test.
    """
    before = _open_files(daemon.pid)
    for _ in range(10):
        time.sleep(QUIET_DELAY + 1.0)
        for conn, writer in zip(clients, writers, strict=True):
            writer.send(conn)
        now = _open_files(daemon.pid)
        if now >= before - 2:
            return
        before = now
    raise AssertionError(f"the daemon's descriptors kept falling ({now} open)")


def test_no_descriptor_left_is_answered_and_a_higher_limit_is_enough(
    machine: Machine, daemon: RealDaemon
) -> None:
    base = rev(machine.repo, "HEAD", machine.env)
    writers = start_writers(daemon, machine.repo, [f"fd-{i}" for i in range(3)])
    clients = [daemon.client() for _ in writers]  # connected before the limit falls
    _settle(daemon, clients, writers)
    try:
        # Below what it holds: not one descriptor to spare, even after a few are closed.
        held = _open_files(daemon.pid)
        _limit(daemon.pid, held - 8)
        try:
            for conn, writer in zip(clients, writers, strict=True):
                for _ in range(3):
                    writer.send(conn)
        finally:
            after = _open_files(daemon.pid)
            _limit(daemon.pid, 4096)
    finally:
        for conn in clients:
            conn.close()
    answers = [a for w in writers for a in w.answers[1:]]
    refused = [a for a in answers if a.result is None or a.result["status"] != "applied"]
    assert refused, f"the limit refused nothing (it held {held} descriptors, then {after})"
    for answer in refused:
        said = answer.result["error"] if answer.result is not None else str(answer.error)
        assert "too many files open" in said, answer
        assert "raise the open-file limit (`ulimit -n`" in said or answer.result is None, answer
    with Load(daemon, writers, count=2):
        pass
    recovers(daemon, writers)
    assert daemon.alive()
    check_sessions(machine.repo, writers, base)
