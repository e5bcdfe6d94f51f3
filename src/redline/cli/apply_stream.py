"""What ``redline apply`` does: requests on stdin, results on stdout.

Embedded mode applies requests to the files under ``--root`` in this process;
with ``--session`` they go to the repository's daemon, which commits them in
the session's worktree. No click here: ``redline.cli.main`` starts this without
it (the options as ``redline.cli.apply`` declares them), and neither path
imports a heavy library it does not use.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from redline.pipeline.runners import (
    Runner,
    embedded_runner,
    failure,
    guarded,
    rpc_error,
    unavailable,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from redline.engine.errors import RedlineError
    from redline.engine.result import Status
    from redline.fsops.behind import WriteBehind
    from redline.settings.folder import FolderSettings


def run_apply(
    root: Path,
    session: str | None,
    repo: Path,
    jsonl: bool,
    dry_run: bool,
    threshold: float | None,
    full: bool = False,
) -> int:
    """Apply the requests on stdin, print each result; the exit code (the worst of the
    requests': 0 applied, no change or read, 1 not applied, 2 bad request, 3 partially
    applied); every field of each result with ``full``."""
    from redline.fsops import interrupts

    # Bytes, not the locale's text: JSON on the wire is UTF-8 whatever the locale says.
    stdin = sys.stdin.buffer
    stream = _Stream(_Requests(stdin) if jsonl else None, full)
    closing: list[Callable[[], None]] = []
    try:
        behind, runner, close = _ready(root, session, repo, jsonl, dry_run, threshold, full)
        closing.append(close)
        stream.behind = behind
        for data in stream.lines(stdin):
            stream.in_hand = decoded = _decode(data)
            if behind is not None and not _is_edit(decoded):
                stream.answer(behind.flush())
            payload = runner(decoded) if not _is_problem(decoded) else _invalid(decoded)
            # Decided: a signal waits until the request is answered, and it is answered
            # once. One that wrote is waited for however long printing takes, as its
            # writes were; for one that wrote nothing, a second signal stops at once
            # (printing may wait on a reader that no longer reads).
            with interrupts.writing(patient=interrupts.wrote()):
                stream.in_hand = _ANSWERING
                if behind is None:
                    stream.answer([payload])
                else:
                    behind.answer(payload)
                    if behind.full or stream.requests is None or not stream.requests.waiting():
                        stream.answer(behind.flush())
                stream.in_hand = _NOTHING
            interrupts.answered()
        if behind is not None:
            stream.answer(behind.flush())
            interrupts.answered()
    except interrupts.Interrupted as exc:
        stream.interrupted(exc, session)
        raise
    finally:
        for close in closing:
            close()
    return stream.worst


def _ready(
    root: Path,
    session: str | None,
    repo: Path,
    jsonl: bool,
    dry_run: bool,
    threshold: float | None,
    full: bool,
) -> tuple[WriteBehind | None, Runner, Callable[[], None]]:
    """The write-behind (embedded ``--jsonl``), the runner of the requests, and what ends
    the runner's connection when the stream is done (``full``: the daemon answers with
    every field)."""
    behind = None
    close = _nothing
    try:
        if session is not None:
            runner, close = _session_runner(repo, session, dry_run, threshold, full)
        else:
            from redline.settings.folder import read_folder

            if jsonl and not dry_run:
                from redline.fsops.behind import WriteBehind

                behind = WriteBehind()
            folder = read_folder(root)  # once, for every step
            runner = embedded_runner(root, dry_run, threshold, behind, folder)
            runner = _permitted(runner, root, folder)
        # The daemon judges a session's requests itself (daemon.settings): every client meets
        # the same rules, read from the main line.
        return behind, runner, close
    except Exception as exc:  # not even ready to apply: each request still gets its answer
        return None, unavailable(exc, session), close


def _nothing() -> None:
    pass


_NOTHING = object()  # no request in hand
_READING = object()  # a request is being read
_NEXT = object()  # the next request is read whole, not yet started
_ANSWERING = object()  # the request in hand is being answered


class _Stream:
    """The requests of one ``apply`` and what it has answered: on a signal, the answers
    held for writing are written and printed, then the request in hand is answered."""

    def __init__(self, requests: _Requests | None, full: bool = False) -> None:
        self.requests = requests
        self.full = full
        self.behind: WriteBehind | None = None
        self.in_hand: Any = _NOTHING
        self.worst = 0

    def lines(self, stdin: Any) -> Iterator[bytes]:
        if self.requests is None:
            self.in_hand = _READING
            yield stdin.read()
            return
        yield from self.requests

    def answer(self, payloads: list[dict[str, Any]]) -> None:
        self.worst = _answer(payloads, self.worst, self.full)

    def interrupted(self, exc: Any, session: str | None) -> None:
        """Answer what is owed once a signal stops the stream (see the class)."""
        from redline.fsops import interrupts

        name = interrupts.NAMES.get(exc.signum, "a signal")
        if self.behind is not None:
            with interrupts.writing():  # a second signal waits for these writes too
                held = self.behind.flush()
            self.answer(held)
        if self.in_hand is _ANSWERING:
            return  # a second signal, as its answer was printed: it is not answered again
        if self.in_hand is _NOTHING and self.requests is not None and self.requests.partial():
            # the next request came, whole or in part: it is answered
            self.in_hand = _NEXT if self.requests.line_read() else _READING
        if self.in_hand is _NOTHING:
            return
        if exc.answer is not None:
            self.answer([exc.answer])
        elif self.in_hand is _READING or self.in_hand is _NEXT:
            before = "read whole" if self.in_hand is _READING else "started"
            error = (
                f"interrupted ({name}) before the request was {before}: it was not applied, "
                "nothing was written; send it again"
            )
            self.answer([failure("failed", None, error, session)])
        else:
            error = (
                f"interrupted ({name}) before it was applied: nothing was written; send it "
                "again to apply it"
            )
            self.answer([failure("failed", self.in_hand, error, session)])


def _answer(payloads: list[dict[str, Any]], worst: int, full: bool) -> int:
    """Print ``payloads`` (every field with ``full``); the highest exit code so far."""
    for payload in payloads:
        _emit(payload if full or isinstance(payload, _Shown) else _shown(payload))
        worst = max(worst, _exit_code(payload))
    return worst


class _Shown(dict[str, Any]):
    """A result already cut to what the caller is shown: the daemon's answer to a session's
    request, asked with the caller's ``full``. Printed as it is, so that a call through a
    session need not load the result model (engine.result) to cut it again."""


def _shown(payload: dict[str, Any]) -> dict[str, Any]:
    from redline.engine.result import shown

    return shown(payload)


def _is_edit(decoded: Any) -> bool:
    """An edit request (or an undecodable line): it needs no held file written first."""
    return isinstance(decoded, _Problem) or (
        isinstance(decoded, dict) and decoded.get("tool") == "edit"
    )


class _Requests:
    """The non-blank lines of a ``--jsonl`` stream, and whether another is waiting.

    Reads the file descriptor itself, so that what is waiting is known: a line
    already read, or bytes the pipe holds. A stream without a descriptor (a
    test's in-memory file) is read whole: everything in it is waiting.
    """

    def __init__(self, stream: Any) -> None:
        try:
            self._fd: int | None = stream.fileno()
        except (AttributeError, OSError, ValueError):
            self._fd = None
        self._stream = stream
        self._buffer = b""
        self._done = False

    def __iter__(self) -> Any:
        if self._fd is None:
            yield from (line for line in self._stream if line.strip())
            return
        while True:
            end = self._buffer.find(b"\n")
            if end < 0:
                if self._done:
                    if self._buffer.strip():
                        yield self._buffer
                    return
                chunk = os.read(self._fd, 1 << 16)
                if chunk:
                    self._buffer += chunk
                else:
                    self._done = True
                continue
            line, self._buffer = self._buffer[: end + 1], self._buffer[end + 1 :]
            if line.strip():
                yield line

    def partial(self) -> bool:
        """Whether part of the next line has been read (a request is on its way)."""
        return bool(self._buffer.strip())

    def line_read(self) -> bool:
        """Whether the next request has been read whole (its line ended)."""
        return b"\n" in self._buffer

    def waiting(self) -> bool:
        """Whether the next request is already on its way: a line read, part of one (its
        writer is mid-line), or bytes in the pipe within a millisecond."""
        if self._fd is None or self._done or self._buffer:
            return True
        import select

        try:
            return bool(select.select([self._fd], [], [], 0.001)[0])
        except (OSError, ValueError):
            return False


class _Problem(str):
    """A request that could not even be decoded; the text says why."""


def _decode(data: bytes) -> Any:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        try:
            # Inside a string, the bytes are kept as surrogate escapes: the request is
            # refused naming the field that holds them (tools.request.bad_text).
            return json.loads(data.decode("utf-8", "surrogateescape"))
        except (ValueError, RecursionError):
            return _Problem(
                f"request is not valid UTF-8 (byte {exc.start}); send JSON encoded as UTF-8"
            )
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        return _Problem(
            f"request is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); "
            "send one JSON object (with --jsonl, one per line)"
        )
    except RecursionError:
        return _Problem(
            "request is nested too deeply to decode; send one flat JSON object "
            "of strings, booleans and a list of edits"
        )
    except ValueError:  # a number with more digits than Python converts
        return _Problem(
            "request could not be decoded: a value in it is too large to read (a number "
            "with thousands of digits); send one JSON object of strings, booleans and a "
            "list of edits"
        )


def _is_problem(decoded: Any) -> bool:
    return isinstance(decoded, _Problem)


def _invalid(problem: str) -> dict[str, Any]:
    return failure("invalid", None, str(problem))


def _exit_code(payload: dict[str, Any]) -> int:
    from redline.engine.status import EXIT_CODES

    return EXIT_CODES.get(str(payload.get("status")), 1)


def _permitted(run: Runner, root: Path, folder: FolderSettings) -> Runner:
    """``run`` behind the ``[permission]`` rules of the folder edited (``folder``: its
    settings)."""
    from redline.pipeline.permission import permission_gate

    gate = permission_gate(root, folder=folder)

    def permitted(obj: Any) -> dict[str, Any]:
        refused = gate(obj)
        return run(obj) if refused is None else refused

    return permitted


def _session_runner(
    repo: Path, session: str, dry_run: bool, threshold: float | None, full: bool
) -> tuple[Runner, Callable[[], None]]:
    """Requests through the daemon, and what closes the connection. Every failure to reach
    it, or an error it answers with, becomes the request's result: an agent reads stdout,
    so stdout always answers."""
    from redline.cli._connect import daemon_client_started
    from redline.daemon import protocol
    from redline.engine.errors import RedlineError
    from redline.fsops import interrupts
    from redline.pipeline.daemon_call import send, unsure

    try:
        client, started = daemon_client_started(repo)
    except RedlineError as exc:
        status, error = _cannot_start(exc)
        return (lambda obj: failure(status, obj, error, session)), _nothing

    no_session: list[str] = []  # the daemon's answer once it said there is no such session

    def run(obj: Any) -> dict[str, Any]:
        if no_session:
            return failure("invalid", obj, no_session[0], session)
        if isinstance(obj, dict) and threshold is not None and obj.get("tool") == "edit":
            obj.setdefault("threshold", threshold)  # only an edit has one
        try:
            # Sent, the request is the daemon's: a signal waits for its answer (a second
            # one does not: the daemon may be stuck, and the answer says so).
            with interrupts.writing(patient=False):
                sent = send(client, session, obj, dry_run=dry_run, full=full)
        except interrupts.Interrupted as stopped:
            name = interrupts.NAMES.get(stopped.signum, "a signal")
            error = f"interrupted ({name}) while the daemon was applying it; {unsure(session)}"
            stopped.answer = failure("failed", obj, error, session)
            raise
        refused = sent.refused
        if refused is not None and refused.code == protocol.SESSION_ERROR and started:
            # Started only for a session that is not there: stop it again, and
            # answer the rest of the stream without it.
            no_session.append(rpc_error(refused))
            _stop_unless_in_use(repo, client)
        return _Shown(sent.result) if sent.answered else sent.result

    return guarded(run, unsure(session), session), client.close


def _stop_unless_in_use(repo: Path, client: Any) -> None:
    """Stop the daemon this command started, unless another client uses it by now."""
    import contextlib

    from redline.cli._connect import daemon_files
    from redline.daemon.lifecycle import stop
    from redline.engine.errors import RedlineError

    client.close()
    with contextlib.suppress(RedlineError, OSError):
        stop(daemon_files(repo), unless_in_use=True)


def _cannot_start(exc: RedlineError) -> tuple[Status, str]:
    """The status and error of every request when the daemon cannot be reached."""
    from redline.daemon.paths import NoRepository

    if isinstance(exc, NoRepository) or exc.exit_code == 2:  # --repo or a setting is wrong
        return "invalid", str(exc)
    from redline.pipeline.daemon_call import not_sent

    return "failed", not_sent(exc)


def _emit(payload: dict[str, Any]) -> None:
    line = json.dumps(payload, ensure_ascii=False) + "\n"
    # UTF-8 whatever the locale; a lone surrogate a request carried in (JSON allows
    # "\ud800") is written back as that same escape instead of crashing the stream.
    out = sys.stdout.buffer
    rest = memoryview(line.encode("utf-8", "backslashreplace"))
    while rest:
        # A signal that waits for this answer (fsops.interrupts) cuts a write blocked on
        # a full pipe short: the write says how much went, and the rest is written on.
        written = out.write(rest)
        if written is None:  # unbuffered (python -u) on a non-blocking pipe, full: wait
            import select

            select.select([], [out], [])
            continue
        rest = rest[written:]
    out.flush()
