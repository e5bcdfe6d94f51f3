"""A request sent to a daemon session (a daemon that does not judge the permission rules,
one older than the check, is sent nothing: tests/daemon/test_handshake.py)."""

from __future__ import annotations

from gitmode_fixtures import GitMode
from redline.daemon.client import Client
from redline.pipeline.daemon_call import send


def test_the_daemon_says_it_judges_them(gm: GitMode) -> None:
    gm.cli.open_session("s")
    with Client(gm.socket()) as client:
        assert client.server["permissions"] == "enforced"
        request = {
            "tool": "edit",
            "path": "b.py",
            "old_string": "VALUE = 1",
            "new_string": "VALUE = 2",
        }
        assert send(client, "s", request).result["status"] == "applied"


def test_only_the_daemons_own_answer_counts_as_answered(gm: GitMode) -> None:
    """``answered``: the result is the daemon's (cut as asked), not one made here (a daemon
    that is sent nothing: tests/daemon/test_handshake.py)."""
    gm.cli.open_session("s")
    edit = {"tool": "edit", "path": "b.py", "old_string": "VALUE = 1", "new_string": "VALUE = 2"}
    with Client(gm.socket()) as client:
        sent = send(client, "s", edit, dry_run=True, full=False)
        assert sent.answered and sent.result["status"] == "applied"
        assert "error" not in sent.result  # cut by the daemon: no null fields
        assert not send(client, "nope", edit).answered
