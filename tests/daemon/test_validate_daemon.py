"""Validation through the daemon: the request's ``validate`` field crosses the socket, and
``redline apply --session`` exits 1 when the edit would leave the file unparseable."""

from __future__ import annotations

from pathlib import Path

from gitmode_fixtures import GitMode, branch_commits, note_of, rev


def test_a_session_edit_that_would_not_parse_exits_1_and_commits_nothing(gm: GitMode) -> None:
    base = rev(gm.repo, "HEAD")
    opened = gm.cli.open_session("v")
    broken = {
        "tool": "edit",
        "path": "a.py",
        "old_string": "'Hello, ' + name",
        "new_string": "('Hello, ' + name",
        "validate": True,
    }
    code, result = gm.cli.apply("v", broken)
    assert (code, result["status"]) == (1, "validation_failed")
    assert result["validation"]["language"] == "python"
    assert result["validation"]["errors"][0]["line"] == 2
    assert branch_commits(gm.repo, "redline/v", base, env=gm.env) == []
    assert "Hello, ' + name" in (Path(opened["worktree"]) / "a.py").read_text()

    code, fixed = gm.cli.apply("v", {**broken, "new_string": "('Hello, ' + name)"})
    assert (code, fixed["status"]) == (0, "applied")
    note = note_of(gm.repo, fixed["commits"][0]["commit"], env=gm.env)
    assert note["validation"] == [{"path": "a.py", "language": "python", "parser": "compile"}]
