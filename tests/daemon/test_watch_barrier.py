"""A change written just before a request is committed before that request's edit.

File events reach the daemon a moment after the write. The snapshot waits for a
barrier (a file the watcher makes and sees itself) so that every change made
before the request is in it: the external commit right before the edit holds the
change, never a later one. The barrier's file is never committed.
"""

from __future__ import annotations

from pathlib import Path

from gitmode_fixtures import GitMode, commit_records, rev
from redline.daemon.client import Client

ROUNDS = 30


def test_an_external_change_made_just_before_a_request_is_committed_before_its_edit(
    gm: GitMode,
) -> None:
    gm.cli.ok("daemon", "start", "--repo", str(gm.repo))
    late = []
    with Client(gm.socket()) as conn:
        worktree = Path(conn.call("session.open", {"name": "s"})["worktree"])
        conn.call(
            "apply",
            {"session": "s", "request": {"tool": "write", "path": "g.txt", "content": "0\n"}},
        )
        for i in range(ROUNDS):
            base = rev(gm.repo, "redline/s")
            (worktree / "c.txt").write_text(f"external {i}\n")  # another tool, just now
            request = {"tool": "write", "path": "g.txt", "content": f"{i + 1}\n"}
            answer = conn.call("apply", {"session": "s", "request": request})
            assert answer["status"] == "applied", answer
            records = commit_records(gm.repo, "redline/s", base)
            if [r.files for r in records] != [["c.txt"], ["g.txt"]]:
                late.append((i, [r.files for r in records]))
    assert late == []
    assert gm.git("status", "--porcelain", "--untracked-files=all", cwd=worktree) == ""
    listed = gm.git("ls-tree", "-r", "--name-only", "redline/s")
    assert ".redline-barrier" not in listed


def test_a_barrier_left_by_a_killed_daemon_is_removed_when_the_session_is_watched_again(
    gm: GitMode,
) -> None:
    # A daemon killed between making its barrier file and removing it leaves the file in
    # the worktree; the next daemon removes it as it watches the session.
    gm.cli.ok("daemon", "start", "--repo", str(gm.repo))
    with Client(gm.socket()) as conn:
        worktree = Path(conn.call("session.open", {"name": "s"})["worktree"])
    gm.cli.ok("daemon", "stop", "--repo", str(gm.repo))
    (worktree / ".redline-barrier-0123456789ab").write_bytes(b"")
    gm.cli.ok("daemon", "start", "--repo", str(gm.repo))
    with Client(gm.socket()) as conn:  # the daemon resumes the open session
        answer = conn.call(
            "apply",
            {"session": "s", "request": {"tool": "write", "path": "g.txt", "content": "1\n"}},
        )
        assert answer["status"] == "applied", answer
    assert gm.git("status", "--porcelain", "--untracked-files=all", cwd=worktree) == ""
