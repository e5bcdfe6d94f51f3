"""The CLI's one error boundary: an exception becomes a message and an exit code.

A :class:`~redline.engine.errors.RedlineError` is a message for the user
(``redline: <message>`` on stderr) and its ``exit_code``. Anything else is a
bug: the user sees ``redline: unexpected error: <Type>: <message>`` and the
path of a crash log holding the full traceback — never the traceback itself.

A signal that stopped the command (:class:`~redline.fsops.interrupts.Interrupted`)
is one ``redline: interrupted`` line and its exit code (130, 143).

Crash logs: :mod:`redline.crashlog`. No click here: the calls that start without
click (``redline.cli.main``) end here too.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from redline.engine.errors import RedlineError
from redline.fsops.interrupts import Interrupted


class SettingError(RedlineError):
    """An environment variable the CLI reads holds a value it cannot use."""

    exit_code = 2


def run(call: Callable[[], int]) -> int:
    """``call()``'s exit code; an exception it raises, told the user, becomes one."""
    try:
        return call()
    except Interrupted as stopped:
        return interrupted(stopped)
    except Exception as exc:
        return report(exc)


def interrupted(stopped: Interrupted) -> int:
    """The line and exit code of a command stopped by SIGINT or SIGTERM."""
    if not stopped.quiet:
        say("interrupted")
    return stopped.exit_code


def report(exc: BaseException) -> int:
    """Tell the user about ``exc`` on stderr; the exit code to leave with."""
    if isinstance(exc, RedlineError):
        # A daemon's error answer carries its message for users in ``data``.
        data = getattr(exc, "data", None)
        say(str(data if isinstance(data, str) else exc))
        return exc.exit_code
    if isinstance(exc, OSError):
        from redline.fsops.resources import explain, is_resource

        if is_resource(exc):  # the machine, not a bug: no crash log
            say(explain(exc))
            return 1
    from redline.crashlog import describe, where_logged

    say(f"unexpected error: {describe(exc)}")
    say(where_logged(exc))
    return 1


def say(message: str) -> None:
    """One ``redline: message`` line on stderr."""
    echo(f"redline: {message}")


def echo(text: str) -> None:
    """``text`` as a line on stderr (the stream in place now: a test's, under click's
    runner)."""
    stream = sys.stderr
    stream.write(text + "\n")
    stream.flush()
