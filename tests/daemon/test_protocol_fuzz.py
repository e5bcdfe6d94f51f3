"""Hypothesis against a live daemon: hostile frames never go unanswered or take it down.

Each example is a batch sent on one connection: frames of every kind — JSON-RPC
requests and notifications with random members, malformed JSON, JSON that is
not an object, arrays and objects nested far too deep (closed or not), lines
over the size limit, random bytes and invalid UTF-8 — ending with a newline, as
a partial frame (no newline, then the client closes its side), or abandoned
(the client goes away without reading); around it, a burst of connections.

What must hold after every batch:
- every complete frame gets exactly one answer, in order, with the id the
  frame's request had (null when it had none, or none that can be read), and
  a notification gets none; after a partial frame the daemon answers it, then
  closes the connection;
- every answer is JSON-RPC 2.0 with a result or an error, and an error says
  what was wrong (``data``);
- the daemon is alive: ``hello`` works on a fresh connection, and a valid edit
  request applies and commits;
- its log holds no traceback.

The examples are derandomized (the "ci" profile in tests/conftest.py) and few
enough to keep the module to seconds.
"""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitmode_fixtures import FILES, GitMode, git_mode, rev
from redline.daemon.protocol import MAX_DEPTH, MAX_MESSAGE

SESSION = "fuzz"
ERROR_CODES = {-32700, -32600, -32601, -32602, -32603, -32001, -32002, -32003}
_NO_ANSWER = object()


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GitMode]:
    home = tmp_path_factory.mktemp("fuzz-home")
    files = {**FILES, "fuzz.txt": "count = 0\n"}
    with git_mode(tmp_path_factory.mktemp("fuzz"), home, files) as mode:
        mode.cli.ok("daemon", "start", "--repo", str(mode.repo))
        mode.cli.open_session(SESSION)
        yield mode


# --- frames ------------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
ids = st.none() | st.integers(-(2**40), 2**40) | st.text(max_size=6) | json_values
methods = st.sampled_from(["hello", "session.list", "log", "apply", "no.such", ""]) | st.text(
    max_size=8
).filter(lambda m: m != "shutdown")  # a request to stop is not fuzzed: it would be obeyed
params = st.fixed_dictionaries(
    {},
    optional={
        "protocol": st.just(1) | json_values,
        "session": st.just(SESSION) | json_values,
        "request": json_values,
        "name": json_values,
    },
)


@st.composite
def requests(draw: st.DrawFn) -> bytes:
    """Mostly well-formed requests with random members; now and then a broken envelope."""
    broken = draw(st.integers(0, 3)) == 0
    message: dict[str, Any] = {"jsonrpc": draw(json_values) if broken else "2.0"}
    message["method"] = draw(json_values if draw(st.integers(0, 5)) == 0 else methods)
    if draw(st.integers(0, 4)):  # mostly requests; sometimes a notification
        message["id"] = draw(ids)
    if draw(st.booleans()):
        message["params"] = draw(json_values if draw(st.integers(0, 5)) == 0 else params)
    return json.dumps(message).encode()


@st.composite
def nested(draw: st.DrawFn) -> bytes:
    depth = draw(st.integers(MAX_DEPTH - 3, 3000))
    opener, closer = draw(st.sampled_from([(b"[", b"]"), (b'{"k": ', b"}")]))
    inner = opener * depth + b"0" + (closer * depth if draw(st.booleans()) else b"")
    if draw(st.booleans()):  # inside a request that is otherwise valid
        return b'{"jsonrpc": "2.0", "id": 7, "method": "hello", "params": {"x": ' + inner + b"}}"
    return inner


@st.composite
def oversized(draw: st.DrawFn) -> bytes:
    size = MAX_MESSAGE + draw(st.integers(-2, 64))
    return draw(st.sampled_from([b"x", b"[", b" "])) * size


@st.composite
def truncated(draw: st.DrawFn) -> bytes:
    whole = draw(requests())
    return whole[: draw(st.integers(0, max(0, len(whole) - 1)))]


frames = st.one_of(
    requests(),
    requests(),
    truncated(),
    nested(),
    json_values.map(lambda v: json.dumps(v).encode()),  # JSON, mostly not an object
    nested(),
    oversized(),
    st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")),
    st.binary(min_size=1, max_size=12).map(lambda b: bytes(c | 0x80 for c in b)),  # not UTF-8
)


@dataclass(frozen=True)
class Batch:
    frames: list[bytes]
    ending: str  # "newline", "partial" or "abandon"
    burst: int  # extra connections opened around it


batches = st.builds(
    Batch,
    frames=st.lists(frames, min_size=1, max_size=8),
    ending=st.sampled_from(["newline", "newline", "partial", "abandon"]),
    burst=st.integers(0, 24),
)


# --- what the daemon must answer ---------------------------------------------------------------


def _depth_over(value: Any, limit: int) -> bool:
    level = [value] if isinstance(value, (list, dict)) else []
    for _ in range(limit):
        level = [
            c
            for v in level
            for c in (v.values() if isinstance(v, dict) else v)
            if isinstance(c, (list, dict))
        ]
    return bool(level)


def _valid_id(value: Any) -> bool:
    return value is None or (isinstance(value, (str, int)) and not isinstance(value, bool))


def expected_id(frame: bytes) -> Any:
    """The id the answer to ``frame`` carries, or _NO_ANSWER for a notification."""
    if len(frame) > MAX_MESSAGE:
        return None
    try:
        message = json.loads(frame.decode("utf-8"))
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict) or _depth_over(message, MAX_DEPTH):
        return None
    request_id = message.get("id")
    envelope_ok = (
        message.get("jsonrpc") == "2.0"
        and isinstance(message.get("method"), str)
        and ("id" not in message or _valid_id(request_id))
        and ("params" not in message or isinstance(message["params"], dict))
    )
    if not envelope_ok:
        return request_id if _valid_id(request_id) else None
    return request_id if "id" in message else _NO_ANSWER


def check_answer(line: bytes, want_id: Any) -> None:
    assert line.endswith(b"\n"), f"no complete answer: {line[:200]!r}"
    answer = json.loads(line)
    assert answer["jsonrpc"] == "2.0"
    assert answer["id"] == want_id, answer
    assert ("result" in answer) != ("error" in answer), answer
    if "error" in answer:
        err = answer["error"]
        assert err["code"] in ERROR_CODES, answer
        assert isinstance(err["message"], str) and err["message"]
        assert isinstance(err.get("data"), str) and err["data"], answer


# --- the client side ---------------------------------------------------------------------------


def connect(path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(60)
    sock.connect(str(path))
    return sock


def hello(request_id: Any) -> bytes:
    message = {"jsonrpc": "2.0", "id": request_id, "method": "hello", "params": {"protocol": 1}}
    return json.dumps(message).encode() + b"\n"


def send_batch(path: Path, batch: Batch) -> None:
    burst = [connect(path) for _ in range(batch.burst)]
    sock = connect(path)
    reader = sock.makefile("rb")
    try:
        for n, other in enumerate(burst):
            other.sendall(hello(f"burst-{n}"))
        frames = list(batch.frames)
        last = frames.pop() if batch.ending == "partial" else None
        data = b"".join(frame + b"\n" for frame in frames)
        if batch.ending == "abandon":  # gone without reading: the daemon must not mind
            sock.shutdown(socket.SHUT_RD)  # its answers fail, so it may stop reading too
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                sock.sendall(data)
            return
        data += hello("sentinel") if last is None else last
        if last:  # bytes after the last newline are a last frame
            frames.append(last)
        # Sent beside the reading: the daemon answers while later frames are on their
        # way, and it waits for its answers to be taken before it reads on.
        with ThreadPoolExecutor(max_workers=1) as pool:
            sent = pool.submit(_send_all, sock, data, last is not None)
            try:
                for frame in frames:
                    want = expected_id(frame)
                    if want is not _NO_ANSWER:
                        check_answer(reader.readline(), want)
                if last is not None:
                    assert reader.readline() == b"", "the connection stayed open after a last frame"
                else:
                    check_answer(reader.readline(), "sentinel")  # nothing extra came before it
            except BaseException:
                sock.shutdown(socket.SHUT_RDWR)  # so that the sender stops too
                raise
            sent.result()
        for n, other in enumerate(burst):
            with other.makefile("rb") as answers:
                check_answer(answers.readline(), f"burst-{n}")
    finally:
        reader.close()
        sock.close()
        for other in burst:
            other.close()


def _send_all(sock: socket.socket, data: bytes, close_side: bool) -> None:
    sock.sendall(data)
    if close_side:
        sock.shutdown(socket.SHUT_WR)


def call(path: Path, method: str, params: dict[str, Any]) -> Any:
    with connect(path) as sock, sock.makefile("rb") as reader:
        message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        sock.sendall(json.dumps(message).encode() + b"\n")
        answer = json.loads(reader.readline())
    assert "result" in answer, answer
    return answer["result"]


def a_valid_edit_applies(mode: GitMode) -> None:
    worktree = Path(mode.repo / ".git" / "redline" / "worktrees" / SESSION)
    text = (worktree / "fuzz.txt").read_text()
    count = int(text.split("=")[1])
    request = {
        "tool": "edit",
        "path": "fuzz.txt",
        "old_string": text,
        "new_string": f"count = {count + 1}\n",
    }
    result = call(mode.socket(), "apply", {"session": SESSION, "request": request})
    assert result["status"] == "applied", result
    assert len(result["commits"]) == 1
    assert rev(mode.repo, f"redline/{SESSION}") == result["commits"][0]["commit"]
    assert (worktree / "fuzz.txt").read_text() == f"count = {count + 1}\n"


# --- the test ----------------------------------------------------------------------------------


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,  # the hermetic HOME: the same for every batch
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
@given(batch=batches)
def test_hostile_frames_are_answered_and_the_daemon_goes_on(daemon: GitMode, batch: Batch) -> None:
    pid = daemon.cli.pid()
    send_batch(daemon.socket(), batch)
    assert call(daemon.socket(), "hello", {"protocol": 1})["protocol"] == 1
    a_valid_edit_applies(daemon)
    assert daemon.cli.pid() == pid, "the daemon was replaced"
    log = (daemon.repo / ".git" / "redline" / "daemon.log").read_text()
    assert "Traceback" not in log, log[-3000:]
