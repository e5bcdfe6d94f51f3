"""A request sent to a waiting connection just as the daemon stops gets an answer.

The daemon ends the connections that wait for their next request when it stops. A
request whose bytes had already arrived (taken in, not yet read as a request) used
to meet a closed connection: the client read an end of stream, "the daemon closed
the connection before answering", and could not tell whether the edit was done. It
is answered now — "shutting down", with its id — and only then is the connection
ended.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitmode_fixtures import make_repo
from redline.daemon import protocol
from support.daemon import Served, served

HELLO = b'{"jsonrpc": "2.0", "id": 1, "method": "hello", "params": {"protocol": 1}}\n'


@pytest.fixture
def running(tmp_path: Path) -> Iterator[Served]:
    with served(make_repo(tmp_path / "repo", {"a.txt": "one\n"})) as daemon:
        yield daemon


def test_a_request_arriving_as_the_daemon_stops_is_answered_shutting_down(
    running: Served,
) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(30)
        sock.connect(str(running.path))
        reader = sock.makefile("rb")
        sock.sendall(HELLO)
        assert json.loads(reader.readline())["id"] == 1  # the connection now waits
        # The daemon's loop is held while the request arrives, and the stop is due the
        # moment it is let go: the stop and the request's bytes are handled in the same
        # turn of the loop.
        running.loop.call_soon_threadsafe(time.sleep, 0.3)
        running.loop.call_soon_threadsafe(running.server.stop)
        sock.sendall(b'{"jsonrpc": "2.0", "id": 7, "method": "session.list"}\n')
        line = reader.readline()
        rest = reader.read()
    running.thread.join(timeout=30)

    assert line.endswith(b"\n"), "the connection ended without an answer"
    answer = json.loads(line)
    assert answer["id"] == 7
    assert "result" in answer or answer["error"]["code"] == protocol.SHUTTING_DOWN, answer
    assert rest == b""  # then the connection ends
    assert not running.thread.is_alive()


def test_an_idle_connection_does_not_keep_a_stopping_daemon_up(running: Served) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(30)
        sock.connect(str(running.path))
        reader = sock.makefile("rb")
        sock.sendall(HELLO)
        reader.readline()
        running.loop.call_soon_threadsafe(running.server.stop)
        running.thread.join(timeout=30)
        assert reader.read() == b""  # ended, with nothing more said

    assert not running.thread.is_alive()
