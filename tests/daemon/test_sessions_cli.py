"""A session's life through the CLI: closed with its branch kept, still readable, resumed.

``redline log`` reads a closed session's kept branch and notes; ``redline
session open --name NAME`` on an existing ``redline/NAME`` resumes it in a new
worktree, and its history continues.
"""

from __future__ import annotations

import json
from pathlib import Path

from gitmode_fixtures import GitMode, branch_commits, git, porcelain, rev
from support.requests import edit


def test_a_closed_session_keeps_its_history_and_resumes(gm: GitMode) -> None:
    base = rev(gm.repo, "HEAD")
    first = gm.cli.open_session("fix")
    _, one = gm.cli.apply("fix", edit("b.py", "VALUE = 1", "VALUE = 2"))
    (Path(first["worktree"]) / "c.txt").write_text("changed outside\n")
    _, two = gm.cli.apply("fix", edit("a.py", "'Hello, ' + name", "'Hi, ' + name"))
    open_log = gm.cli.json("log", "fix", "--json")
    assert len(open_log) == 3

    gm.cli.ok("session", "close", "fix")
    assert not Path(first["worktree"]).exists()
    assert gm.cli.json("session", "list", "--json") == []

    # Closed: the history is still there, read from the kept branch and its notes.
    assert gm.cli.json("log", "fix", "--json") == open_log
    text = gm.cli.ok("log", "fix")
    assert text.splitlines()[0] == (
        "session fix is closed; its branch redline/fix is kept "
        "(`redline session open --name fix` resumes it)"
    )
    assert text.splitlines()[1].startswith(two["commits"][-1]["commit"][:12])

    # Opening it again resumes it: a new worktree on the same branch.
    out = gm.cli.ok("session", "open", "--name", "fix")
    lines = dict(line.split(":", 1) for line in out.splitlines())
    assert lines["session"].strip() == "fix"
    assert lines["branch"].strip() == "redline/fix"
    assert lines["resumed"].strip() == (
        "redline/fix existed, so the session continues its history "
        "(3 earlier commit(s); `redline log fix` lists them)"
    )
    worktree = Path(lines["worktree"].strip())
    assert (worktree / "b.py").read_text() == "VALUE = 2\n"
    assert (worktree / "c.txt").read_text() == "changed outside\n"
    assert porcelain(worktree) == ""
    listed = gm.cli.json("session", "list", "--json")
    assert [(s["name"], s["base"], s["edits"]) for s in listed] == [("fix", base, 3)]

    code, three = gm.cli.apply("fix", edit("b.py", "VALUE = 2", "VALUE = 3"))
    assert code == 0 and three["status"] == "applied"
    assert [c["source"] for c in three["commits"]] == ["agent"]  # nothing external crept in
    entries = gm.cli.json("log", "fix", "--json")
    assert [e["commit"] for e in entries] == [
        c["commit"] for c in [*three["commits"], *reversed(two["commits"]), *one["commits"]]
    ]
    assert branch_commits(gm.repo, "redline/fix", base) == [e["commit"] for e in reversed(entries)]
    assert gm.git("show", "redline/fix:b.py") == "VALUE = 3\n"


def test_resuming_says_so_in_json(gm: GitMode) -> None:
    gm.cli.open_session("s")
    gm.cli.apply("s", edit("b.py", "VALUE = 1", "VALUE = 2"))
    gm.cli.ok("session", "close", "s")
    opened = gm.cli.open_session("s")
    assert opened["resumed"] is True
    assert opened["edits"] == 1
    assert opened["base"] == rev(gm.repo, "main")
    fresh = gm.cli.open_session("t")
    assert fresh["resumed"] is False and fresh["edits"] == 0


def test_a_deleted_branch_leaves_nothing_to_read_or_resume(gm: GitMode) -> None:
    gm.cli.open_session("gone")
    gm.cli.ok("session", "close", "gone", "--delete-branch")
    proc = gm.cli.run("log", "gone")
    assert proc.returncode == 1
    assert "no session named 'gone': none is open and there is no branch redline/gone" in (
        proc.stderr
    )
    assert gm.cli.open_session("gone")["resumed"] is False


def test_resuming_a_branch_checked_out_in_the_users_worktree_is_refused(gm: GitMode) -> None:
    gm.cli.open_session("mine")
    gm.cli.ok("session", "close", "mine")
    gm.cli.ok("daemon", "stop")
    gm.git("switch", "-q", "redline/mine")

    proc = gm.cli.run("session", "open", "--name", "mine")

    assert proc.returncode == 1
    assert proc.stderr == (
        f"redline: branch redline/mine is checked out in your own worktree ({gm.repo}), so the "
        "session cannot resume in a worktree of its own; switch that worktree to another "
        "branch (`git switch -`), or pick another session name\n"
    )
    assert gm.cli.status()["running"] is False  # the daemon started for it was stopped
    assert json.loads(gm.cli.ok("session", "list", "--json")) == []
    assert git(gm.repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    # Still readable while it is checked out there.
    assert gm.cli.ok("log", "mine").startswith("session mine is closed")
