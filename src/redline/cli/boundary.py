"""The CLI's one error boundary: an exception becomes a message and an exit code.

A :class:`~redline.engine.errors.RedlineError` is a message for the user
(``redline: <message>`` on stderr) and its ``exit_code``. Anything else is a
bug: the user sees ``redline: unexpected error: <Type>: <message>`` and the
path of a crash log holding the full traceback — never the traceback itself.

Crash logs: :mod:`redline.crashlog`.
"""

from __future__ import annotations

import click

from redline.crashlog import describe, where_logged
from redline.engine.errors import RedlineError


def report(exc: BaseException) -> int:
    """Tell the user about ``exc`` on stderr; the exit code to leave with."""
    if isinstance(exc, RedlineError):
        # A daemon's error answer carries its message for users in ``data``.
        data = getattr(exc, "data", None)
        click.echo(f"redline: {data if isinstance(data, str) else exc}", err=True)
        return exc.exit_code
    if isinstance(exc, OSError):
        from redline.fsops.resources import explain, is_resource

        if is_resource(exc):  # the machine, not a bug: no crash log
            click.echo(f"redline: {explain(exc)}", err=True)
            return 1
    click.echo(f"redline: unexpected error: {describe(exc)}", err=True)
    click.echo(f"redline: {where_logged(exc)}", err=True)
    return 1
