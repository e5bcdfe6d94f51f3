"""A daemon killed (SIGKILL) at any point of a commit recovers on restart.

``REDLINE_FAULT=<point>`` makes the real daemon kill itself at that point of
the first request that reaches it. The client never gets an answer; after a
normal restart the edit is either applied whole (commit, note, worktree file,
index) or not at all, the journal is empty and git finds nothing wrong. A
randomised run kills the daemon at an arbitrary moment between acknowledged
edits: none of them may be lost.
"""

from __future__ import annotations

import json
import random
import threading
from pathlib import Path
from typing import Any

import pytest

from gitmode_fixtures import (
    CommitRecord,
    GitMode,
    assert_fsck_clean,
    commit_records,
    kill_daemon,
    porcelain,
    rev,
    wait_dead,
)
from redline.daemon.client import Client
from redline.daemon.protocol import RpcError
from redline.gitops import journal, refs
from support.requests import edit

# The daemon that dies is a real process: one started with REDLINE_FAULT kills itself
# (``support.daemon`` starts such a daemon as a process), and the random-moment test
# kills its daemons (``daemon_process``). The restart that recovers runs the same
# ``redline daemon run`` on a thread of the test process (``support.daemon``).
pytestmark = pytest.mark.slow

FAULTS = [
    "before-journal",
    "after-journal",
    "after-branch",
    "after-notes",
    "after-files",
    "after-clear",
]
# Once the journal is written the request is rolled forward; before, it never happened.
ROLLED_FORWARD = {point: point != "before-journal" for point in FAULTS}


def journal_dir(gm: GitMode) -> Path:
    return gm.repo / ".git" / "redline" / "journal"


def pending(gm: GitMode) -> list[str]:
    """The sessions whose journal holds an unfinished request."""
    return sorted(
        p.stem for p in journal_dir(gm).iterdir() if journal.read(journal_dir(gm), p.stem)
    )


def unreachable_entry(session: str, tip: str) -> journal.JournalEntry:
    """A journal entry moving the session's branch from ``tip`` to a commit that does not exist."""
    return journal.JournalEntry(
        session=session,
        request="r1",
        ref=f"refs/heads/redline/{session}",
        old=tip,
        new="1" * 40,
        notes={},
        files={},
    )


def assert_every_commit_has_its_note(records: list[CommitRecord]) -> None:
    for record in records:
        assert record.note is not None, f"{record.commit} has no note"
        assert record.trailers == [record.note["edit"]], record


@pytest.mark.parametrize("external", [False, True], ids=["edit-only", "with-external-change"])
@pytest.mark.parametrize("point", FAULTS)
def test_a_crash_at_each_point_is_recovered(gm: GitMode, point: str, external: bool) -> None:
    base = rev(gm.repo, "HEAD")
    wt = Path(gm.cli.open_session("s")["worktree"])
    gm.cli.ok("daemon", "stop", "--repo", str(gm.repo))
    if external:
        # Made while no daemon watches: the first request walks the worktree and finds it.
        (wt / "c.txt").write_text("alpha\nchanged by another tool\n")
    faulty = {**gm.env, "REDLINE_FAULT": point}
    gm.cli.ok("daemon", "start", "--repo", str(gm.repo), env=faulty)
    pid = gm.cli.pid()
    assert pid is not None
    with Client(gm.socket()) as conn, pytest.raises((RpcError, OSError)):
        conn.call("apply", {"session": "s", "request": edit("b.py", "VALUE = 1", "VALUE = 2")})
    wait_dead(pid)
    assert pending(gm) == ([] if point in ("before-journal", "after-clear") else ["s"])

    # A normal restart (no REDLINE_FAULT) recovers before it serves anything.
    gm.cli.ok("daemon", "start", "--repo", str(gm.repo))
    listed = gm.cli.json("session", "list", "--json", "--repo", str(gm.repo))
    assert [s["name"] for s in listed] == ["s"]
    assert gm.cli.pid() != pid
    assert pending(gm) == []

    records = commit_records(gm.repo, "redline/s", base)
    assert_every_commit_has_its_note(records)
    applied = ROLLED_FORWARD[point]
    edited = [r for r in records if r.note and r.note["source"] == "agent"]
    if applied:
        [commit] = edited
        assert commit.files == ["b.py"]
        assert commit.note is not None and commit.note["operations"][0]["path"] == "b.py"
        assert records[-1] == commit
        assert (wt / "b.py").read_text() == "VALUE = 2\n"
        assert [r.note["source"] for r in records if r.note] == (
            ["external", "agent"] if external else ["agent"]
        )
        assert porcelain(wt) == ""
    else:
        assert records == []
        assert (wt / "b.py").read_text() == "VALUE = 1\n"
        assert porcelain(wt) == (" M c.txt\n" if external else "")
    assert gm.git("show", "redline/s:b.py") == (wt / "b.py").read_text()
    assert listed[0]["edits"] == len(records)

    # The next request sees a worktree equal to the branch tip: no stray external commit.
    code, result = gm.cli.apply("s", edit("a.py", "'Hello, ' + name", "'Hi, ' + name"))
    assert code == 0, result
    sources = [c["source"] for c in result["commits"]]
    assert sources == (["external", "agent"] if external and not applied else ["agent"])
    assert result["commits"][-1]["paths"] == ["a.py"]
    assert porcelain(wt) == ""
    assert pending(gm) == []
    assert_every_commit_has_its_note(commit_records(gm.repo, "redline/s", base))
    assert_fsck_clean(gm.repo)


@pytest.mark.daemon_process
def test_acknowledged_edits_survive_a_kill_at_a_random_moment(gm: GitMode) -> None:
    lines = 400
    (gm.repo / "items.txt").write_text("".join(f"item {i}: todo\n" for i in range(lines)))
    gm.git("add", "items.txt")
    gm.git("commit", "-q", "-m", "items")
    base = rev(gm.repo, "HEAD")
    wt = Path(gm.cli.open_session("s")["worktree"])
    delays = random.Random(20260101)  # when each round's kill comes
    writes = random.Random(7)  # when another tool writes into the worktree too
    acknowledged: dict[int, dict[str, Any]] = {}
    external_writes = 0
    i = 0
    for round_ in range(4):
        pid = gm.cli.pid()
        assert pid is not None
        delay = delays.uniform(0.2, 0.8)
        killer = threading.Timer(delay, kill_daemon, args=(pid,))
        with Client(gm.socket()) as conn:
            killer.start()
            try:
                while i < lines:
                    if writes.random() < 0.2:
                        external_writes += 1
                        (wt / "other.txt").write_text(f"external write {external_writes}\n")
                    request = edit("items.txt", f"item {i}: todo\n", f"item {i}: done\n")
                    result = conn.call("apply", {"session": "s", "request": request})
                    assert result["status"] == "applied", result
                    acknowledged[i] = result
                    i += 1
            except (RpcError, OSError):
                pass
            finally:
                killer.join()
        wait_dead(pid)
        assert i < lines, f"round {round_}: the daemon was not killed in time"

        gm.cli.ok("daemon", "start", "--repo", str(gm.repo))  # restart and recover
        assert pending(gm) == []
        # Only a write of the other tool that no request committed yet may be pending.
        assert porcelain(wt) in ("", " M other.txt\n", "?? other.txt\n")
        tip_text = gm.git("show", "redline/s:items.txt")
        assert (wt / "items.txt").read_text() == tip_text
        if f"item {i}: done\n" in tip_text:
            i += 1  # the unacknowledged edit was rolled forward whole

        records = commit_records(gm.repo, "redline/s", base)
        assert_every_commit_has_its_note(records)
        by_commit = {r.commit: r for r in records}
        for n, result in acknowledged.items():
            for info in result["commits"]:
                record = by_commit.get(info["commit"])
                assert record is not None, f"acknowledged edit {n} was lost"
                assert record.note is not None and record.note["edit"] == info["edit"]
            assert f"item {n}: done\n" in tip_text
        done = tip_text.count(": done\n")
        assert done == i
        assert len([r for r in records if r.note and r.note["source"] == "agent"]) == done

    assert len(acknowledged) >= 4
    code, result = gm.cli.apply("s", edit("items.txt", f"item {i}: todo\n", f"item {i}: done\n"))
    assert code == 0, result
    assert porcelain(wt) == ""
    assert_every_commit_has_its_note(commit_records(gm.repo, "redline/s", base))
    assert_fsck_clean(gm.repo)


def _killed_after_journal(gm: GitMode) -> Path:
    """A daemon killed just after journalling an edit of b.py; the session's worktree."""
    gm.cli.ok(
        "daemon", "start", "--repo", str(gm.repo), env={**gm.env, "REDLINE_FAULT": "after-journal"}
    )
    pid = gm.cli.pid()
    assert pid is not None
    with Client(gm.socket()) as conn:
        wt = Path(conn.call("session.open", {"name": "s"})["worktree"])
        with pytest.raises((RpcError, OSError)):
            conn.call("apply", {"session": "s", "request": edit("b.py", "VALUE = 1", "VALUE = 2")})
    wait_dead(pid)
    return wt


def test_locks_and_temporary_files_of_a_killed_step_do_not_block_recovery(gm: GitMode) -> None:
    """A kill inside a step (a ref update, the index write, a file write) leaves its lock
    or temporary file behind: those provably the request's own are removed."""
    base = rev(gm.repo, "HEAD")
    wt = _killed_after_journal(gm)
    entry = journal.read(journal_dir(gm), "s")
    assert entry is not None
    git_dir = gm.repo / ".git"
    leftovers = {
        git_dir / "worktrees" / "redline-s" / "index.lock": b"",
        # killed after writing the new id into the lock, before renaming it
        git_dir / "refs" / "heads" / "redline" / "s.lock": f"{entry.new}\n".encode(),
        wt / ".b.py.k3j4h5g6.redline-tmp": b"VALUE = 2\n",
    }
    for path, data in leftovers.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)

    gm.cli.ok("daemon", "start", "--repo", str(gm.repo))

    assert [p for p in leftovers if p.exists()] == []
    assert pending(gm) == []
    [record] = commit_records(gm.repo, "redline/s", base)
    assert record.files == ["b.py"] and record.note is not None
    assert (wt / "b.py").read_text() == "VALUE = 2\n"
    assert porcelain(wt) == ""
    code, result = gm.cli.apply("s", edit("a.py", "'Hello, ' + name", "'Hi, ' + name"))
    assert code == 0 and [c["source"] for c in result["commits"]] == ["agent"]
    assert_fsck_clean(gm.repo)


@pytest.mark.parametrize("ref", ["refs/notes/redline", "refs/heads/redline/s"])
def test_a_lock_git_may_hold_is_never_removed_and_is_named_in_gits_words(
    gm: GitMode, ref: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The lock is held for good: waiting LOCK_WAIT (1 s) for it to go proves nothing
    # here (tests/gitops/test_refs.py proves the wait).
    monkeypatch.setattr(refs, "LOCK_WAIT", 0.05)
    base = rev(gm.repo, "HEAD")
    wt = _killed_after_journal(gm)
    lock = gm.repo / ".git" / f"{ref}.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_bytes(b"")  # a git process's, as far as anyone can tell

    code, result = gm.cli.apply("s", edit("a.py", "'Hello, ' + name", "'Hi, ' + name"))

    assert code != 0
    assert lock.exists()
    text = json.dumps(result) if result else ""
    assert f"unable to create '{lock}': file exists" in text
    assert "Another git process seems to be running" in text and f"rm '{lock}'" in text
    assert "retry the request" not in text
    assert pending(gm) == ["s"]
    assert (wt / "a.py").read_text() == gm.git("show", "HEAD:a.py")

    lock.unlink()  # what the message says to do
    code, result = gm.cli.apply("s", edit("a.py", "'Hello, ' + name", "'Hi, ' + name"))

    assert code == 0, result
    assert pending(gm) == []
    records = commit_records(gm.repo, "redline/s", base)
    assert [r.files for r in records] == [["b.py"], ["a.py"]]  # the interrupted edit, then this
    assert_every_commit_has_its_note(records)
    assert (wt / "b.py").read_text() == "VALUE = 2\n" and porcelain(wt) == ""
    assert_fsck_clean(gm.repo)


def test_a_torn_journal_never_happened(gm: GitMode) -> None:
    base = rev(gm.repo, "HEAD")
    gm.cli.ok(
        "daemon", "start", "--repo", str(gm.repo), env={**gm.env, "REDLINE_FAULT": "before-journal"}
    )
    pid = gm.cli.pid()
    assert pid is not None
    with Client(gm.socket()) as conn:
        wt = Path(conn.call("session.open", {"name": "s"})["worktree"])
        with pytest.raises((RpcError, OSError)):
            conn.call("apply", {"session": "s", "request": edit("b.py", "VALUE = 1", "VALUE = 2")})
    wait_dead(pid)
    # Killed while writing the journal: the record is cut short (as on a kill inside a
    # write of more than a page), so it never completed and no ref had moved.
    tip = rev(gm.repo, "redline/s")
    journal.write(journal_dir(gm), unreachable_entry("s", tip))
    record = journal_dir(gm) / "s.journal"
    record.write_bytes(record.read_bytes()[:-10])
    assert pending(gm) == []

    gm.cli.ok("daemon", "start", "--repo", str(gm.repo))

    assert pending(gm) == []
    assert commit_records(gm.repo, "redline/s", base) == []
    assert (wt / "b.py").read_text() == "VALUE = 1\n"
    assert porcelain(wt) == ""


def test_a_session_that_cannot_be_recovered_does_not_keep_the_daemon_down(gm: GitMode) -> None:
    gm.cli.open_session("broken")
    good = Path(gm.cli.open_session("good")["worktree"])
    gm.cli.ok("daemon", "stop", "--repo", str(gm.repo))
    tip = rev(gm.repo, "redline/broken")
    # A journal naming a commit that is not in the object database cannot be rolled forward.
    journal.write(journal_dir(gm), unreachable_entry("broken", tip))

    gm.cli.ok("daemon", "start", "--repo", str(gm.repo))
    listed = gm.cli.json("session", "list", "--json", "--repo", str(gm.repo))
    assert [s["name"] for s in listed] == ["broken", "good"]
    code, result = gm.cli.apply("good", edit("b.py", "VALUE = 1", "VALUE = 2"))
    assert code == 0 and result["status"] == "applied"
    assert (good / "b.py").read_text() == "VALUE = 2\n"

    proc = gm.cli.run(
        "apply",
        "--session",
        "broken",
        "--repo",
        str(gm.repo),
        input=json.dumps(edit("b.py", "VALUE = 1", "VALUE = 2")),
    )
    assert proc.returncode == 1
    failed = json.loads(proc.stdout)  # every apply path answers on stdout
    assert failed["status"] == "failed"
    assert "redline/broken" in failed["error"]  # says which branch it could not move
    assert gm.cli.status()["running"] is True
    assert rev(gm.repo, "redline/broken") == tip
