"""SIGINT and SIGTERM at random moments: to ``redline apply`` (embedded and through a
session), to ``redline mcp`` and to the daemon under load.

Each run waits until the process serves (a first request answered: its handlers are
installed), sends the request under test, then the signal after a random delay
within the time the request takes. Whatever the moment: the command exits 128 +
the signal with one ``redline: interrupted`` line (quietly for the servers), every
answer it printed holds, the request in hand is answered, and no file group is
half-written; a session's branch holds exactly what was answered applied.
The delays come from a seeded generator: a failure repeats.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from fault_support import Place, RealDaemon, Writer, check_sessions, start_writers

from gitmode_fixtures import REDLINE, commit_records, digest_tree, rev

pytestmark = pytest.mark.slow
RUNS = 8
SIGNALS = (signal.SIGINT, signal.SIGTERM)
FILES = 40


def _patch(old: str, new: str) -> str:
    body = "".join(
        f"*** Update File: f{i:02}.py\n@@\n-value = '{old}'\n+value = '{new}'\n"
        for i in range(FILES)
    )
    return f"*** Begin Patch\n{body}*** End Patch\n"


def _files(folder: Path, value: str) -> None:
    for i in range(FILES):
        lines = [f"line_{n} = {n}\n" for n in range(3000)]
        (folder / f"f{i:02}.py").write_text("".join(lines) + f"value = '{value}'\n")


def _serving(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen[bytes]:
    """``redline`` with ``args``, once it has answered a first read (its handlers are on)."""
    proc = subprocess.Popen(
        [*REDLINE, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b'{"tool": "read", "path": "f00.py", "limit": 1}\n')
    proc.stdin.flush()
    first = json.loads(proc.stdout.readline())
    assert first["status"] == "read", first
    return proc


def _timed(args: list[str], env: dict[str, str], cwd: Path, request: dict[str, Any]) -> float:
    """How long ``request`` takes once the process serves (the window for the signals)."""
    proc = _serving(args, env, cwd)
    assert proc.stdin is not None and proc.stdout is not None
    started = time.monotonic()
    proc.stdin.write(json.dumps(request).encode() + b"\n")
    proc.stdin.flush()
    answer = json.loads(proc.stdout.readline())
    took = time.monotonic() - started
    proc.stdin.close()
    proc.wait(timeout=60)
    proc.stdout.close()
    assert proc.stderr is not None
    proc.stderr.close()
    assert answer["status"] == "applied", answer
    return took


def _interrupted(
    args: list[str],
    env: dict[str, str],
    cwd: Path,
    request: dict[str, Any],
    delay: float,
    signum: int,
) -> list[dict[str, Any]]:
    """The answers printed after ``request`` when ``signum`` came ``delay`` s after it."""
    proc = _serving(args, env, cwd)
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(request).encode() + b"\n")
    proc.stdin.flush()
    time.sleep(delay)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=120)
    # (seen once in a whole run, not repeated in 320 runs under load since: exit 1 and
    # nothing on stderr, 0.06 s into a request; what it printed says where it stopped)
    assert proc.returncode == 128 + signum, (proc.returncode, err, out, delay)
    assert err.decode() == "redline: interrupted\n"
    return [json.loads(x) for x in out.decode().splitlines()]


def test_embedded_apply_interrupted_at_random_moments(tmp_path: Path, place: Place) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    _files(folder, "a")
    args = ["apply", "--root", str(folder), "--jsonl"]
    window = _timed(args, place.env, folder, {"tool": "apply_patch", "patch": _patch("a", "b")})
    state = "b"
    rng = random.Random(22)
    for run in range(RUNS):
        new = f"v{run}"
        before = digest_tree(folder)
        request = {"tool": "apply_patch", "patch": _patch(state, new)}
        signum = SIGNALS[run % 2]
        [answer] = _interrupted(args, place.env, folder, request, rng.uniform(0, window), signum)
        values = {
            (folder / f"f{i:02}.py").read_text().rsplit("=", 1)[1].strip() for i in range(FILES)
        }
        if answer["status"] == "applied":
            assert values == {repr(new)}  # the whole patch
            state = new
        else:
            assert answer["status"] == "failed", answer
            assert "before it was applied: nothing was written" in answer["error"], answer
            assert digest_tree(folder) == before  # nothing, not one file of the group
        assert not [p for p in folder.iterdir() if "redline-tmp" in p.name]


def test_session_apply_interrupted_at_random_moments(place: Place) -> None:
    daemon = RealDaemon(place.repo, place.env)
    try:
        base = rev(place.repo, "HEAD", place.env)
        [writer] = start_writers(daemon, place.repo, ["signals"])
        worktree = place.repo / ".git" / "redline" / "worktrees" / "signals"
        _files(worktree, "a")  # committed as an external change by the first request
        args = ["apply", "--session", "signals", "--repo", str(place.repo), "--jsonl"]
        window = _timed(
            args, place.env, place.repo, {"tool": "apply_patch", "patch": _patch("a", "b")}
        )
        state = "b"
        earlier = len(commit_records(place.repo, "redline/signals", base))
        rng = random.Random(23)
        applied: list[str] = []
        for run in range(RUNS):
            new = f"v{run}"
            request = {"tool": "apply_patch", "patch": _patch(state, new)}
            signum = SIGNALS[run % 2]
            [answer] = _interrupted(
                args, place.env, place.repo, request, rng.uniform(0, window), signum
            )
            if answer["status"] == "applied":
                applied += [
                    c["commit"] for c in answer.get("commits", []) if c["source"] == "agent"
                ]
                state = new
            else:
                assert answer["status"] == "failed", answer
                assert "before it was applied: nothing was written" in answer["error"], answer
        records = commit_records(place.repo, "redline/signals", base)
        assert [r.commit for r in records[earlier:]] == applied  # the branch is the answers
        writer.commits = [r.commit for r in records if r.note and r.note["source"] == "agent"]
        writer.value = 1
        check_sessions(place.repo, [writer], base)
    finally:
        daemon.stop()


def test_mcp_stopped_at_random_moments_answers_what_it_did(tmp_path: Path, place: Place) -> None:
    folder = tmp_path / "mcp"
    folder.mkdir()
    _files(folder, "a")
    rng = random.Random(24)
    for run in range(RUNS // 2):
        proc = subprocess.Popen(
            [*REDLINE, "mcp", "--embedded", "--repo", str(folder), "--model", "gpt-5"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=place.env,
        )
        assert proc.stdin is not None and proc.stdout is not None
        hello = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
        proc.stdin.write(json.dumps(hello).encode() + b"\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 0
        proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        current = (folder / "f00.py").read_text().rsplit("=", 1)[1].strip().strip("'")
        call = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "apply_patch", "arguments": {"patch": _patch(current, f"m{run}")}},
        }
        proc.stdin.write(json.dumps(call).encode() + b"\n")
        proc.stdin.flush()
        time.sleep(rng.uniform(0, 0.3))
        signum = SIGNALS[run % 2]
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 128 + signum, err
        assert b"Traceback" not in err and b"interrupted" not in err, err
        values = {
            (folder / f"f{i:02}.py").read_text().rsplit("=", 1)[1].strip() for i in range(FILES)
        }
        assert len(values) == 1  # the patch whole, or not at all
        for line in out.decode().splitlines():  # an answer that came out says what happened
            result = json.loads(line)["result"]["structuredContent"]
            assert result["status"] == "applied" and values == {f"'m{run}'"}


def test_the_daemon_stopped_at_a_random_moment_under_load(place: Place) -> None:
    """SIGTERM to the daemon while three clients send edits: each request in flight is
    answered, later ones are told the daemon is stopping; it exits quietly, and after a
    new start the branches hold exactly what was answered applied."""
    daemon = RealDaemon(place.repo, place.env)
    base = rev(place.repo, "HEAD", place.env)
    writers = start_writers(daemon, place.repo, [f"stop-{i}" for i in range(3)])
    done = threading.Event()
    lost: list[Writer] = []

    def load(writer: Writer) -> None:
        with daemon.client() as conn:
            while not done.is_set():
                try:
                    answer = writer.send(conn)
                except OSError:  # the daemon had closed this idle connection: never sent
                    return
                if answer.error is not None:
                    if answer.error["code"] == -32000:  # closed before answering
                        lost.append(writer)
                    return

    threads = [threading.Thread(target=load, args=(w,), daemon=True) for w in writers]
    for thread in threads:
        thread.start()
    time.sleep(random.Random(25).uniform(0.2, 1.0))
    os.kill(daemon.pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while daemon.alive():
        assert time.monotonic() < deadline, "the daemon did not stop"
        time.sleep(0.05)
    done.set()
    for thread in threads:
        thread.join(timeout=60)
    assert lost == []  # every request in flight was answered before the daemon went
    log = (place.repo / ".git" / "redline" / "daemon.log").read_text()
    assert "Traceback" not in log and " ERROR " not in log, log[-3000:]
    for writer in writers:
        stopping = [a for a in writer.answers if a.error is not None]
        assert all(a.error and a.error["code"] == -32003 for a in stopping), stopping
    restarted = RealDaemon(place.repo, place.env)
    try:
        check_sessions(place.repo, writers, base)
    finally:
        restarted.stop()
