"""SIGINT and SIGTERM to ``redline apply`` and other commands, in processes of their own.

The request in hand is answered (``failed``, "interrupted", and whether anything
was written), answers already printed stay, a write in progress finishes whole
(its answer says what it did), and the command exits 128 + the signal with one
``redline: interrupted`` line. Where a signal must land inside a write, the
process sends it to itself from the write (a seam at the process edge).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gitmode_fixtures import GitMode, commit_records, gm, rev

__all__ = ["gm"]  # the fixture, for the tests that need a daemon

SIGNALS = [signal.SIGINT, signal.SIGTERM]
IDS = ["SIGINT", "SIGTERM"]


def _start(root: Path, *options: str, script: str | None = None) -> subprocess.Popen[bytes]:
    """``redline apply`` (or ``script``, which ends by calling redline's main) on ``root``."""
    args = ["-m", "redline", "apply", "--root", str(root), *options]
    if script is not None:
        args = ["-c", script, "apply", "--root", str(root), *options]
    return subprocess.Popen(
        [sys.executable, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(os.environ),
        cwd=root,
    )


def _finish(proc: subprocess.Popen[bytes]) -> tuple[int, list[dict[str, Any]], str]:
    out, err = proc.communicate(timeout=60)
    return proc.returncode, [json.loads(x) for x in out.decode().splitlines()], err.decode()


def _wait_in(proc: subprocess.Popen[bytes], call: Callable[[list[str]], bool], what: str) -> None:
    """Until the process is in a system call ``call`` accepts (its number and arguments,
    as /proc/<pid>/syscall gives them)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            now = Path(f"/proc/{proc.pid}/syscall").read_text().split()
        except OSError:
            now = []
        if call(now):
            return
        time.sleep(0.02)
    pytest.fail(f"redline apply never {what}")


def _wait_reading(proc: subprocess.Popen[bytes]) -> None:
    """Until the process waits on its stdin (its handlers are installed by then). A read
    counts only from file descriptor 0: reading a module's source while Python starts is
    a read too (the process is slow to start on a loaded machine)."""
    _wait_in(
        proc,  # read(0, …), poll, select, pselect6, ppoll
        lambda call: call[:2] == ["0", "0x0"] or call[:1] in (["7"], ["23"], ["270"], ["271"]),
        "waited on its stdin",
    )


def _edit(path: str, old: str, new: str) -> dict[str, Any]:
    return {"tool": "edit", "path": path, "old_string": old, "new_string": new}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "root"
    folder.mkdir()
    for i in range(6):
        (folder / f"f{i}.py").write_text(f"value = {i}\n")
    return folder


@pytest.mark.skipif(not Path("/proc/self/syscall").exists(), reason="needs /proc/<pid>/syscall")
@pytest.mark.parametrize("signum", SIGNALS, ids=IDS)
def test_a_request_not_read_whole_is_answered_and_nothing_is_applied(
    root: Path, signum: int
) -> None:
    proc = _start(root)
    assert proc.stdin is not None
    proc.stdin.write(b'{"tool": "edit", "path": "f0.py", "old_stri')  # half of it
    proc.stdin.flush()
    _wait_reading(proc)
    proc.send_signal(signum)
    code, answers, err = _finish(proc)
    assert code == 128 + signum
    assert err == "redline: interrupted\n"
    [answer] = answers
    assert answer["status"] == "failed"
    assert answer["error"] == (
        f"interrupted ({signal.Signals(signum).name}) before the request was read whole: it "
        "was not applied, nothing was written; send it again"
    )
    assert (root / "f0.py").read_text() == "value = 0\n"


@pytest.mark.skipif(not Path("/proc/self/syscall").exists(), reason="needs /proc/<pid>/syscall")
def test_a_stream_keeps_the_answers_printed_and_answers_the_line_half_sent(root: Path) -> None:
    proc = _start(root, "--jsonl")
    assert proc.stdin is not None and proc.stdout is not None
    for i in (0, 1):
        proc.stdin.write((json.dumps(_edit(f"f{i}.py", "value", "VALUE")) + "\n").encode())
    proc.stdin.flush()
    printed = [json.loads(proc.stdout.readline()) for _ in range(2)]
    proc.stdin.write(json.dumps(_edit("f2.py", "value", "VALUE"))[:20].encode())
    proc.stdin.flush()
    _wait_reading(proc)
    proc.send_signal(signal.SIGINT)
    code, rest, err = _finish(proc)
    assert code == 130 and err == "redline: interrupted\n"
    assert [a["status"] for a in printed] == ["applied", "applied"]
    [half] = rest
    assert half["status"] == "failed"
    assert "before the request was read whole: it was not applied" in half["error"]
    assert [(root / f"f{i}.py").read_text() for i in range(3)] == [
        "VALUE = 0\n",
        "VALUE = 1\n",
        "value = 2\n",
    ]


# A process that sends itself ``signum`` from inside a write (the second file written),
# then runs redline's main as the console script does.
_SIGNAL_IN_WRITE = """
import os, signal, sys
import redline.fsops.atomic as atomic
real = atomic.replace_file
calls = []
def replace_file(*args, **kwargs):
    calls.append(args[0])
    if len(calls) == 2:
        os.kill(os.getpid(), {signum})
    return real(*args, **kwargs)
atomic.replace_file = replace_file
import redline.fsops.files as files, redline.fsops.behind as behind
files.replace_file = replace_file
behind.replace_file = replace_file
from redline.cli.main import main
sys.argv = ["redline", *sys.argv[1:]]
main()
"""

PATCH = (
    "*** Begin Patch\n"
    + "".join(f"*** Update File: f{i}.py\n@@\n-value = {i}\n+value = {i + 10}\n" for i in range(6))
    + "*** End Patch\n"
)


@pytest.mark.parametrize("signum", SIGNALS, ids=IDS)
def test_a_signal_inside_a_patch_waits_until_every_group_is_written_and_answered(
    root: Path, signum: int
) -> None:
    proc = _start(root, script=_SIGNAL_IN_WRITE.format(signum=int(signum)))
    request = json.dumps({"tool": "apply_patch", "patch": PATCH}).encode()
    out, err = proc.communicate(request, timeout=60)
    assert proc.returncode == 128 + signum
    assert err.decode() == "redline: interrupted\n"
    [answer] = [json.loads(x) for x in out.decode().splitlines()]
    assert answer["status"] == "applied"
    assert [(root / f"f{i}.py").read_text() for i in range(6)] == [
        f"value = {i + 10}\n" for i in range(6)
    ]
    assert not [p for p in root.iterdir() if "redline-tmp" in p.name]


def test_a_signal_while_a_stream_holds_edits_writes_them_and_prints_their_answers(
    root: Path,
) -> None:
    """Edits of a --jsonl stream are held while more requests wait; the signal comes as the
    held files are written: every held edit is written and answered, none is lost."""
    proc = _start(root, "--jsonl", script=_SIGNAL_IN_WRITE.format(signum=int(signal.SIGINT)))
    lines = "".join(json.dumps(_edit(f"f{i}.py", "value", "VALUE")) + "\n" for i in range(4))
    out, err = proc.communicate(lines.encode(), timeout=60)
    assert proc.returncode == 130 and err.decode() == "redline: interrupted\n"
    answers = [json.loads(x) for x in out.decode().splitlines()]
    assert [a["status"] for a in answers] == ["applied"] * 4
    assert [(root / f"f{i}.py").read_text() for i in range(4)] == [
        f"VALUE = {i}\n" for i in range(4)
    ]


# A process that sends itself SIGINT the moment a --jsonl stream holds an edit's new bytes
# (before the edit is answered), then runs redline's main as the console script does.
_SIGNAL_AFTER_HOLD = """
import os, signal, sys
import redline.fsops.behind as behind
real = behind.WriteBehind.hold
def hold(self, *args, **kwargs):
    real(self, *args, **kwargs)
    os.kill(os.getpid(), signal.SIGINT)
behind.WriteBehind.hold = hold
from redline.cli.main import main
sys.argv = ["redline", *sys.argv[1:]]
main()
"""


def test_a_signal_once_an_edit_is_held_answers_it_as_written(root: Path) -> None:
    """A held edit is as good as written (the stream writes what it holds when stopped), so
    the signal waits for its answer: never "nothing was written" for a file that was."""
    proc = _start(root, "--jsonl", script=_SIGNAL_AFTER_HOLD)
    lines = "".join(json.dumps(_edit(f"f{i}.py", "value", "VALUE")) + "\n" for i in range(4))
    out, err = proc.communicate(lines.encode(), timeout=60)
    assert proc.returncode == 130 and err.decode() == "redline: interrupted\n"
    first, *rest = [json.loads(x) for x in out.decode().splitlines()]
    assert first["status"] == "applied" and first["path"] == "f0.py"
    # the next line, already read whole, is answered too: not applied
    assert [(a["status"], a["error"]) for a in rest] == [
        (
            "failed",
            "interrupted (SIGINT) before the request was started: it was not applied, nothing "
            "was written; send it again",
        )
    ]
    assert [(root / f"f{i}.py").read_text() for i in range(4)] == [
        "VALUE = 0\n",
        "value = 1\n",
        "value = 2\n",
        "value = 3\n",
    ]


# A process that sends itself SIGINT the moment its first answer is printed.
_SIGNAL_AFTER_ANSWER = """
import os, signal, sys
import redline.cli.apply_stream as stream
real = stream._emit
def emit(payload):
    real(payload)
    os.kill(os.getpid(), signal.SIGINT)
stream._emit = emit
from redline.cli.main import main
sys.argv = ["redline", *sys.argv[1:]]
main()
"""


@pytest.mark.parametrize("options", [(), ("--jsonl",)], ids=["one request", "jsonl"])
def test_a_signal_as_a_request_is_answered_gives_it_one_answer(
    root: Path, options: tuple[str, ...]
) -> None:
    """Once a request's answer is being printed, the signal waits for it: the request is
    not answered a second time ("interrupted"), and the answer printed stands."""
    proc = _start(root, *options, script=_SIGNAL_AFTER_ANSWER)
    request = json.dumps(_edit("f0.py", "no such text", "VALUE")) + "\n"
    out, err = proc.communicate(request.encode(), timeout=60)
    assert proc.returncode == 130 and err.decode() == "redline: interrupted\n"
    [answer] = [json.loads(x) for x in out.decode().splitlines()]
    assert answer["status"] == "no_match" and "interrupted" not in answer["error"]
    assert (root / "f0.py").read_text() == "value = 0\n"


def _wait_writing_stdout(proc: subprocess.Popen[bytes]) -> None:
    """Until the process is blocked writing to its stdout: write(1, …)."""
    _wait_in(proc, lambda call: call[:2] == ["1", "0x1"], "blocked writing its answer")


_BIG_READ = json.dumps({"tool": "read", "path": "big.txt"}).encode()


def _big_file(root: Path) -> None:
    """A file whose read answers ~600 KB: far more than a pipe holds."""
    (root / "big.txt").write_text("".join(f"line {n} {'x' * 300}\n" for n in range(2000)))


def _blocked_answering(root: Path) -> subprocess.Popen[bytes]:
    """``redline apply`` of a read of :func:`_big_file`, blocked writing the answer: nobody
    reads yet."""
    _big_file(root)
    proc = _start(root)
    assert proc.stdin is not None
    proc.stdin.write(_BIG_READ)
    proc.stdin.close()
    _wait_writing_stdout(proc)
    return proc


@pytest.mark.skipif(not Path("/proc/self/syscall").exists(), reason="needs /proc/<pid>/syscall")
def test_an_unbuffered_stdout_that_does_not_wait_gets_the_whole_answer(root: Path) -> None:
    """``python -u`` (or PYTHONUNBUFFERED) writes stdout straight to the pipe; a pipe its
    reader made non-blocking takes what fits and says so (a short count, or nothing when
    full). The answer waits for room and goes out whole."""
    _big_file(root)
    reading, writing = os.pipe()
    os.set_blocking(writing, False)  # the open pipe's flag: the child's stdout shares it
    with open(reading, "rb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-u", "-m", "redline", "apply", "--root", str(root)],
            stdin=subprocess.PIPE,
            stdout=writing,
            stderr=subprocess.PIPE,
            env=dict(os.environ),
            cwd=root,
        )
        os.close(writing)
        assert proc.stdin is not None and proc.stderr is not None
        proc.stdin.write(_BIG_READ)
        proc.stdin.close()
        # the pipe is full: the command waits for room (select), not in a loop of tries
        _wait_in(proc, lambda call: call[:1] in (["23"], ["270"]), "waited for room on stdout")
        [answer] = [json.loads(x) for x in out.read().decode().splitlines()]
    with proc.stderr:
        assert proc.wait(timeout=30) == 0, proc.stderr.read()
    assert answer["status"] == "read" and len(answer["content"].splitlines()) == 2000


@pytest.mark.skipif(not Path("/proc/self/syscall").exists(), reason="needs /proc/<pid>/syscall")
def test_a_signal_while_an_answer_waits_for_its_reader_lets_it_be_read_whole(
    root: Path,
) -> None:
    """The signal cuts the blocked write short; the answer is written on, all of it, and
    only then does the command stop."""
    proc = _blocked_answering(root)
    proc.send_signal(signal.SIGTERM)
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(timeout=0.3)  # the signal waits for the answer
    assert proc.stdout is not None and proc.stderr is not None
    with proc.stdout, proc.stderr:
        [answer] = [json.loads(x) for x in proc.stdout.read().decode().splitlines()]
        assert proc.wait(timeout=30) == 143
        assert proc.stderr.read().decode() == "redline: interrupted\n"
    assert answer["status"] == "read" and len(answer["content"].splitlines()) == 2000


@pytest.mark.skipif(not Path("/proc/self/syscall").exists(), reason="needs /proc/<pid>/syscall")
def test_a_second_signal_stops_an_answer_nobody_reads(root: Path) -> None:
    """When the reader does not read and the request wrote nothing, a second signal
    stops the command at once."""
    proc = _blocked_answering(root)
    proc.send_signal(signal.SIGINT)
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(timeout=0.3)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=30) == 130
    assert proc.stdout is not None and proc.stderr is not None
    with proc.stdout, proc.stderr:
        assert proc.stderr.read().decode() == "redline: interrupted\n"


@pytest.mark.skipif(not Path("/proc/self/syscall").exists(), reason="needs /proc/<pid>/syscall")
def test_another_command_stops_with_one_line(tmp_path: Path, gm: GitMode) -> None:
    """``redline guard --stage pre-push`` reads the refs git pushes from stdin."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "redline", "guard", "--stage", "pre-push"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=gm.env,
        cwd=gm.repo,
    )
    _wait_reading(proc)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143
    assert out == b""
    assert err.decode() == "redline: interrupted\n"


# The session client sends itself SIGINT just before it sends the request: the signal
# waits for the daemon's answer, which is printed.
_SIGNAL_BEFORE_SEND = """
import os, signal, sys
import redline.daemon.client as client
real = client.Client.call
def call(self, method, params=None, **how):
    if method == "apply":
        os.kill(os.getpid(), signal.SIGINT)
    return real(self, method, params, **how)
client.Client.call = call
from redline.cli.main import main
sys.argv = ["redline", *sys.argv[1:]]
main()
"""


def test_a_request_sent_to_the_daemon_is_answered_as_the_daemon_answers(gm: GitMode) -> None:
    base = rev(gm.repo, "HEAD")
    gm.cli.open_session("s")
    request = json.dumps(_edit("b.py", "VALUE = 1", "VALUE = 2"))
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            _SIGNAL_BEFORE_SEND,
            "apply",
            "--session",
            "s",
            "--repo",
            str(gm.repo),
        ],
        input=request.encode(),
        capture_output=True,
        env=gm.env,
        cwd=gm.repo,
        timeout=60,
    )
    assert proc.returncode == 130
    assert proc.stderr.decode() == "redline: interrupted\n"
    [answer] = [json.loads(x) for x in proc.stdout.decode().splitlines()]
    assert answer["status"] == "applied"
    [record] = commit_records(gm.repo, "redline/s", base, gm.env)
    assert [c["commit"] for c in answer["commits"]] == [record.commit]
    assert record.note is not None
