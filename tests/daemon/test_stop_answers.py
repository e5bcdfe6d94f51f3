"""A request sent to a waiting connection just as the daemon stops gets an answer.

The daemon ends the connections that wait for their next request when it stops. A
request whose bytes had already arrived (taken in, not yet read as a request) used
to meet a closed connection: the client read an end of stream, "the daemon closed
the connection before answering", and could not tell whether the edit was done. It
is answered now — "shutting down", with its id — and only then is the connection
ended.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from gitmode_fixtures import make_repo
from redline.daemon import protocol
from redline.daemon.server import Server
from redline.daemon.service import Service
from support.env import short_runtime_dir

HELLO = b'{"jsonrpc": "2.0", "id": 1, "method": "hello", "params": {"protocol": 1}}\n'


@dataclass
class Running:
    path: Path
    server: Server
    loop: asyncio.AbstractEventLoop
    thread: threading.Thread


@pytest.fixture
def running(tmp_path: Path) -> Iterator[Running]:
    repo = make_repo(tmp_path / "repo", {"a.txt": "one\n"})
    with short_runtime_dir() as folder:
        path = folder / "d.sock"
        service = Service(repo, git_env=dict(os.environ))
        server = Server(service, path, idle_timeout=300)
        loops: list[asyncio.AbstractEventLoop] = []

        async def main() -> None:
            loops.append(asyncio.get_running_loop())
            await server.serve()

        thread = threading.Thread(target=asyncio.run, args=(main(),))
        thread.start()
        deadline = time.monotonic() + 30
        while not path.exists():
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.01)
        try:
            yield Running(path, server, loops[0], thread)
        finally:
            if thread.is_alive():  # the tests stop it themselves
                loops[0].call_soon_threadsafe(server.stop)
                thread.join(timeout=30)
            service.shutdown()


def test_a_request_arriving_as_the_daemon_stops_is_answered_shutting_down(
    running: Running,
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


def test_an_idle_connection_does_not_keep_a_stopping_daemon_up(running: Running) -> None:
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
