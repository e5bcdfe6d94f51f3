"""A request sent to a daemon session: a daemon that does not judge the permission rules
(one older than the check) is not sent anything."""

from __future__ import annotations

from typing import Any

from gitmode_fixtures import GitMode
from redline.daemon.client import Client
from redline.pipeline.daemon_call import send


class OlderDaemon:
    """A client of a daemon whose hello says nothing of permissions: it records calls."""

    def __init__(self) -> None:
        self.server: dict[str, Any] = {"server": "redline", "version": "0.1.0", "protocol": 1}
        self.calls: list[tuple[str, Any]] = []

    def call(self, method: str, params: Any = None) -> Any:
        self.calls.append((method, params))
        return {"status": "applied"}


def test_a_daemon_that_does_not_judge_permissions_is_sent_nothing() -> None:
    older = OlderDaemon()
    request = {"tool": "edit", "path": "a.py", "old_string": "a", "new_string": "b"}
    sent = send(older, "s", request)  # type: ignore[arg-type]
    assert older.calls == []
    assert sent.result["status"] == "failed" and sent.result["path"] == "a.py"
    assert "does not check the [permission] rules" in sent.result["error"]
    assert "`redline daemon stop`" in sent.result["error"]
    assert sent.result["error"].endswith("nothing was sent to the daemon, so nothing was applied")


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
    """``answered``: the result is the daemon's (cut as asked), not one made here."""
    older = OlderDaemon()
    request = {"tool": "edit", "path": "a.py", "old_string": "a", "new_string": "b"}
    assert not send(older, "s", request).answered  # type: ignore[arg-type]
    gm.cli.open_session("s")
    edit = {"tool": "edit", "path": "b.py", "old_string": "VALUE = 1", "new_string": "VALUE = 2"}
    with Client(gm.socket()) as client:
        sent = send(client, "s", edit, dry_run=True, full=False)
        assert sent.answered and sent.result["status"] == "applied"
        assert "error" not in sent.result  # cut by the daemon: no null fields
        assert not send(client, "nope", edit).answered
