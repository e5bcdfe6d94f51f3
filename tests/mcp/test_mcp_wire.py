"""``redline mcp`` on the wire: every frame answered as JSON-RPC 2.0 asks, a client that
goes away and a signal end it quietly.

Raw lines go to a real server process; what comes back is read line by line.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from mcp_fixtures import Folder

from gitmode_fixtures import REDLINE, GitMode, branch_commits, changed_files, rev

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def _call(request_id: int, name: str, arguments: Any) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def _nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


class Server:
    def __init__(self, folder: Folder, *args: str) -> None:
        self.proc = subprocess.Popen(
            [*REDLINE, "mcp", *(args or ("--embedded",)), "--repo", str(folder.root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=folder.env,
        )
        self.send(INITIALIZE)
        assert self.read()["id"] == 0
        self.send(INITIALIZED)

    def send(self, message: Any) -> None:
        raw = message if isinstance(message, bytes) else json.dumps(message).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(raw + b"\n")
        self.proc.stdin.flush()

    def read(self) -> Any:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, "the server closed its output"
        return json.loads(line)

    def close(self) -> tuple[int, str]:
        """Wait for the server to end; its exit status and what it said on stderr."""
        assert self.proc.stdin is not None and self.proc.stderr is not None
        if not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=60)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        said = self.proc.stderr.read().decode(errors="replace")
        self.release()
        return self.proc.returncode, said

    def release(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if pipe is not None and not pipe.closed:
                pipe.close()


@pytest.fixture
def server(folder: Folder) -> Any:
    server = Server(folder)
    yield server
    server.release()


def _no_crash(err: str, folder: Folder) -> None:
    assert "Traceback" not in err and "unexpected error" not in err, err
    assert "ExceptionGroup" not in err and "BrokenPipe" not in err, err


def test_every_frame_gets_the_answer_json_rpc_asks_for(server: Server, folder: Folder) -> None:
    server.send(b"this is not json")
    parse = server.read()
    assert parse["id"] is None and parse["error"]["code"] == -32700

    server.send(b'"a string"')
    assert server.read()["error"]["code"] == -32600

    server.send([])
    empty = server.read()
    assert empty["id"] is None and empty["error"]["code"] == -32600

    batch = [_call(7, "read", {"path": "b.py"}), INITIALIZED, {"jsonrpc": "2.0", "id": 8}]
    server.send(batch)
    answers = server.read()
    assert isinstance(answers, list)  # a batch is answered by an array...
    assert [a["id"] for a in answers] == [7, None]  # ...one per request, none for the rest
    assert {a["error"]["code"] for a in answers} == {-32600}
    assert "one JSON object on a line of its own" in answers[0]["error"]["data"]

    server.send({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": [1, 2]})
    wrong = server.read()
    assert wrong["id"] == 9 and wrong["error"]["code"] == -32600

    server.send(_call(10, "edit", {"path": "b.py", "old_string": _nested(200), "new_string": ""}))
    deep = server.read()
    assert deep["id"] is None and deep["error"]["code"] == -32600
    assert "levels deep" in deep["error"]["data"]

    server.send(_call(11, "edit", {"path": "b.py", "old_string": _nested(50), "new_string": ""}))
    fifty = server.read()
    assert fifty["id"] == 11 and fifty["result"]["isError"] is True
    assert fifty["result"]["structuredContent"]["status"] == "invalid"

    server.send(INITIALIZED)  # a notification: no answer; the next call is still served
    server.send(
        _call(12, "edit", {"path": "b.py", "old_string": "VALUE = 1", "new_string": "V = 2"})
    )
    applied = server.read()
    assert applied["id"] == 12
    assert applied["result"]["structuredContent"]["status"] == "applied"
    assert (folder.root / "b.py").read_text() == "V = 2\n"

    code, err = server.close()  # the client closes the wire: the server ends
    assert code == 0
    _no_crash(err, folder)


def test_a_client_that_goes_away_mid_answer_ends_the_server_quietly(
    server: Server, folder: Folder
) -> None:
    assert server.proc.stdout is not None
    server.proc.stdout.close()  # the client stops reading...
    server.send(_call(1, "read", {"path": "c.txt"}))  # ...and the answer finds no reader
    deadline = time.monotonic() + 30
    while server.proc.poll() is None:
        assert time.monotonic() < deadline, "the server kept running with nobody to answer"
        time.sleep(0.05)
    code, err = server.close()
    assert code == 0, err
    _no_crash(err, folder)
    cache = Path(folder.env["XDG_CACHE_HOME"]) if "XDG_CACHE_HOME" in folder.env else None
    if cache is not None:
        assert not list(cache.glob("redline/crash-*"))


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_stops_the_server_quietly(server: Server, folder: Folder, signum: int) -> None:
    server.send(_call(1, "read", {"path": "c.txt"}))
    assert server.read()["id"] == 1  # serving
    server.proc.send_signal(signum)
    code, err = server.close()
    assert code == 128 + signum
    _no_crash(err, folder)
    assert "interrupted" not in err
    assert os.path.exists(folder.root / "c.txt")


BAD_TEXT = [
    # (how the text is written on the wire, what the error says the field holds)
    (b"\\ud800", "a lone surrogate (U+D800)"),
    (b"\\u0000", "a NUL character (U+0000)"),
    (b"\xff", "a lone surrogate (U+DCFF, or the byte 0xFF, which is not valid UTF-8)"),
]


def _bad_calls(tools: list[str]) -> list[tuple[bytes, str, str]]:
    """Raw tools/call lines with ``@@`` where the bad text goes: (line, field, tool)."""
    calls = {
        "edit": ("new_string", {"path": "b.py", "old_string": "VALUE = 1", "new_string": "V@@"}),
        "write": ("content", {"path": "new.py", "content": "x = @@"}),
        "apply_patch": (
            "patch",
            {"patch": "*** Begin Patch\n*** Add File: new.py\n+@@\n*** End Patch\n"},
        ),
    }
    lines = []
    for number, tool in enumerate(tools, start=100):
        field, arguments = calls[tool]
        lines.append((json.dumps(_call(number, tool, arguments)).encode(), field, tool))
    return lines


def _refuses_bad_text(server: Server, tools: list[str]) -> None:
    for raw, what in BAD_TEXT:
        for line, field, tool in _bad_calls(tools):
            server.send(line.replace(b"@@", raw))
            answer = server.read()
            result = answer["result"]
            assert result["isError"] is True, (tool, answer)
            content = result["structuredContent"]
            assert content["status"] == "invalid", (tool, content)
            assert content["error"].startswith(f"{field!r} holds {what} at line "), content


def test_bad_text_is_refused_naming_the_field_embedded(server: Server, folder: Folder) -> None:
    _refuses_bad_text(server, ["edit", "write"])
    assert not (folder.root / "new.py").exists()
    assert (folder.root / "b.py").read_text() == "VALUE = 1\n"


def test_bad_text_is_refused_naming_the_field_in_git_mode(gm: GitMode) -> None:
    base = rev(gm.repo, "HEAD")
    folder = Folder(gm.repo, gm.env)
    server = Server(folder, "--session", "s", "--model", "gpt-5")  # apply_patch
    try:
        _refuses_bad_text(server, ["apply_patch"])
        server.send(
            _call(
                200,
                "apply_patch",
                {"patch": "*** Begin Patch\n*** Add File: ok.py\n+ok\n*** End Patch\n"},
            )
        )
        assert server.read()["result"]["structuredContent"]["status"] == "applied"
        code, err = server.close()
        assert code == 0, err
    finally:
        server.release()
    [commit] = branch_commits(gm.repo, "redline/s", base, gm.env)
    assert changed_files(gm.repo, commit, gm.env) == ["ok.py"]
