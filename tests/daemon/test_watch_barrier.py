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
