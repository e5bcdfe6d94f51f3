"""SIGINT and SIGTERM: a command stops at once, but never half-way through a write.

The CLI installs :func:`handle` for both signals (``redline.cli.main``). Until
a request starts writing, a signal raises :class:`Interrupted` where the
command is: nothing was written, and the command says so. Once a request's
writes begin (:func:`writing`), a signal waits: the writes finish (or roll
back) and the request is answered; :func:`answered` then raises the signal
that waited. So an answer is never lost and no file group is half-written.

A signal that arrives while a command waits for another process to write
for it (the daemon, :func:`writing` with ``patient=False``) waits too, but a
second one raises at once: that wait has no end the command controls.

Only the main thread receives signals; the module keeps its state there.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

NAMES: dict[int, str] = {signal.SIGINT: "SIGINT", signal.SIGTERM: "SIGTERM"}


class Interrupted(BaseException):
    """SIGINT or SIGTERM stopped the command (a BaseException, as KeyboardInterrupt is:
    no ``except Exception`` swallows it). ``answer``: the result to print for the
    request in hand, when the code that was interrupted knows it better."""

    def __init__(self, signum: int) -> None:
        super().__init__(NAMES.get(signum, str(signum)))
        self.signum = signum
        self.answer: dict[str, object] | None = None
        self.quiet = False  # a server stopping as asked: no "interrupted" line

    @property
    def exit_code(self) -> int:
        return 128 + self.signum  # 130 for SIGINT, 143 for SIGTERM, as shells report them


_writing = 0  # writes in progress (nested)
_patient = True  # a signal during the write waits however long it takes
_settled = False  # the request in hand has written: signals wait for its answer
_pending: int | None = None


def install() -> None:
    """Handle SIGINT and SIGTERM as this module says (main thread only)."""
    for signum in NAMES:
        signal.signal(signum, handle)


def handle(signum: int, frame: FrameType | None) -> None:
    global _pending
    if (_writing or _settled) and (_patient or _pending is None):
        _pending = _pending or signum
        return
    raise Interrupted(signum)


@contextlib.contextmanager
def writing(patient: bool = True) -> Iterator[None]:
    """The request in hand writes here: a signal waits until it is answered. (Off the
    main thread, which receives no signal, this marks nothing.)"""
    global _writing, _patient, _settled
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _writing += 1
    outer = _patient
    _patient = patient  # the innermost write decides
    try:
        yield
    finally:
        _writing -= 1
        _patient = outer
        _settled = True


def answered() -> None:
    """The answer for the request in hand is out: raise a signal that waited for it."""
    global _settled, _pending
    _settled = False
    if _pending is not None:
        signum, _pending = _pending, None
        raise Interrupted(signum)


def wrote() -> bool:
    """Whether the request in hand has begun to write (its answer says what happened)."""
    return _settled or bool(_writing)
