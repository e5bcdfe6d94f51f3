"""Other git processes, and other hands, at work in the repository while requests run.

A thread runs a git command in a loop (``gc --prune=now``, ``repack -a -d``,
``worktree prune``, a local ``clone`` and a ``fetch``) while three sessions
send edits; or a session's worktree, or all of ``.git/redline/``, is removed
in the middle of the load. Every request is answered, the branch holds what
the answers say, git finds nothing wrong, and once the fault is cleared (the
removed sessions opened again) the next request succeeds on the same daemon.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fault_support import (
    Daemon,
    Load,
    Place,
    RealDaemon,
    Writer,
    check_sessions,
    recovers,
    short_dir,
    start_writers,
)

from gitmode_fixtures import alive, assert_fsck_clean, rev

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def daemon(place: Place) -> Iterator[Daemon]:
    with short_dir() as sockets:
        running = Daemon(place.repo, sockets)
        try:
            yield running
        finally:
            running.stop()


class Beside:
    """``step(n)`` in a loop on a thread of its own until the block ends; every failure of
    a step is kept (the test decides which may fail)."""

    def __init__(self, step: Callable[[int], None]) -> None:
        self.step = step
        self.runs = 0
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.step(self.runs)
            except Exception as exc:
                self.failures.append(str(exc))
            self.runs += 1

    def __enter__(self) -> Beside:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=300)
        assert not self._thread.is_alive()


def _git(place: Place, *args: str, cwd: Path | None = None) -> None:
    proc = subprocess.run(
        ["git", *args], cwd=cwd or place.repo, env=place.env, capture_output=True, timeout=120
    )
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {proc.stderr.decode(errors='replace')}")


GIT_LOOPS = {
    "gc-prune-now": ("gc", "--prune=now", "--quiet"),
    "repack-a-d": ("repack", "-a", "-d", "-q"),
    "worktree-prune": ("worktree", "prune"),
}


@pytest.mark.parametrize("command", list(GIT_LOOPS))
def test_a_git_command_in_a_loop_beside_the_load(
    place: Place, daemon: Daemon, command: str
) -> None:
    base = rev(place.repo, "HEAD", place.env)
    writers = start_writers(daemon, place.repo, [f"{command}-{i}" for i in range(3)])
    with Beside(lambda n: _git(place, *GIT_LOOPS[command])) as beside, Load(daemon, writers, 8):
        pass
    assert beside.runs > 0
    assert beside.failures == []
    recovers(daemon, writers)
    check_sessions(place.repo, writers, base)


def test_clones_and_fetches_while_the_daemon_works(
    place: Place, daemon: Daemon, tmp_path: Path
) -> None:
    """A local clone copies objects/ file by file: no name it lists may vanish before it
    copies it, and every ref it reads names objects it can copy."""
    base = rev(place.repo, "HEAD", place.env)
    writers = start_writers(daemon, place.repo, [f"clone-{i}" for i in range(3)])
    fetched = tmp_path / "fetched"
    _git(place, "clone", "-q", str(place.repo), str(fetched), cwd=tmp_path)

    def clone_and_fetch(n: int) -> None:
        target = tmp_path / f"clone-{n}"
        _git(place, "clone", "-q", str(place.repo), str(target), cwd=tmp_path)
        _git(place, "fsck", "--strict", "--no-dangling", cwd=target)
        shutil.rmtree(target)
        _git(place, "fetch", "-q", "origin", "+refs/heads/*:refs/remotes/origin/*", cwd=fetched)

    with Beside(clone_and_fetch) as beside, Load(daemon, writers, count=12):
        pass
    assert beside.runs > 0
    assert beside.failures == []
    recovers(daemon, writers)
    check_sessions(place.repo, writers, base)
    assert_fsck_clean(fetched, place.env)


def _remove(folder: Path) -> None:
    """Remove ``folder`` at once, as ``rm -rf`` would, even while the daemon writes in it:
    renamed out of the repository first, then deleted."""
    away = folder.with_name(f".{folder.name}.removed")
    folder.rename(away)
    shutil.rmtree(away)


def _removed_midway(
    daemon: Daemon, writers: list[Writer], remove: Callable[[], None], reopen: list[Writer]
) -> list[str]:
    """Each writer sends two requests, ``remove`` runs, then three more each; the sessions
    in ``reopen`` are opened again (the fix); the errors of the refused requests."""
    with Load(daemon, writers, count=2):
        pass
    remove()
    with Load(daemon, writers, count=3):
        pass
    for writer in reopen:
        daemon.open(writer.session)
    return [
        a.result["error"]
        for w in writers
        for a in w.answers
        if a.result is not None and a.result["status"] == "failed"
    ]


def test_a_session_worktree_removed_under_the_load(place: Place, daemon: Daemon) -> None:
    base = rev(place.repo, "HEAD", place.env)
    writers = start_writers(daemon, place.repo, [f"gone-{i}" for i in range(3)])
    gone = writers[0]
    worktree = place.repo / ".git" / "redline" / "worktrees" / gone.session

    def remove() -> None:
        _remove(worktree)
        _git(place, "worktree", "prune")  # git forgets it too

    errors = _removed_midway(daemon, writers, remove, reopen=[gone])
    assert len(errors) == 3  # the removed session's three requests, nobody else's
    for error in errors:
        assert error.startswith(f"the worktree of session '{gone.session}' ({worktree}) is gone")
        assert f"`redline session open --name {gone.session}`" in error
    recovers(daemon, writers)
    check_sessions(place.repo, writers, base)


def test_the_state_folder_removed_under_the_load(place: Place, daemon: Daemon) -> None:
    """.git/redline holds the sessions' records, journals and worktrees, the spares and the
    staging folder: removed, every session's requests are refused until it is opened
    again; the daemon makes its own folders again as it needs them."""
    base = rev(place.repo, "HEAD", place.env)
    writers = start_writers(daemon, place.repo, [f"state-{i}" for i in range(3)])
    errors = _removed_midway(
        daemon, writers, lambda: _remove(place.repo / ".git" / "redline"), reopen=writers
    )
    assert len(errors) == 9
    assert all(" is gone: something removed it. Nothing was applied." in e for e in errors)
    recovers(daemon, writers)
    check_sessions(place.repo, writers, base)


def test_a_real_daemon_whose_state_folder_is_removed_stops_and_the_next_command_serves(
    place: Place,
) -> None:
    """Its socket went with the folder: no client can reach it any more, so it stops by
    itself instead of staying behind, and the next command starts a daemon that serves."""
    first = RealDaemon(place.repo, place.env)
    try:
        first.open("orphan")
        _remove(place.repo / ".git" / "redline")
        deadline = time.monotonic() + 20
        while alive(first.pid):
            assert time.monotonic() < deadline, "the daemon without a socket kept running"
            time.sleep(0.1)
        second = RealDaemon(place.repo, place.env)
        try:
            assert second.pid != first.pid
            worktree = second.open("orphan")  # opened again: the session's branch is kept
            assert (worktree / "b.py").read_text() == "VALUE = 1\n"
        finally:
            second.stop()
    finally:
        first.stop()
    assert_fsck_clean(place.repo, place.env)
