"""``redline undo`` and ``redline land`` with the session served by a running daemon.

Undo goes through the daemon (its ``undo`` method, in turn with the session's
requests); land reads the session's branch in its own process and, with
``--close``, closes the session through the daemon that serves it.
"""

from __future__ import annotations

import json
from pathlib import Path

from gitmode_fixtures import GitMode, note_of, porcelain, rev
from support.requests import edit

B_OLD, B_NEW = "VALUE = 1", "VALUE = 2"


def test_undo_through_the_daemon(gm: GitMode) -> None:
    opened = gm.cli.open_session("fix")
    worktree = Path(opened["worktree"])
    _, first = gm.cli.apply("fix", edit("b.py", B_OLD, B_NEW))
    _, second = gm.cli.apply("fix", edit("a.py", "'Hello, ' + name", "'Hi, ' + name"))
    pid = gm.cli.pid()
    [made] = first["commits"]

    out = gm.cli.ok("undo", made["edit"], "--repo", str(gm.repo))
    tip = rev(gm.repo, "redline/fix")
    assert out.strip() == (
        f"undid edit {made['edit']} (commit {made['commit'][:12]}) in session fix: commit "
        f"{tip[:12]} (edit {note_of(gm.repo, tip)['edit']}) reverts b.py"
    )
    assert gm.cli.pid() == pid  # the running daemon did it
    assert note_of(gm.repo, tip)["undoes"] == {"edit": made["edit"], "commit": made["commit"]}
    assert (worktree / "b.py").read_text() == "VALUE = 1\n"
    assert "'Hi, ' + name" in (worktree / "a.py").read_text()
    assert porcelain(worktree) == ""

    # the session goes on from there
    code, third = gm.cli.apply("fix", edit("b.py", "VALUE = 1", "VALUE = 3"))
    assert code == 0 and third["status"] == "applied"

    # an edit whose lines a later edit changed: refused, exit 1, nothing changed
    later = third["commits"][0]
    undo_of_undo = gm.cli.run("undo", note_of(gm.repo, tip)["edit"], "--json")
    assert undo_of_undo.returncode == 1
    result = json.loads(undo_of_undo.stdout)
    assert result["status"] == "conflict"
    assert result["conflicts"] == [
        {
            "path": "b.py",
            "start_line": 1,
            "end_line": 1,
            "changed_by": [{"edit": later["edit"], "commit": later["commit"]}],
        }
    ]
    assert rev(gm.repo, "redline/fix") == later["commit"]
    refused = gm.cli.run("undo", note_of(gm.repo, tip)["edit"], "--session", "fix")
    assert refused.returncode == 1
    assert f"  b.py line 1, changed since by edit {later['edit']}" in refused.stderr

    missing = gm.cli.run("undo", "0123456789ab", "--session", "fix")
    assert missing.returncode == 1
    assert "session 'fix' has no edit '0123456789ab'" in missing.stderr
    assert second["status"] == "applied"


def test_land_and_close_a_session_the_daemon_serves(gm: GitMode) -> None:
    gm.cli.open_session("fix")
    _, applied = gm.cli.apply("fix", edit("b.py", B_OLD, B_NEW))
    pid = gm.cli.pid()
    out = gm.cli.ok("land", "fix", "--close", "--squash", "--repo", str(gm.repo))
    assert "landed session fix on main (squash): 1 commit(s)" in out
    assert "closed session fix (branch redline/fix kept)" in out
    assert gm.cli.pid() == pid
    assert gm.cli.json("session", "list", "--json") == []
    assert (gm.repo / "b.py").read_text() == "VALUE = 2\n"
    note = note_of(gm.repo, "HEAD")
    assert [e["edit"] for e in note["squashed"]] == [applied["commits"][0]["edit"]]
    assert porcelain(gm.repo) == ""
