"""Pieces of the server that need no socket: what a request read during a stop gets."""

from __future__ import annotations

import json

from redline.daemon.protocol import SHUTTING_DOWN
from redline.daemon.server import _refused_while_stopping

REFUSAL = (
    "the daemon is stopping and takes no new request; send it again once it has stopped "
    "(a redline command starts a new daemon)"
)


def test_a_request_read_after_the_stop_began_is_refused_with_its_id() -> None:
    line = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "apply", "params": {}}).encode()
    assert _refused_while_stopping(line) == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {"code": SHUTTING_DOWN, "message": "shutting down", "data": REFUSAL},
    }


def test_a_notification_read_after_the_stop_began_gets_no_answer() -> None:
    line = json.dumps({"jsonrpc": "2.0", "method": "apply", "params": {}}).encode()
    assert _refused_while_stopping(line) is None


def test_a_line_that_is_not_a_request_is_refused_without_an_id() -> None:
    for line in (b"{not json", b"[1, 2]", json.dumps({"id": [1]}).encode(), object()):
        answer = _refused_while_stopping(line)
        assert answer is not None
        assert answer["id"] is None and answer["error"]["code"] == SHUTTING_DOWN
