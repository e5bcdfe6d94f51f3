"""Housekeeping beside the requests: a roll-up never inside one, never failing one.

The roll-up is asked for when requests pause (after ``QUIET_DELAY``) and every
``CONSOLIDATE_AFTER`` requests; it needs two packs at least. A ``git`` first on
the daemon's PATH stands in for ``git pack-objects`` (failing, or hanging) and
runs the real git for anything else.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pygit2
import pytest

from gitmode_fixtures import (
    GitMode,
    alive,
    assert_fsck_clean,
    git_wrapper,
    porcelain,
    wait_dead,
)
from redline.daemon.client import Client
from redline.daemon.housekeeping import Housekeeping, warm_imports
from redline.daemon.server import QUIET_DELAY
from redline.gitops.gitenv import without_git_redirects
from redline.gitops.packs import StagedObjects
from support.requests import edit


def daemon_log(gm: GitMode) -> str:
    return (gm.repo / ".git" / "redline" / "daemon.log").read_text()


def wait_for(predicate: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"waited {timeout} s for {what}"
        time.sleep(0.05)


def start_with_git(gm: GitMode, bin_dir: Path) -> None:
    """Start the daemon with ``bin_dir`` (a wrapped git) first on its PATH."""
    env = {**gm.env, "PATH": f"{bin_dir}{os.pathsep}{gm.env['PATH']}"}
    gm.cli.ok("daemon", "start", "--repo", str(gm.repo), env=env)


# --- through the daemon ------------------------------------------------------------


def test_a_failing_repack_is_a_log_line_and_requests_still_apply(
    gm: GitMode, tmp_path: Path
) -> None:
    bin_dir = git_wrapper(tmp_path / "bin", pack_objects="echo 'fatal: disk full' >&2; exit 128")
    start_with_git(gm, bin_dir)
    gm.cli.open_session("s")

    for value in (1, 2):  # two packs: something to roll up
        code, answer = gm.cli.apply("s", edit("b.py", f"VALUE = {value}", f"VALUE = {value + 1}"))
        assert code == 0 and answer["status"] == "applied"
    wait_for(lambda: "could not roll up" in daemon_log(gm), "the roll-up after the pause")
    code, third = gm.cli.apply("s", edit("b.py", "VALUE = 3", "VALUE = 4"))
    assert code == 0 and third["status"] == "applied"
    time.sleep(QUIET_DELAY + 1.0)  # a second pause: the same problem is not logged again

    log = daemon_log(gm)
    line = (
        "WARNING could not roll up the packs redline wrote: git pack-objects failed "
        "(128: fatal: disk full); the packs are as before — run `git gc` in "
        f"{(gm.repo / '.git').resolve()}"
    )
    assert log.count(line) == 1, log
    assert "ERROR" not in log and "Traceback" not in log
    assert gm.git("show", "redline/s:b.py") == "VALUE = 4\n"
    assert_fsck_clean(gm.repo)


def test_a_hanging_repack_holds_up_no_request_and_is_killed_at_stop(
    gm: GitMode, tmp_path: Path
) -> None:
    started = tmp_path / "roll-up.pid"
    bin_dir = git_wrapper(tmp_path / "bin", pack_objects=f"echo $$ > {started}; exec sleep 600")
    start_with_git(gm, bin_dir)
    worktree = Path(gm.cli.open_session("s")["worktree"])
    daemon = gm.cli.pid()
    assert daemon is not None

    with Client(gm.socket(), timeout=30) as conn:
        for value in (1, 2):
            request = edit("b.py", f"VALUE = {value}", f"VALUE = {value + 1}")
            result = conn.call("apply", {"session": "s", "request": request})
            assert result["status"] == "applied"
        wait_for(started.exists, "git pack-objects to start")
        repack = int(started.read_text())
        assert alive(repack)
        # The roll-up is running and will not finish: requests are answered all the same.
        for value in range(3, 12):
            request = edit("b.py", f"VALUE = {value}", f"VALUE = {value + 1}")
            result = conn.call("apply", {"session": "s", "request": request})
            assert result["status"] == "applied", result
        assert conn.call("hello", {"protocol": 1})["server"] == "redline"
    assert alive(repack)

    assert gm.cli.ok("daemon", "stop", "--repo", str(gm.repo)) == "redline daemon stopped\n"
    wait_dead(daemon)
    wait_dead(repack)
    log = daemon_log(gm)
    assert "INFO git pack-objects was stopped as the daemon stops; the packs are as before" in log
    assert "ERROR" not in log and "Traceback" not in log
    assert (worktree / "b.py").read_text() == "VALUE = 12\n"
    assert porcelain(worktree) == ""
    assert_fsck_clean(gm.repo)


# --- the thread on its own -----------------------------------------------------------


def _packs(repo: Path) -> int:
    return len(list((repo / ".git" / "objects" / "pack").glob("*.idx")))


def test_a_roll_up_runs_on_its_own_thread(repo: Path) -> None:
    handle = pygit2.Repository(str(repo))
    staged = StagedObjects.attach(handle)
    for i in range(4):
        handle.create_blob(f"blob {i}\n".encode())
        staged.flush()
    before = _packs(repo)
    housekeeping = Housekeeping(
        repo / ".git", without_git_redirects(os.environ), holds=staged.holds
    )
    housekeeping.start()
    try:
        housekeeping.repack()
        assert housekeeping.wait_idle(60)
    finally:
        housekeeping.stop()
    assert _packs(repo) < before
    assert_fsck_clean(repo)


def test_a_problem_is_logged_once_until_it_changes(
    repo: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    handle = pygit2.Repository(str(repo))
    staged = StagedObjects.attach(handle)
    for i in range(2):  # two packs: something to roll up
        handle.create_blob(f"blob {i}\n".encode())
        staged.flush()
    env = without_git_redirects(os.environ)
    env["PATH"] = str(tmp_path / "no-git-here")
    housekeeping = Housekeeping(repo / ".git", env, holds=staged.holds)
    housekeeping.start()
    with caplog.at_level(logging.DEBUG, logger="redline.daemon"):
        try:
            for _ in range(3):
                housekeeping.repack()
                assert housekeeping.wait_idle(60)
        finally:
            housekeeping.stop()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert warnings[0].startswith("could not roll up the packs redline wrote: cannot run git (")
    assert warnings[0].endswith("); install git, or run `git gc` now and then")


def test_an_import_that_fails_ahead_of_time_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="redline.daemon"):
        warm_imports(("redline.no_such_module",))
    [record] = caplog.records
    assert record.getMessage() == (
        "could not import redline.no_such_module ahead of the requests that use it"
    )


def test_the_tolerant_libraries_are_imported_only_while_no_request_is_matched(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two threads importing rapidfuzz at once can each find the other's module half
    imported: the import ahead of time waits for the requests being matched, and a
    request that comes meanwhile waits for the import."""
    import redline.daemon.housekeeping as module

    events: list[str] = []
    monkeypatch.setattr(module, "warm_imports", lambda names: events.append("import"))
    housekeeping = Housekeeping(repo / ".git", without_git_redirects(os.environ))
    done = threading.Event()
    with housekeeping.planning():
        warming = threading.Thread(
            target=lambda: done.set() if housekeeping._warm_tolerant() else None
        )
        warming.start()
        time.sleep(0.3)
        events.append("matched")  # still matching: nothing was imported yet
    warming.join(timeout=10)
    assert done.is_set()
    assert events == ["matched", "import"]
