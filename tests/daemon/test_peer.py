"""Peer credentials, checked on both ends of the socket, failing closed.

The daemon serves only the user who started it, and a client talks only to a
daemon of its own user. Where the platform cannot say who is at the other end,
both refuse. The tests that need a second user run a process as ``nobody``
(only possible as root; skipped otherwise); the others change what the process
sees at its edge (``sys.platform``, ``os.getuid``).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitmode_fixtures import GitMode, short_runtime_dir
from redline.daemon.client import Client, UntrustedDaemon
from redline.daemon.peer import peer_uid
from support.daemon import served as on_thread

NOBODY = 65534
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="a second user needs root")


def test_the_peer_of_a_socket_is_this_user() -> None:
    left, right = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with left, right:
        assert peer_uid(left) == os.getuid()
        assert peer_uid(right) == os.getuid()


def test_a_platform_without_peer_credentials_cannot_tell(monkeypatch: pytest.MonkeyPatch) -> None:
    left, right = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    monkeypatch.setattr(sys, "platform", "plan9")
    with left, right:
        assert peer_uid(left) is None


# --- a daemon in this process, on a socket another user can reach -----------------------------


@pytest.fixture
def served(repo: Path) -> Iterator[Path]:
    """The daemon's server on a thread of this process; the path of its socket."""
    with on_thread(repo) as running:
        yield running.path


def ask(path: Path, message: bytes) -> list[bytes]:
    """Every line the server sends back to ``message`` until it closes the connection."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(30)
        sock.connect(str(path))
        sock.sendall(message)
        sock.shutdown(socket.SHUT_WR)
        with sock.makefile("rb") as reader:
            return reader.readlines()


HELLO = b'{"jsonrpc": "2.0", "id": 1, "method": "hello", "params": {"protocol": 1}}\n'


def test_the_daemon_serves_its_own_user(served: Path) -> None:
    [line] = ask(served, HELLO)
    assert json.loads(line)["result"]["protocol"] == 1


def test_the_daemon_refuses_a_peer_it_cannot_verify(
    served: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(sys, "platform", "plan9")
    with caplog.at_level(logging.WARNING, logger="redline.daemon"):
        answers = ask(served, HELLO)
    assert [json.loads(line) for line in answers] == [
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {
                "code": -32600,
                "message": "permission denied",
                "data": "the daemon cannot verify which user is connecting, and serves only "
                "its own",
            },
        }
    ]
    assert caplog.messages == [
        "refused a connection: the user at its other end cannot be verified (no peer "
        "credentials on plan9); the daemon serves only connections it can verify"
    ]


def _python_for_nobody() -> str:
    """A Python another user may run (this one may live in root's home)."""
    for candidate in (sys.executable, "/usr/bin/python3", "/usr/local/bin/python3"):
        try:
            subprocess.run(
                [candidate, "-c", "pass"],
                user=NOBODY,
                group=NOBODY,
                extra_groups=[],
                capture_output=True,
                cwd="/",
                check=True,
            )
        except (OSError, subprocess.CalledProcessError):
            continue
        return candidate
    pytest.skip("no Python that another user may run")


def _run_as_nobody(script: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [_python_for_nobody(), "-c", textwrap.dedent(script)],
        user=NOBODY,
        group=NOBODY,
        extra_groups=[],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd="/",
    )


@as_root
def test_the_daemon_refuses_another_user(served: Path, caplog: pytest.LogCaptureFixture) -> None:
    # Past the socket's own mode (0600), which would stop that user first.
    served.parent.chmod(0o711)
    served.chmod(0o666)
    with caplog.at_level(logging.WARNING, logger="redline.daemon"):
        other = _run_as_nobody(
            f"""
            import socket, sys
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect({str(served)!r})
            sock.sendall({HELLO!r})
            sys.stdout.buffer.write(sock.makefile("rb").read())
            """
        )
        out, err = other.communicate(timeout=60)
    assert other.returncode == 0, err.decode()
    assert json.loads(out)["error"] == {
        "code": -32600,
        "message": "permission denied",
        "data": "the daemon serves only the user who started it",
    }
    assert caplog.messages == [
        f"refused a connection from user id {NOBODY} (the daemon serves only its own)"
    ]


# --- the client's side -------------------------------------------------------------------------


@pytest.fixture
def live(gm: GitMode) -> Path:
    gm.cli.ok("daemon", "start", "--repo", str(gm.repo))
    return gm.socket()


def test_the_client_refuses_a_daemon_it_cannot_verify(
    live: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as edge, pytest.raises(UntrustedDaemon) as caught:
        edge.setattr(sys, "platform", "plan9")
        Client(live)
    assert caught.value.uid is None
    assert str(caught.value) == (
        f"refusing to talk to the redline daemon: cannot verify which user serves {live} "
        "(this platform, plan9, gives no peer credentials), and redline talks only to a "
        "daemon of your own. If another user runs redline in this repository, work in a "
        "clone of your own; otherwise remove the socket and retry"
    )


def test_the_client_refuses_a_daemon_of_another_user(
    live: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    me = os.getuid()
    with monkeypatch.context() as edge:
        edge.setattr(os, "getuid", lambda: me + 1)  # as if this client were someone else
        with pytest.raises(UntrustedDaemon) as caught:
            Client(live)
    assert caught.value.uid == me
    assert str(caught.value) == (
        f"refusing to talk to the redline daemon: {live} is served by user id {me}, not by "
        f"you (user id {me + 1}); redline talks only to a daemon of your own. If another "
        "user runs redline in this repository, work in a clone of your own; otherwise "
        "remove the socket and retry"
    )


@as_root
def test_the_client_refuses_a_socket_another_user_serves(tmp_path: Path) -> None:
    with short_runtime_dir() as folder:
        folder.chmod(0o777)  # where that user may make its socket
        path = folder / "d.sock"
        other = _run_as_nobody(
            f"""
            import socket, sys
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            server.bind({str(path)!r})
            server.listen()
            print("ready", flush=True)
            conn, _ = server.accept()
            sys.stdin.read()  # until the test is done
            """
        )
        try:
            assert other.stdout is not None
            assert other.stdout.readline() == b"ready\n"
            with pytest.raises(UntrustedDaemon) as caught:
                Client(path)
            assert caught.value.uid == NOBODY
            assert f"{path} is served by user id {NOBODY}, not by you" in str(caught.value)
        finally:
            other.communicate(timeout=30)
