"""The wire protocol against a real daemon, spoken by a raw socket client.

JSON-RPC 2.0, one JSON object per line: every malformed, oversized or hostile
message gets a JSON-RPC error (or an ``invalid`` result) and the daemon keeps
answering. One daemon serves the whole module; it is stopped at the end.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gitmode_fixtures import GitMode, branch_commits, digest_tree, git, git_mode, porcelain, rev
from redline import __version__

MAX_MESSAGE = 8 * 1024 * 1024


class Raw:
    """A bare line-oriented client: bytes out, one parsed JSON line in."""

    def __init__(self, path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(60)
        self.sock.connect(str(path))
        self.reader = self.sock.makefile("rb")

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def recv(self) -> dict[str, Any]:
        line = self.reader.readline()
        assert line, "the daemon closed the connection"
        assert line.endswith(b"\n")
        answer = json.loads(line)
        assert isinstance(answer, dict)
        assert answer["jsonrpc"] == "2.0"
        return answer

    def call(self, message: dict[str, Any] | bytes) -> dict[str, Any]:
        data = message if isinstance(message, bytes) else json.dumps(message).encode()
        self.send(data + b"\n")
        return self.recv()

    def close(self) -> None:
        self.reader.close()
        self.sock.close()


def hello(request_id: Any = 1, version: Any = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "hello", "params": {"protocol": version}}


def rpc(method: str, params: Any = None, request_id: Any = 1) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def error_of(answer: dict[str, Any], code: int) -> dict[str, Any]:
    assert "result" not in answer, answer
    err = answer["error"]
    assert err["code"] == code, answer
    assert isinstance(err["message"], str) and err["message"]
    assert isinstance(err.get("data"), str) and err["data"], answer  # says what was wrong
    return err


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GitMode]:
    """One repository, one daemon, one session 'guard' for the whole module."""
    home = tmp_path_factory.mktemp("protocol-home")
    base = tmp_path_factory.mktemp("protocol")
    outside = base / "outside"
    outside.mkdir()
    (outside / "target.txt").write_text("outside the worktree\n")
    with git_mode(base, home) as mode:
        (mode.repo / "escape.txt").symlink_to(outside / "target.txt")
        (mode.repo / "escape_dir").symlink_to(outside, target_is_directory=True)
        mode.git("add", "escape.txt", "escape_dir")
        mode.git("commit", "-q", "-m", "links that point outside")
        mode.cli.ok("daemon", "start", "--repo", str(mode.repo))
        mode.cli.open_session("guard")
        yield mode
    assert list(home.iterdir()) == [], "the daemon wrote into HOME"


@pytest.fixture
def conn(daemon: GitMode) -> Iterator[Raw]:
    client = Raw(daemon.socket())
    yield client
    client.close()


def still_answers(daemon: GitMode, conn: Raw | None = None) -> None:
    """The same connection (when given) and a new one both get a hello through."""
    for client in [c for c in (conn,) if c is not None]:
        assert client.call(hello(99))["result"]["protocol"] == 1
    fresh = Raw(daemon.socket())
    try:
        assert fresh.call(hello(100))["id"] == 100
    finally:
        fresh.close()


# --- hello -------------------------------------------------------------------------------


def test_hello_returns_protocol_1(conn: Raw) -> None:
    answer = conn.call(hello(1))
    assert answer == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {
            "server": "redline",
            "version": __version__,
            "protocol": 1,
            "permissions": "enforced",
        },
    }
    assert conn.call(hello("text-id"))["id"] == "text-id"
    assert conn.call(hello(None))["id"] is None  # a null id is a request, not a notification


@pytest.mark.parametrize("version", [2, 0, "1", None, [1]])
def test_another_protocol_version_is_invalid_params(
    daemon: GitMode, conn: Raw, version: Any
) -> None:
    err = error_of(conn.call(hello(5, version)), -32602)
    assert "protocol 1" in err["data"]
    assert conn.call(hello(6))["result"]["protocol"] == 1


# --- malformed messages ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc": "2.0", "id": 1, "method": ',
        b"{'single': 'quotes'}",
        b"\xff\xfe not utf-8",
        b'{"jsonrpc": "2.0", "id": 1, "method": "hello"} trailing',
        b"",
    ],
)
def test_malformed_json_is_a_parse_error_and_the_connection_goes_on(
    daemon: GitMode, conn: Raw, line: bytes
) -> None:
    answer = conn.call(line)
    assert answer["id"] is None
    error_of(answer, -32700)
    still_answers(daemon, conn)


@pytest.mark.parametrize(
    ("message", "fragment", "echoed_id"),
    [
        (b"[1, 2]", "batch", None),
        (b"[]", "batch", None),
        (b'"just a string"', "JSON object", None),
        (b"42", "JSON object", None),
        (b"null", "JSON object", None),
        (b'{"id": 3, "method": "hello"}', "jsonrpc", 3),
        (b'{"jsonrpc": "1.0", "id": 3, "method": "hello"}', "jsonrpc", 3),
        (b'{"jsonrpc": 2.0, "id": 3, "method": "hello"}', "jsonrpc", 3),
        (b'{"jsonrpc": "2.0", "id": 3}', "method", 3),
        (b'{"jsonrpc": "2.0", "id": 3, "method": 7}', "method", 3),
        (b'{"jsonrpc": "2.0", "id": 3, "method": "hello", "params": [1]}', "params", 3),
        (b'{"jsonrpc": "2.0", "id": 3, "method": "hello", "params": "x"}', "params", 3),
        (b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "hello"}', "id", None),
        (b'{"jsonrpc": "2.0", "id": true, "method": "hello"}', "id", None),
    ],
)
def test_invalid_requests_get_invalid_request_with_data(
    daemon: GitMode, conn: Raw, message: bytes, fragment: str, echoed_id: Any
) -> None:
    answer = conn.call(message)
    err = error_of(answer, -32600)
    assert fragment in err["data"]
    assert answer["id"] == echoed_id
    still_answers(daemon, conn)


@pytest.mark.parametrize(
    ("method", "params", "fragment"),
    [
        ("apply", {"request": {"tool": "edit"}}, "'session'"),
        ("apply", {"session": "", "request": {}}, "'session'"),
        ("apply", {"session": 5, "request": {}}, "'session'"),
        ("session.open", {"name": 5}, "'name'"),
        ("session.open", {"base": ["HEAD"]}, "'base'"),
        ("session.close", {}, "'name'"),
        ("log", {"session": None}, "'session'"),
    ],
)
def test_bad_params_are_invalid_params_with_data(
    daemon: GitMode, conn: Raw, method: str, params: dict[str, Any], fragment: str
) -> None:
    err = error_of(conn.call(rpc(method, params, 11)), -32602)
    assert fragment in err["data"]
    still_answers(daemon, conn)


def test_an_unknown_method_is_method_not_found(daemon: GitMode, conn: Raw) -> None:
    answer = conn.call(rpc("session.destroy", {}, "x"))
    assert answer["id"] == "x"
    err = error_of(answer, -32601)
    assert "'session.destroy'" in err["data"]
    for known in ("hello", "session.open", "session.list", "session.close", "apply", "log"):
        assert known in err["data"]
    still_answers(daemon, conn)


def test_an_unknown_session_is_an_application_error(daemon: GitMode, conn: Raw) -> None:
    answer = conn.call(rpc("apply", {"session": "nope", "request": {}}, 12))
    assert answer["error"]["code"] == -32001
    assert "no session named 'nope'" in answer["error"]["data"]
    answer = conn.call(rpc("apply", {"session": "../../etc", "request": {}}, 13))
    assert answer["error"]["code"] == -32001
    assert "invalid session name" in answer["error"]["data"]


def test_a_request_that_is_not_an_object_is_an_invalid_result(daemon: GitMode, conn: Raw) -> None:
    answer = conn.call(rpc("apply", {"session": "guard", "request": ["edit"]}, 14))
    result = answer["result"]
    assert result["status"] == "invalid"
    assert result["session"] == "guard"
    assert "JSON object" in result["error"]


# --- size -------------------------------------------------------------------------------------


def test_an_oversized_message_is_refused_and_the_daemon_stays_up(
    daemon: GitMode, conn: Raw
) -> None:
    big = json.dumps(rpc("hello", {"protocol": 1, "pad": "x" * (MAX_MESSAGE + 10)}, 21)).encode()
    assert len(big) > MAX_MESSAGE
    answer = conn.call(big)
    err = error_of(answer, -32600)
    assert err["message"] == "message too large"
    assert str(MAX_MESSAGE) in err["data"]
    still_answers(daemon, conn)


def test_a_huge_line_without_json_is_refused_too(daemon: GitMode, conn: Raw) -> None:
    answer = conn.call(b"\x00" * (MAX_MESSAGE * 2))
    assert error_of(answer, -32600)["message"] == "message too large"
    still_answers(daemon, conn)


def sized(size: int, request_id: int) -> bytes:
    """A hello request of exactly ``size`` bytes (no newline)."""
    message = rpc("hello", {"protocol": 1, "pad": ""}, request_id)
    message["params"]["pad"] = "y" * (size - len(json.dumps(message).encode()))
    data = json.dumps(message).encode()
    assert len(data) == size
    return data


TOO_LARGE = (
    f"one message may hold at most {MAX_MESSAGE} bytes before its newline, and this one "
    "holds more; it was not read. Send smaller requests (split a long patch into several)"
)


def test_a_message_of_exactly_the_limit_is_served(daemon: GitMode, conn: Raw) -> None:
    # The limit counts the message's bytes, its newline excluded.
    assert conn.call(sized(MAX_MESSAGE, 22))["result"]["protocol"] == 1
    assert conn.call(sized(MAX_MESSAGE - 1, 23))["result"]["protocol"] == 1


def test_one_byte_over_the_limit_is_refused_and_the_next_line_is_read(
    daemon: GitMode, conn: Raw
) -> None:
    conn.send(sized(MAX_MESSAGE + 1, 24) + b"\n" + json.dumps(hello(25)).encode() + b"\n")
    answer = conn.recv()
    assert answer["id"] is None
    err = error_of(answer, -32600)
    assert err == {"code": -32600, "message": "message too large", "data": TOO_LARGE}
    assert conn.recv() == conn_hello(25)  # resynchronised at the newline


def conn_hello(request_id: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "result": {
            "server": "redline",
            "version": __version__,
            "protocol": 1,
            "permissions": "enforced",
        },
    }


def test_an_oversized_last_line_is_answered_before_the_connection_ends(daemon: GitMode) -> None:
    client = Raw(daemon.socket())
    try:
        client.send(b"[" * (MAX_MESSAGE + 10))  # no newline: the client closes its side
        client.sock.shutdown(socket.SHUT_WR)
        assert error_of(client.recv(), -32600)["data"] == TOO_LARGE
        assert client.reader.readline() == b""  # then the daemon closes the connection
    finally:
        client.close()
    still_answers(daemon)


def test_a_last_line_without_a_newline_is_answered(daemon: GitMode) -> None:
    client = Raw(daemon.socket())
    try:
        client.send(json.dumps(hello(26)).encode())
        client.sock.shutdown(socket.SHUT_WR)
        assert client.recv() == conn_hello(26)
        assert client.reader.readline() == b""
    finally:
        client.close()


# --- nesting ----------------------------------------------------------------------------------

TOO_DEEP = (
    "the message nests JSON arrays or objects more than 64 levels deep; a request needs "
    "only a few: send it without the extra nesting"
)


def nested(depth: int) -> Any:
    value: Any = 1
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


@pytest.mark.parametrize(
    "line",
    [
        b"[" * 1000 + b"]" * 1000,
        b'{"a": ' * 5000 + b"1" + b"}" * 5000,
        b"[" * 200_000,  # unclosed too: the depth is what the parser meets first
        json.dumps(rpc("hello", {"protocol": 1, "extra": nested(63)}, 27)).encode(),
        b'{"jsonrpc": "2.0", "id": 28, "method": "apply", "params": {"session": "guard", '
        + b'"request": {"tool": "edit", "x": '
        + b"[" * 990
        + b"]" * 990
        + b"}}}",
    ],
    ids=["array-1000", "object-5000", "unclosed-200000", "65-levels", "990-in-a-request"],
)
def test_json_nested_too_deep_is_answered_and_the_connection_goes_on(
    daemon: GitMode, conn: Raw, line: bytes
) -> None:
    answer = conn.call(line)
    assert answer["id"] is None
    assert error_of(answer, -32600) == {
        "code": -32600,
        "message": "invalid request",
        "data": TOO_DEEP,
    }
    still_answers(daemon, conn)


def test_json_nested_64_levels_is_served(daemon: GitMode, conn: Raw) -> None:
    # The message is level 1 and its params level 2: 62 more make 64.
    message = rpc("hello", {"protocol": 1, "extra": nested(62)}, 29)
    assert conn.call(message) == conn_hello(29)


# --- notifications ----------------------------------------------------------------------------


def test_notifications_get_no_response(daemon: GitMode, conn: Raw) -> None:
    quiet = [
        {"jsonrpc": "2.0", "method": "hello", "params": {"protocol": 1}},
        {"jsonrpc": "2.0", "method": "hello", "params": {"protocol": 99}},
        {"jsonrpc": "2.0", "method": "no.such.method"},
        {"jsonrpc": "2.0", "method": "session.close", "params": {}},
        {"jsonrpc": "2.0", "method": "session.list"},
    ]
    for message in quiet:
        conn.send(json.dumps(message).encode() + b"\n")
    # the first answer on the connection is the one for the next real request
    assert conn.call(hello(7))["id"] == 7
    assert conn.call(rpc("session.list", {}, 8))["id"] == 8


def test_requests_on_one_connection_are_answered_in_order(daemon: GitMode, conn: Raw) -> None:
    burst = b"".join(json.dumps(hello(i)).encode() + b"\n" for i in range(50))
    conn.send(burst)
    assert [conn.recv()["id"] for _ in range(50)] == list(range(50))


# --- hostile paths ----------------------------------------------------------------------------


def _outside_state(daemon: GitMode) -> dict[str, Any]:
    base = daemon.repo.parent
    return {
        "outside": digest_tree(base / "outside"),
        "repo": digest_tree(daemon.repo, skip=(".git",)),
        "config": (daemon.repo / ".git" / "config").read_bytes(),
        "head": rev(daemon.repo, "HEAD"),
        "status": porcelain(daemon.repo),
    }


def _hostile_requests(daemon: GitMode, worktree: Path) -> list[dict[str, Any]]:
    target = daemon.repo.parent / "outside" / "target.txt"
    up = os.path.relpath(target, worktree)
    assert up.startswith("..")
    edits = [
        "../x",
        up,
        str(target),
        str(daemon.repo / "a.py"),
        ".git/config",
        ".git/HEAD",
        "./.git/config",
        ".GIT/config",
        "docs/../../x",
        "escape.txt",
        "escape_dir/target.txt",
        "C:\\windows\\system32",
        "a.py\x00.txt",
    ]
    requests: list[dict[str, Any]] = [
        {"tool": "edit", "path": p, "old_string": "outside", "new_string": "pwned"} for p in edits
    ]
    patches = [
        "*** Add File: ../x\n+pwned\n",
        f"*** Add File: {up}.new\n+pwned\n",
        f"*** Add File: {target}.new\n+pwned\n",
        "*** Add File: escape_dir/new.txt\n+pwned\n",
        "*** Update File: escape.txt\n@@\n-outside the worktree\n+pwned\n",
        "*** Update File: escape_dir/target.txt\n@@\n-outside the worktree\n+pwned\n",
        f"*** Delete File: {up}\n",
        "*** Delete File: escape.txt\n",
        "*** Add File: .git/hooks/post-commit\n+#!/bin/sh\n",
        "*** Update File: b.py\n*** Move to: ../moved.py\n@@\n-VALUE = 1\n+VALUE = 2\n",
        "*** Update File: b.py\n*** Move to: escape_dir/moved.py\n@@\n-VALUE = 1\n+VALUE = 2\n",
    ]
    requests += [
        {"tool": "apply_patch", "patch": f"*** Begin Patch\n{p}*** End Patch\n"} for p in patches
    ]
    return requests


def test_paths_leaving_the_worktree_are_invalid_and_nothing_outside_changes(
    daemon: GitMode, conn: Raw
) -> None:
    worktree = daemon.repo / ".git" / "redline" / "worktrees" / "guard"
    assert (worktree / "escape.txt").is_symlink()
    before = _outside_state(daemon)
    inside = digest_tree(worktree, skip=(".git",))
    tip = rev(daemon.repo, "redline/guard")
    neighbours = sorted(p.name for p in worktree.parent.iterdir())

    for n, request in enumerate(_hostile_requests(daemon, worktree)):
        answer = conn.call(rpc("apply", {"session": "guard", "request": request}, n))
        result = answer["result"]
        assert result["status"] == "invalid", (request, result)
        assert result.get("commits", []) == [], request
        assert result["error"], request

    assert _outside_state(daemon) == before
    assert digest_tree(worktree, skip=(".git",)) == inside
    assert rev(daemon.repo, "redline/guard") == tip
    assert sorted(p.name for p in worktree.parent.iterdir()) == neighbours
    assert porcelain(worktree) == ""
    still_answers(daemon, conn)


def test_a_binary_file_is_refused(daemon: GitMode, conn: Raw) -> None:
    worktree = daemon.repo / ".git" / "redline" / "worktrees" / "guard"
    data = (worktree / "blob.bin").read_bytes()
    request = {"tool": "edit", "path": "blob.bin", "old_string": "IHDR", "new_string": "XXXX"}
    result = conn.call(rpc("apply", {"session": "guard", "request": request}, 31))["result"]
    assert result["status"] == "invalid"
    assert "binary" in result["error"].lower()
    assert (worktree / "blob.bin").read_bytes() == data
    assert branch_commits(daemon.repo, "redline/guard", "main") == []


def test_the_daemon_survives_everything_above(daemon: GitMode) -> None:
    status = daemon.cli.status()
    assert status["running"] is True
    log = (daemon.repo / ".git" / "redline" / "daemon.log").read_text()
    assert "Traceback" not in log, log
    assert "internal error" not in log
    assert git(daemon.repo, "fsck", "--no-dangling", "--no-progress") == ""
