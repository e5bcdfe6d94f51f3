"""Housekeeping beside the requests: a roll-up never inside one, never failing one; a
session that never pauses keeps few packs, and the daemon's memory stays bounded.

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
    git,
    git_wrapper,
    porcelain,
    wait_dead,
)
from redline.daemon import server as server_module
from redline.daemon import service as service_module
from redline.daemon.client import Client
from redline.daemon.housekeeping import Housekeeping, warm_imports
from redline.daemon.service import Service
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


@pytest.fixture
def short_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    """The daemon (on a thread here) does its idle-time upkeep 0.3 s into a pause, not
    1 s: still well beyond the gap between two requests a test sends one after another."""
    monkeypatch.setattr(server_module, "QUIET_DELAY", 0.3)


def start_with_git(gm: GitMode, bin_dir: Path) -> None:
    """Start the daemon with ``bin_dir`` (a wrapped git) first on its PATH."""
    env = {**gm.env, "PATH": f"{bin_dir}{os.pathsep}{gm.env['PATH']}"}
    gm.cli.ok("daemon", "start", "--repo", str(gm.repo), env=env)


# --- through the daemon ------------------------------------------------------------


def test_a_failing_repack_is_a_log_line_and_requests_still_apply(
    gm: GitMode, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, short_pause: None
) -> None:
    upkeeps: list[float] = []  # when each idle-time upkeep done by the daemon (a thread) began
    when_quiet = Service.when_quiet

    def counted(self: Service) -> None:
        began = time.monotonic()
        try:
            when_quiet(self)
        finally:
            upkeeps.append(began)

    monkeypatch.setattr(Service, "when_quiet", counted)
    bin_dir = git_wrapper(tmp_path / "bin", pack_objects="echo 'fatal: disk full' >&2; exit 128")
    start_with_git(gm, bin_dir)
    gm.cli.open_session("s")

    for value in (1, 2):  # two packs: something to roll up
        code, answer = gm.cli.apply("s", edit("b.py", f"VALUE = {value}", f"VALUE = {value + 1}"))
        assert code == 0 and answer["status"] == "applied"
    wait_for(lambda: "could not roll up" in daemon_log(gm), "the roll-up after the pause")
    sent = time.monotonic()  # the upkeep that logged began earlier
    code, third = gm.cli.apply("s", edit("b.py", "VALUE = 3", "VALUE = 4"))
    assert code == 0 and third["status"] == "applied"
    # a second pause (its upkeep done): the same problem is not logged again
    wait_for(lambda: any(began > sent for began in upkeeps), "the upkeep of the second pause")

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
    gm: GitMode, tmp_path: Path, short_pause: None
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


def _pack_names(repo: Path) -> set[str]:
    return {p.stem for p in (repo / ".git" / "objects" / "pack").glob("*.idx")}


def test_packs_rolled_together_go_at_the_next_roll_up_without_a_pause(repo: Path) -> None:
    """A session that never pauses: what one roll-up made redundant is removed at the next
    (not only once requests pause), and the worker is told its object database is stale."""
    handle = pygit2.Repository(str(repo))
    staged = StagedObjects.attach(handle)
    housekeeping = Housekeeping(
        repo / ".git", without_git_redirects(os.environ), holds=staged.holds
    )
    housekeeping.start()
    blobs = []

    def burst(first: int) -> None:
        for i in range(first, first + 4):
            blobs.append(handle.create_blob(f"blob {i}\n".encode()))
            handle.references.create(f"refs/tags/b{i}", blobs[-1])
            staged.flush()

    try:
        burst(0)
        housekeeping.repack()
        assert housekeeping.wait_idle(60)
        rolled = housekeeping.redundant
        assert rolled and rolled <= _pack_names(repo)  # kept for now: one roll-up of grace
        assert not housekeeping.packs_removed.is_set()
        burst(4)
        housekeeping.repack()
        assert housekeeping.wait_idle(60)
        assert not rolled & _pack_names(repo)
        assert housekeeping.packs_removed.is_set()
        assert not rolled & staged.holds.held()
    finally:
        housekeeping.stop()
    for i, blob in enumerate(blobs):
        assert git(repo, "cat-file", "-p", str(blob)) == f"blob {i}\n"
    assert_fsck_clean(repo)


def _deleted_mappings(folder: Path) -> int:
    """Mappings of this process of files in ``folder`` that are deleted (Linux)."""
    where = str(folder.resolve())
    return sum(
        where in line and line.endswith("(deleted)")
        for line in Path("/proc/self/maps").read_text().splitlines()
    )


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc/self/maps")
def test_a_session_that_never_pauses_keeps_few_packs_and_maps_none_removed(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sixty edits back to back, rolled up every four (each roll-up done before the next
    is asked, as a quick machine does): the packs stay few, the git library's object
    database drops the removed ones, and every commit and note is there."""
    monkeypatch.setattr(service_module, "CONSOLIDATE_AFTER", 4)
    service = Service(repo, git_env=without_git_redirects(os.environ))
    service.on_worker = service.step  # each step then writes what it staged, as the worker does
    service.startup()
    pack_dir = repo / ".git" / "objects" / "pack"
    counts = []
    try:
        service.session_open({"name": "s"})
        for value in range(1, 61):
            request = edit("b.py", f"VALUE = {value}", f"VALUE = {value + 1}")
            answer = service.apply({"session": "s", "request": request})
            assert answer["status"] == "applied", answer
            assert service.housekeeping.wait_idle(60)
            counts.append(len(_pack_names(repo)))
        service.call(service.session_list, {})  # one more step: it reopens the database
        assert _deleted_mappings(pack_dir) == 0
    finally:
        service.shutdown()
    assert max(counts[20:]) <= 16, counts  # 4 new, 4 rolled and not removed yet, a few rolled
    assert git(repo, "show", "redline/s:b.py") == "VALUE = 61\n"
    assert git(repo, "rev-list", "--count", "main..redline/s") == "60\n"
    notes = git(repo, "notes", "--ref=redline", "list").splitlines()
    assert len(notes) == 60
    assert_fsck_clean(repo)


def test_the_git_librarys_object_cache_is_bounded(repo: Path) -> None:
    """libgit2 keeps the trees and commits it read, 256 MiB of them by default: the daemon
    grew by every request's objects. Its bound is a small one."""
    service = Service(repo, git_env=without_git_redirects(os.environ))
    try:
        assert pygit2.settings.cached_memory[1] == service_module.OBJECT_CACHE <= 8 * 2**20
    finally:
        service.shutdown()
