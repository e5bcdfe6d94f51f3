"""session.open: git checks the worktree out in a process of its own, beside the daemon.

A checkout held up on purpose — a smudge filter that waits on one file until the
test opens a gate (a file of its own), so the test depends neither on the
machine's speed nor on a sleep — must not hold up ``hello`` or another session's
edit; an open that does not wait answers at once and the session's first request
waits for the checkout, then finds the worktree equal to the branch (what was
written meanwhile is an external commit); a close during the checkout stops git;
a daemon that starts and finds a checkout cut short does it again.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gitmode_fixtures import GitMode, commit_records, rev
from redline.daemon.client import Client
from redline.gitops.repo import main_repository
from redline.gitops.session import checkout_due, open_session

pytestmark = pytest.mark.slow

AT_ONCE = 1.0  # seconds: an answer that did not wait for the checkout comes sooner
HELD = 0.3  # seconds a checkout is still held up after the request that waits for it


@dataclass
class Slow:
    """A repository whose checkout of ``slow.txt`` waits until ``gate`` exists."""

    gm: GitMode
    gate: Path

    def open_gate(self) -> None:
        self.gate.write_text("")

    def close_gate(self) -> None:
        self.gate.unlink(missing_ok=True)

    def open_gate_later(self, seconds: float = HELD) -> threading.Timer:
        """The gate opened ``seconds`` from now, while a request waits on the checkout."""
        timer = threading.Timer(seconds, self.open_gate)
        timer.start()
        return timer

    def filters(self) -> list[int]:
        """Processes running this repository's held-up smudge filter."""
        found = []
        for entry in Path("/proc").iterdir():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if str(self.gate).encode() in cmdline:
                found.append(int(entry.name))
        return found


@pytest.fixture
def slow(gm: GitMode, tmp_path: Path) -> Iterator[Slow]:
    """A repository whose checkout waits for the test (the gate starts closed)."""
    held = Slow(gm, tmp_path / "checkout-gate")
    smudge = f"while [ ! -e '{held.gate}' ]; do sleep 0.02; done; cat"
    gm.git("config", "filter.slow.smudge", smudge)
    (gm.repo / ".gitattributes").write_text("slow.txt filter=slow\n")
    (gm.repo / "slow.txt").write_text("slow\n")
    gm.git("add", ".gitattributes", "slow.txt")
    gm.git("commit", "-q", "-m", "a file whose checkout waits for the test")
    try:
        yield held
    finally:
        held.open_gate()  # a filter the test left waiting ends


def edit(path: str, old: str, new: str) -> dict[str, Any]:
    return {"tool": "edit", "path": path, "old_string": old, "new_string": new}


def timed(conn: Client, method: str, params: dict[str, Any]) -> tuple[float, Any]:
    started = time.monotonic()
    answer = conn.call(method, params)
    return time.monotonic() - started, answer


def clean(gm: GitMode, worktree: Path) -> str:
    return gm.git("status", "--porcelain", "--untracked-files=all", cwd=worktree)


def test_hello_and_another_sessions_edit_answer_during_an_open(slow: Slow) -> None:
    gm = slow.gm
    gm.cli.ok("daemon", "start", "--repo", str(gm.repo))
    socket = gm.socket()
    slow.open_gate()
    with Client(socket) as setup:
        setup.call("session.open", {"name": "other"})
    slow.close_gate()
    opened: list[tuple[float, Any]] = []

    def open_big() -> None:
        with Client(socket) as conn:
            opened.append(timed(conn, "session.open", {"name": "big"}))

    thread = threading.Thread(target=open_big)
    hellos: list[float] = []
    edits: list[tuple[float, Any]] = []
    with Client(socket) as probe:
        thread.start()
        while not slow.filters():  # git has reached the file whose checkout is held up
            assert thread.is_alive(), opened
            time.sleep(0.01)
        for n in range(5):
            hellos.append(timed(probe, "hello", {"protocol": 1})[0])
            request = edit("a.py", f"'Hello{'!' * n}, '", f"'Hello{'!' * (n + 1)}, '")
            edits.append(timed(probe, "apply", {"session": "other", "request": request}))
        # All of it answered while the open waits on the checkout (held up until now).
        assert thread.is_alive() and opened == []
        slow.open_gate()
        thread.join(timeout=60)

    [(_, answer)] = opened
    assert answer["ready"] is True
    # Generous bounds on a loaded machine; the real figures are in bench/scale_bench.py.
    assert max(hellos) < AT_ONCE
    assert all(a["status"] == "applied" for _, a in edits)
    assert max(t for t, _ in edits) < AT_ONCE
    worktree = Path(answer["worktree"])
    assert (worktree / "slow.txt").read_text() == "slow\n"
    assert clean(gm, worktree) == ""


def test_an_open_that_does_not_wait_answers_at_once_and_its_first_request_waits(
    slow: Slow,
) -> None:
    gm = slow.gm
    gm.cli.ok("daemon", "start", "--repo", str(gm.repo))
    with Client(gm.socket()) as conn:
        took, opened = timed(conn, "session.open", {"name": "s", "wait": False})
        assert took < 1.5 * AT_ONCE and opened["ready"] is False  # an open does more than hello
        worktree = Path(opened["worktree"])
        base = rev(gm.repo, "redline/s")
        # Written by another tool while git checks the worktree out.
        (worktree / "notes.txt").write_text("written during the checkout\n")

        request = edit("a.py", "'Hello, '", "'Hi, '")
        timer = slow.open_gate_later()
        took, answer = timed(conn, "apply", {"session": "s", "request": request})
        timer.join()
        status = conn.call("session.status", {"name": "s"})

    assert answer["status"] == "applied", answer
    assert took >= HELD * 0.9  # it waited for the checkout
    assert [c["source"] for c in answer["commits"]] == ["external", "agent"]
    external, agent = commit_records(gm.repo, "redline/s", base)
    assert external.files == ["notes.txt"] and agent.files == ["a.py"]
    assert status["ready"] is True and status["error"] is None
    assert (worktree / "slow.txt").read_text() == "slow\n"
    assert clean(gm, worktree) == ""


def test_a_close_during_the_checkout_stops_git_and_removes_the_worktree(slow: Slow) -> None:
    gm = slow.gm
    gm.cli.ok("daemon", "start", "--repo", str(gm.repo))
    with Client(gm.socket()) as conn:
        opened = conn.call("session.open", {"name": "s", "wait": False})
        assert opened["ready"] is False
        closed = conn.call("session.close", {"name": "s", "delete_branch": True, "force": True})
        assert closed["closed"] is True
        assert conn.call("session.list") == []
    assert not Path(opened["worktree"]).exists()
    assert "redline/s" not in gm.git("worktree", "list")
    assert slow.filters() == []  # git and its filter were stopped, not left running


def test_a_checkout_cut_short_is_done_again_when_the_daemon_starts(gm: GitMode) -> None:
    repo, layout = main_repository(gm.repo)
    # What a daemon killed during the checkout leaves: registered, marked, not filled.
    session = open_session(repo, layout, "s", None, background=True)
    worktree = Path(session.worktree)
    assert checkout_due(layout, "s") and not (worktree / "a.py").exists()

    code, answer = gm.cli.apply("s", edit("a.py", "'Hello, '", "'Hi, '"))

    assert code == 0 and answer["status"] == "applied", answer
    assert [c["source"] for c in answer["commits"]] == ["agent"]
    assert not checkout_due(layout, "s")
    assert clean(gm, worktree) == ""


def test_the_daemon_never_sets_the_process_umask_while_a_checkout_runs(
    gm: GitMode, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The umask is the whole process's. The daemon used to set 0177 for a moment to
    # make its socket, while git, started on another thread to check a cut-short
    # worktree out again, could be creating files: a script lost its executable bit
    # and the session's first request committed that as an external change.
    set_to: list[int] = []
    real_umask = os.umask

    def recording(mask: int) -> int:
        set_to.append(mask)
        return real_umask(mask)

    monkeypatch.setattr(os, "umask", recording)
    repo, layout = main_repository(gm.repo)
    session = open_session(repo, layout, "s", None, background=True)

    code, answer = gm.cli.apply("s", edit("a.py", "'Hello, '", "'Hi, '"))

    assert code == 0 and [c["source"] for c in answer["commits"]] == ["agent"], answer
    assert set_to == []
    assert os.access(Path(session.worktree) / "tool.sh", os.X_OK)


def test_the_command_answers_at_once_and_full_waits_quietly_when_piped(slow: Slow) -> None:
    gm = slow.gm
    started = time.monotonic()
    opened = gm.cli.json("session", "open", "--name", "quick", "--json", "--repo", str(gm.repo))
    took = time.monotonic() - started
    assert opened["ready"] is False and took < AT_ONCE + 4  # daemon start included
    timer = slow.open_gate_later()
    started = time.monotonic()
    said = gm.cli.run("session", "open", "--name", "full", "--full", "--repo", str(gm.repo))
    took = time.monotonic() - started
    timer.join()
    assert took >= HELD * 0.9  # it waited for the checkout
    assert said.returncode == 0, said.stderr
    assert said.stderr == ""  # no progress when stderr is not a terminal
    assert "checkout:" not in said.stdout
    worktree = Path(said.stdout.split("worktree:")[1].split()[0])
    assert (worktree / "slow.txt").read_text() == "slow\n"
    assert os.path.isdir(worktree)
