"""session.open: git checks the worktree out in a process of its own, beside the daemon.

A checkout made slow on purpose — a smudge filter that sleeps (``SLOW`` seconds)
on one file, so the test does not depend on the machine's speed — must not hold
up ``hello`` or another session's edit; an open that does not wait answers at
once and the session's first request waits for the checkout, then finds the
worktree equal to the branch (what was written meanwhile is an external commit);
a close during the checkout stops git; a daemon that starts and finds a checkout
cut short does it again.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from gitmode_fixtures import GitMode, commit_records, rev
from redline.daemon.client import Client
from redline.gitops.repo import main_repository
from redline.gitops.session import checkout_due, open_session

pytestmark = pytest.mark.slow

SLOW = 3.017  # seconds the filter sleeps: also how its process is recognised
SMUDGE = f"sleep {SLOW}; cat"


@pytest.fixture
def slow(gm: GitMode) -> GitMode:
    """A repository whose checkout takes at least SLOW seconds."""
    gm.git("config", "filter.slow.smudge", SMUDGE)
    (gm.repo / ".gitattributes").write_text("slow.txt filter=slow\n")
    (gm.repo / "slow.txt").write_text("slow\n")
    gm.git("add", ".gitattributes", "slow.txt")
    gm.git("commit", "-q", "-m", "a file whose checkout takes a while")
    return gm


def edit(path: str, old: str, new: str) -> dict[str, Any]:
    return {"tool": "edit", "path": path, "old_string": old, "new_string": new}


def timed(conn: Client, method: str, params: dict[str, Any]) -> tuple[float, Any]:
    started = time.monotonic()
    answer = conn.call(method, params)
    return time.monotonic() - started, answer


def sleepers() -> list[int]:
    """Processes running the slow filter's sleep."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if str(SLOW).encode() in cmdline and b"sleep" in cmdline:
            found.append(int(entry.name))
    return found


def clean(gm: GitMode, worktree: Path) -> str:
    return gm.git("status", "--porcelain", "--untracked-files=all", cwd=worktree)


def test_hello_and_another_sessions_edit_answer_during_an_open(slow: GitMode) -> None:
    gm = slow
    gm.cli.ok("daemon", "start", "--repo", str(gm.repo))
    socket = gm.socket()
    with Client(socket) as setup:
        setup.call("session.open", {"name": "other"})
    opened: list[tuple[float, Any]] = []

    def open_big() -> None:
        with Client(socket) as conn:
            opened.append(timed(conn, "session.open", {"name": "big"}))

    thread = threading.Thread(target=open_big)
    hellos: list[float] = []
    edits: list[tuple[float, Any]] = []
    with Client(socket) as probe:
        thread.start()
        time.sleep(0.3)
        n = 0
        while thread.is_alive() and n < 40:
            hellos.append(timed(probe, "hello", {"protocol": 1})[0])
            request = edit("a.py", f"'Hello{'!' * n}, '", f"'Hello{'!' * (n + 1)}, '")
            edits.append(timed(probe, "apply", {"session": "other", "request": request}))
            n += 1
            time.sleep(0.1)
        thread.join(timeout=60)

    [(took, answer)] = opened
    assert took >= SLOW * 0.9 and answer["ready"] is True
    # Generous bounds on a loaded machine; the real figures are in bench/scale_bench.py.
    assert hellos and max(hellos) < SLOW / 3
    assert edits and all(a["status"] == "applied" for _, a in edits)
    assert max(t for t, _ in edits) < SLOW / 3
    worktree = Path(answer["worktree"])
    assert (worktree / "slow.txt").read_text() == "slow\n"
    assert clean(gm, worktree) == ""


def test_an_open_that_does_not_wait_answers_at_once_and_its_first_request_waits(
    slow: GitMode,
) -> None:
    gm = slow
    gm.cli.ok("daemon", "start", "--repo", str(gm.repo))
    with Client(gm.socket()) as conn:
        took, opened = timed(conn, "session.open", {"name": "s", "wait": False})
        assert took < SLOW / 2 and opened["ready"] is False
        worktree = Path(opened["worktree"])
        base = rev(gm.repo, "redline/s")
        # Written by another tool while git checks the worktree out.
        (worktree / "notes.txt").write_text("written during the checkout\n")

        request = edit("a.py", "'Hello, '", "'Hi, '")
        answer = conn.call("apply", {"session": "s", "request": request})
        status = conn.call("session.status", {"name": "s"})

    assert answer["status"] == "applied", answer
    assert [c["source"] for c in answer["commits"]] == ["external", "agent"]
    external, agent = commit_records(gm.repo, "redline/s", base)
    assert external.files == ["notes.txt"] and agent.files == ["a.py"]
    assert status["ready"] is True and status["error"] is None
    assert (worktree / "slow.txt").read_text() == "slow\n"
    assert clean(gm, worktree) == ""


def test_a_close_during_the_checkout_stops_git_and_removes_the_worktree(slow: GitMode) -> None:
    gm = slow
    gm.cli.ok("daemon", "start", "--repo", str(gm.repo))
    with Client(gm.socket()) as conn:
        opened = conn.call("session.open", {"name": "s", "wait": False})
        assert opened["ready"] is False
        closed = conn.call("session.close", {"name": "s", "delete_branch": True, "force": True})
        assert closed["closed"] is True
        assert conn.call("session.list") == []
    assert not Path(opened["worktree"]).exists()
    assert "redline/s" not in gm.git("worktree", "list")
    assert sleepers() == []  # git and its filter were stopped, not left running


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


def test_the_command_answers_at_once_and_full_waits_quietly_when_piped(slow: GitMode) -> None:
    gm = slow
    started = time.monotonic()
    opened = gm.cli.json("session", "open", "--name", "quick", "--json", "--repo", str(gm.repo))
    took = time.monotonic() - started
    assert opened["ready"] is False and took < SLOW + 2  # daemon start included
    said = gm.cli.run("session", "open", "--name", "full", "--full", "--repo", str(gm.repo))
    assert said.returncode == 0, said.stderr
    assert said.stderr == ""  # no progress when stderr is not a terminal
    assert "checkout:" not in said.stdout
    worktree = Path(said.stdout.split("worktree:")[1].split()[0])
    assert (worktree / "slow.txt").read_text() == "slow\n"
    assert os.path.isdir(worktree)
