"""What the daemon answers of a result: the socket's ``apply`` sends the contract and
the fields that say something unless ``full`` asks for every field (engine.result.shown);
``redline apply --session`` prints the same, ``--full`` everything; in git mode a
patch's groups are ``committed``."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitmode_fixtures import GitMode
from redline.daemon import protocol
from redline.daemon.client import Client
from redline.daemon.protocol import RpcError
from redline.engine.result import CONTRACT, Result
from support.requests import edit, patch


def test_the_socket_answers_brief_unless_full_is_asked(gm: GitMode) -> None:
    worktree = Path(gm.cli.open_session("s")["worktree"])
    original = (worktree / "b.py").read_text()
    last = original.splitlines()[-1]
    with Client(gm.socket()) as client:
        brief = client.call(
            "apply", {"session": "s", "request": edit("b.py", last, last + "  # a")}
        )
        full = client.call(
            "apply",
            {"session": "s", "request": edit("b.py", last + "  # a", last + "  # b"), "full": True},
        )
        with pytest.raises(RpcError) as bad:
            client.call("apply", {"session": "s", "request": edit("b.py", "x", "y"), "full": 1})
    assert set(brief) == {*CONTRACT, "start_line", "end_line", "session", "commits"}
    assert brief["status"] == "applied" and len(brief["commits"]) == 1
    assert list(full) == list(Result("applied").to_dict())
    assert full["diff"] and full["matches"][0]["matched_text"] == last + "  # a"
    assert bad.value.code == protocol.INVALID_PARAMS
    assert bad.value.data == (
        "'full' must be true or false: whether the answer carries every field of the "
        "result (false: the fields that say something, as `redline apply` prints)"
    )


def test_apply_session_prints_brief_answers_and_every_field_with_full(gm: GitMode) -> None:
    worktree = Path(gm.cli.open_session("t")["worktree"])
    last = (worktree / "b.py").read_text().splitlines()[-1]
    code, brief = gm.cli.apply("t", edit("b.py", last, last + "  # a"))
    assert code == 0
    assert "diff" not in brief and "matches" not in brief and brief["session"] == "t"
    code, full = gm.cli.apply("t", edit("b.py", last + "  # a", last + "  # b"), "--full")
    assert code == 0
    assert full["diff"] and full["hint"] is None and full["written"] == []


def test_a_patch_in_git_mode_lists_its_groups_as_committed(gm: GitMode) -> None:
    gm.cli.open_session("p")
    code, answer = gm.cli.apply("p", patch("*** Add File: new.py\n+N = 1\n"))
    assert code == 0
    assert answer["committed"] == [{"paths": ["new.py"], "operations": ["add new.py"]}]
    assert "written" not in answer
    [commit] = answer["commits"]
    assert commit["paths"] == ["new.py"]
