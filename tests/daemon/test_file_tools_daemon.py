"""write, delete and read through a real daemon: ``redline apply --session`` as processes.

Each write or delete is one commit with its note, read back with git; a dry
run leaves the branch, the worktree and the notes as they were; a read
answers what the session's worktree holds and commits nothing. The socket's
``apply`` method takes the same requests (no method of their own).
"""

from __future__ import annotations

import json
from pathlib import Path

from gitmode_fixtures import GitMode, branch_commits, note_of, porcelain, rev
from redline.daemon.client import Client


def notes_tip(gm: GitMode) -> str:
    return gm.git("rev-parse", "--verify", "-q", "refs/notes/redline", check=False).strip()


def test_write_delete_and_read_through_the_daemon(gm: GitMode) -> None:
    opened = gm.cli.open_session("agent")
    base, worktree = opened["base"], Path(opened["worktree"])

    code, created = gm.cli.apply(
        "agent",
        {"tool": "write", "path": "lib/util.py", "content": "def f():\n    return 1\n", "turn": 1},
    )
    assert (code, created["status"], created["session"]) == (0, "applied", "agent")
    code, replaced = gm.cli.apply(
        "agent", {"tool": "write", "path": "c.txt", "content": "one\r\ntwo\r\n", "model": "m"}
    )
    assert (code, replaced["line_ending"]) == (0, "lf")  # the file's own style
    code, deleted = gm.cli.apply("agent", {"tool": "delete", "path": "b.py"})
    assert (code, deleted["status"]) == (0, "applied")

    commits = branch_commits(gm.repo, "redline/agent", base, env=gm.env)
    assert len(commits) == 3  # one per request
    assert [r["commits"][0]["commit"] for r in (created, replaced, deleted)] == commits
    notes = [note_of(gm.repo, c, env=gm.env) for c in commits]
    assert [(n["tool"], n["operations"]) for n in notes] == [
        ("write", [{"path": "lib/util.py", "op": "create"}]),
        ("write", [{"path": "c.txt", "op": "overwrite"}]),
        ("delete", [{"path": "b.py", "op": "delete"}]),
    ]
    assert notes[1]["model"] == "m"
    assert all(n["session"] == "agent" and n["source"] == "agent" for n in notes)
    assert gm.git("show", f"{commits[1]}:c.txt") == "one\ntwo\n"
    tree = gm.git("ls-tree", "-r", "--name-only", commits[2]).split()
    assert "b.py" not in tree and "lib/util.py" in tree
    assert porcelain(worktree, gm.env) == ""

    tip, notes_before = rev(gm.repo, "redline/agent", gm.env), notes_tip(gm)
    code, read = gm.cli.apply("agent", {"tool": "read", "path": "lib/util.py", "limit": 1})
    assert code == 0
    assert read["status"] == "read"
    assert read["content"] == "     1\tdef f():"
    assert (read["total_lines"], read["truncated"], read["encoding"]) == (2, True, "utf-8")
    assert rev(gm.repo, "redline/agent", gm.env) == tip and notes_tip(gm) == notes_before

    # read shows what the agent sees: the worktree, changes not yet committed included
    (worktree / "c.txt").write_text("by hand\n")
    code, seen = gm.cli.apply("agent", {"tool": "read", "path": str(worktree / "c.txt")})
    assert (code, seen["path"], seen["content"]) == (0, "c.txt", "     1\tby hand")
    assert rev(gm.repo, "redline/agent", gm.env) == tip


def test_a_dry_run_leaves_branch_worktree_and_notes_alone(gm: GitMode) -> None:
    opened = gm.cli.open_session("dry")
    worktree = Path(opened["worktree"])
    tip, notes_before = rev(gm.repo, "redline/dry", gm.env), notes_tip(gm)
    for request in (
        {"tool": "write", "path": "new/file.txt", "content": "x\n"},
        {"tool": "write", "path": "c.txt", "content": "changed\n"},
        {"tool": "delete", "path": "a.py"},
    ):
        # --threshold is an edit's setting: the other tools take it without complaint
        code, result = gm.cli.apply("dry", request, "--dry-run", "--threshold", "0.9")
        assert (code, result["status"], result["dry_run"]) == (0, "applied", True)
        assert result["diff"] and result.get("commits", []) == []
    assert rev(gm.repo, "redline/dry", gm.env) == tip
    assert notes_tip(gm) == notes_before
    assert not (worktree / "new").exists() and (worktree / "a.py").exists()
    assert porcelain(worktree, gm.env) == ""


def test_refusals_have_their_exit_codes_and_commit_nothing(gm: GitMode) -> None:
    opened = gm.cli.open_session("bad")
    base = opened["base"]
    cases = [
        ({"tool": "delete", "path": "docs"}, 2, "'docs' is a directory"),
        ({"tool": "delete", "path": "none.txt"}, 2, "does not exist"),
        ({"tool": "write", "path": "blob.bin", "content": "x"}, 2, "is a binary file"),
        ({"tool": "read", "path": "c.txt", "offset": 9}, 2, "offset 9 is past the end"),
        ({"tool": "read", "path": "c.txt", "offset": 0}, 2, "offset: Input should be greater"),
        (
            {"tool": "write", "path": "x", "content": 5},
            2,
            "content: Input should be a valid string",
        ),
        (
            {
                "tool": "apply_patch",
                "input": "*** Begin Patch\n*** Delete File: b.py\n*** End Patch\n",
            },
            2,
            "Set compat.apply_patch.freeform: false",
        ),
    ]
    for request, expected, says in cases:
        code, result = gm.cli.apply("bad", request)
        assert (code, result["status"]) == (expected, "invalid"), result
        assert says in result["error"], result["error"]
        assert result["session"] == "bad"
    assert branch_commits(gm.repo, "redline/bad", base, env=gm.env) == []


def test_the_socket_apply_method_takes_the_requests_as_they_are(gm: GitMode) -> None:
    gm.cli.open_session("sock")
    with Client(gm.socket()) as client:
        wrote = client.call(
            "apply",
            {"session": "sock", "request": {"tool": "write", "path": "s.txt", "content": "hi\n"}},
        )
        read = client.call(
            "apply", {"session": "sock", "request": {"tool": "read", "path": "s.txt"}}
        )
    assert wrote["status"] == "applied" and len(wrote["commits"]) == 1
    assert read["status"] == "read" and read["content"] == "     1\thi"
    assert json.loads(json.dumps(read)) == read
