"""The handshake: hello carries the connection's first request (``then``), in one round trip.

Against this checkout's daemon (raw JSON-RPC lines): the request in ``then`` runs
after the protocol version is checked, and not at all when it is another one.
Against daemons of other versions, played on a real socket
(``support.scripted_daemon``), the real client: one older than ``then`` is
sent the request by itself once its hello says it judges permissions (and
nothing otherwise); one of another protocol version is sent nothing more and
the caller is told to restart it. A client older than ``then`` (hello alone,
then the request) is served as before.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gitmode_fixtures import GitMode
from redline.daemon.client import Client, OtherProtocol
from redline.daemon.lifecycle import files_for, stop
from redline.daemon.paths import DaemonFiles
from redline.pipeline.daemon_call import send
from support.env import short_runtime_dir
from support.scripted_daemon import HELLO_BEFORE_THEN, older_daemon, other_protocol, scripted

EDIT = {"tool": "edit", "path": "b.py", "old_string": "VALUE = 1", "new_string": "VALUE = 2"}


class Lines:
    """Raw JSON-RPC lines on one connection."""

    def __init__(self, path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(60)
        self.sock.connect(str(path))
        self.reader = self.sock.makefile("rb")

    def call(self, method: str, params: dict[str, Any], request_id: int = 1) -> dict[str, Any]:
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        self.sock.sendall(json.dumps(message).encode() + b"\n")
        answer = json.loads(self.reader.readline())
        assert isinstance(answer, dict) and answer["id"] == request_id
        return answer

    def close(self) -> None:
        self.reader.close()
        self.sock.close()


@pytest.fixture
def lines(gm: GitMode) -> Iterator[Lines]:
    gm.cli.open_session("s")
    conn = Lines(gm.socket())
    yield conn
    conn.close()


def apply_then(session: str = "s", request: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"method": "apply", "params": {"session": session, "request": request or EDIT}}


def branch_tip(gm: GitMode) -> str:
    return gm.git("rev-parse", "redline/s").strip()


# --- this daemon -----------------------------------------------------------------------------


def test_hello_runs_the_request_it_carries_and_answers_both(gm: GitMode, lines: Lines) -> None:
    before = branch_tip(gm)
    answer = lines.call("hello", {"protocol": 1, "then": apply_then()})["result"]
    assert answer["protocol"] == 1 and answer["permissions"] == "enforced"
    applied = answer["then"]["result"]
    assert applied["status"] == "applied" and len(applied["commits"]) == 1
    assert branch_tip(gm) == applied["commits"][0]["commit"] != before
    worktree = Path(gm.cli.json("session", "list", "--json", "--repo", str(gm.repo))[0]["worktree"])
    assert "VALUE = 2" in (worktree / "b.py").read_text()
    # The connection goes on as usual: the next request by itself.
    again = lines.call("apply", apply_then()["params"], request_id=2)["result"]
    assert again["status"] in ("no_change", "no_match")


@pytest.mark.parametrize("version", [2, 0, "1"])
def test_another_protocol_version_runs_nothing(gm: GitMode, lines: Lines, version: Any) -> None:
    before = branch_tip(gm)
    answer = lines.call("hello", {"protocol": version, "then": apply_then()})
    assert "result" not in answer
    assert answer["error"]["code"] == -32602
    assert answer["error"]["message"] == "unsupported protocol version"
    assert "protocol 1" in answer["error"]["data"]
    assert branch_tip(gm) == before


def test_the_carried_requests_error_is_answered_inside_hello(lines: Lines) -> None:
    answer = lines.call("hello", {"protocol": 1, "then": apply_then(session="nope")})["result"]
    assert answer["protocol"] == 1
    err = answer["then"]["error"]
    assert err["code"] == -32001 and "nope" in err["data"]
    unknown = lines.call("hello", {"protocol": 1, "then": {"method": "no.such"}}, 2)["result"]
    assert unknown["then"]["error"]["code"] == -32601


@pytest.mark.parametrize(
    "then",
    [None, "apply", {"params": {}}, {"method": "hello"}, {"method": "apply", "params": [1]}],
)
def test_a_malformed_then_is_invalid_params(lines: Lines, then: Any) -> None:
    answer = lines.call("hello", {"protocol": 1, "then": then})
    assert answer["error"]["code"] == -32602
    assert "'then' must be an object" in answer["error"]["data"]


def test_a_client_older_than_then_is_served_as_before(gm: GitMode, lines: Lines) -> None:
    hello = lines.call("hello", {"protocol": 1})["result"]
    assert "then" not in hello and hello["permissions"] == "enforced"
    applied = lines.call("apply", apply_then()["params"], request_id=2)["result"]
    assert applied["status"] == "applied"


def test_the_client_says_hello_with_its_first_call(gm: GitMode) -> None:
    gm.cli.open_session("s")
    with Client(gm.socket()) as client:
        assert not client.greeted
        assert send(client, "s", EDIT).result["status"] == "applied"
        assert client.greeted and client.server["permissions"] == "enforced"
        assert "then" not in client.server
        sessions = client.call("session.list")  # later calls go by themselves
        assert [s["name"] for s in sessions] == ["s"]


# --- daemons of other versions ---------------------------------------------------------------


@pytest.fixture
def socket_path() -> Iterator[Path]:
    with short_runtime_dir() as folder:
        yield folder / "d.sock"


def test_a_daemon_older_than_then_is_sent_the_request_by_itself(socket_path: Path) -> None:
    hello = {**HELLO_BEFORE_THEN, "permissions": "enforced"}
    daemon = older_daemon(hello, {"status": "applied"})
    with scripted(socket_path, daemon) as played, Client(socket_path) as client:
        sent = send(client, "s", EDIT)
        assert sent.answered and sent.result["status"] == "applied"
        assert send(client, "s", EDIT).result["status"] == "applied"
    assert played.methods == ["hello", "apply", "apply"]
    assert played.received[0]["params"]["then"]["method"] == "apply"
    assert played.received[1]["params"]["request"] == EDIT


def test_a_daemon_that_does_not_judge_permissions_is_sent_nothing(socket_path: Path) -> None:
    daemon = older_daemon(HELLO_BEFORE_THEN, {"status": "applied"})
    with scripted(socket_path, daemon) as played, Client(socket_path) as client:
        sent = send(client, "s", EDIT)
    assert played.methods == ["hello"]  # it ignored the carried request: nothing ran
    assert sent.result["status"] == "failed" and sent.result["path"] == "b.py"
    assert "does not check the [permission] rules" in sent.result["error"]
    assert "`redline daemon stop`" in sent.result["error"]
    assert not sent.answered


def test_a_daemon_of_another_protocol_is_sent_nothing_more(socket_path: Path) -> None:
    with scripted(socket_path, other_protocol(2)) as daemon, Client(socket_path) as client:
        sent = send(client, "s", EDIT)
        with pytest.raises(OtherProtocol, match="speaks protocol 2"):
            client.call("session.list")
    assert daemon.methods == ["hello", "hello"]
    assert sent.result["status"] == "failed"
    error = sent.result["error"]
    assert "speaks another protocol version" in error and "ran nothing" in error
    assert "`redline daemon stop`" in error


def test_apply_session_against_another_protocol_says_what_to_do(gm: GitMode) -> None:
    files = files_for(gm.repo, gm.runtime)
    files.ensure()
    with scripted(files.socket, other_protocol(2)) as daemon:
        done = gm.cli.run("apply", "--session", "s", "--repo", str(gm.repo), input=json.dumps(EDIT))
    assert done.returncode == 1
    answer = json.loads(done.stdout)
    assert answer["status"] == "failed" and answer["session"] == "s"
    assert "`redline daemon stop`" in answer["error"] and "Traceback" not in done.stderr
    assert daemon.methods == ["hello"]


def test_a_daemon_of_another_protocol_can_be_stopped(socket_path: Path) -> None:
    """``redline daemon stop``, the way out its refusal names, reaches it: shutdown goes
    without hello."""
    (socket_path.parent / "git").mkdir()
    files = DaemonFiles(socket_path.parent / "git", socket_path.parent)
    files.ensure()
    with scripted(files.socket, other_protocol(2)) as daemon:
        assert stop(files, timeout=5) is True
    assert daemon.methods == ["shutdown"]
