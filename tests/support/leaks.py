"""The run fails if a daemon or ``redline mcp`` that a test started is still alive at its end.

A pytest plugin (``tests/conftest.py`` loads it). At the start of the run it puts
a mark in the environment (``support.env.RUN_MARK``, unique to this run and
worker) that every process the tests start inherits; at the end it looks in
``/proc`` for processes carrying that mark whose command line is ``redline
daemon run`` or ``redline mcp``, and for daemons still running on a thread of
this process (``support.daemon``). Each one found is named, stopped (so the run
leaves nothing behind), and the run's exit status becomes "tests failed".
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from support import daemon as threads
from support.env import RUN_MARK

GRACE = 2.0  # seconds a stopping process gets to finish before it counts as left behind


@dataclass(frozen=True)
class Leftover:
    pid: int
    command: str


def marked_processes(mark: str) -> list[Leftover]:
    """Daemons and MCP servers (not this process) whose environment carries ``mark``."""
    wanted = f"{RUN_MARK}={mark}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if wanted not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            argv = (entry / "cmdline").read_bytes().rstrip(b"\0").split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[-1].split()[0]
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if state != "Z" and is_redline_server(argv):
            found.append(
                Leftover(int(entry.name), " ".join(a.decode(errors="replace") for a in argv))
            )
    return found


def is_redline_server(argv: list[bytes]) -> bool:
    """``redline daemon run …`` or ``redline mcp …`` (as a script or ``python -m redline``)."""
    for i, arg in enumerate(argv):
        if arg == b"redline" or arg.endswith(b"/redline"):
            rest = argv[i + 1 :]
            return rest[:2] == [b"daemon", b"run"] or rest[:1] == [b"mcp"]
    return False


def leftovers(mark: str, grace: float | None = None) -> list[Leftover]:
    """The marked servers still alive once ``grace`` seconds (GRACE) have passed."""
    deadline = time.monotonic() + (GRACE if grace is None else grace)
    while True:
        found = marked_processes(mark)
        if not found or time.monotonic() >= deadline:
            return found
        time.sleep(0.1)


class LeakCheck:
    def __init__(self) -> None:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        self.mark = f"{uuid.uuid4().hex}-{worker}"
        self.found: list[str] = []

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        os.environ[RUN_MARK] = self.mark

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        for daemon in threads.running():
            self.found.append(f"a daemon on a thread of the test process: {daemon.thread.name}")
            daemon.stop()
        for process in leftovers(self.mark):
            self.found.append(f"pid {process.pid}: {process.command}")
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGKILL)
        if self.found:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.found:
            terminalreporter.section("processes left behind", red=True)
            terminalreporter.line(
                "these were started by tests and still alive when the run ended (now killed); "
                "stop every daemon or `redline mcp` a test starts:"
            )
            for line in self.found:
                terminalreporter.line(f"  {line}")


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(LeakCheck(), "redline-leak-check")
