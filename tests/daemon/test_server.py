"""Pieces of the server that need no socket: what a request read during a stop gets."""

from __future__ import annotations

import errno
import json
import logging
import os

import pytest

from redline.daemon.protocol import REPOSITORY_ERROR, SHUTTING_DOWN
from redline.daemon.server import _refused_while_stopping
from redline.daemon.service import error_for

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


def test_a_method_the_machine_stops_is_answered_with_what_ran_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="redline.daemon"):
        err = error_for(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "/r/.git/index.lock"))
    assert err.code == REPOSITORY_ERROR
    assert err.data == (
        "the disk is full (No space left on device); free space on the file system that "
        "holds /r/.git/index.lock, then retry"
    )
    assert not [r for r in caplog.records if r.exc_info]  # no traceback: it is no bug
