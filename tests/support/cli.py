"""``redline`` run in this process, as a subprocess would run it.

:func:`run` gives what ``subprocess.run([... "redline", *args])`` gives — exit code,
stdout and stderr apart, as text — through click's ``CliRunner``, with what a
process would have had: exactly the environment given (``os.environ`` replaced
for the call, not added to), the working folder, ``sys.argv``, the temporary
folder (from ``TMPDIR``), stdin as bytes.
An exception no boundary caught is a traceback on stderr and exit code 1, as
Python gives. The process's global state is swapped for the call and put back,
so calls take turns (a lock): two threads never run the CLI at once.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import threading
import traceback
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from click.testing import CliRunner

PROG = "redline"
turn = threading.RLock()  # one command at a time: each swaps the process state
# The interpreter commands see as sys.executable (what `redline hooks install` writes
# into the hooks); None: this one. support.hooks sets it.
interpreter: str | None = None


@contextlib.contextmanager
def process_state(env: Mapping[str, str], cwd: Path, argv: Sequence[str]) -> Iterator[None]:
    """This process's environment, working folder and argv as another process's would be,
    for the duration of the block."""
    with turn:
        saved_env = dict(os.environ)
        saved_cwd = os.getcwd()
        saved_argv = sys.argv
        saved_tempdir = tempfile.tempdir
        saved_executable = sys.executable
        os.environ.clear()
        os.environ.update(env)
        os.chdir(cwd)
        sys.argv = list(argv)
        tempfile.tempdir = None  # found again from TMPDIR, as a new process finds it
        sys.executable = interpreter or saved_executable
        try:
            yield
        finally:
            sys.executable = saved_executable
            tempfile.tempdir = saved_tempdir
            sys.argv = saved_argv
            os.chdir(saved_cwd)
            os.environ.clear()
            os.environ.update(saved_env)


def run(
    args: Sequence[str],
    *,
    input: str | bytes | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | str | None = None,
) -> subprocess.CompletedProcess[str]:
    """``redline ARGS`` in this process; ``env`` defaults to this process's environment and
    ``cwd`` to its working folder, as for a subprocess. Output as text (UTF-8)."""
    done = run_bytes(args, input=input, env=env, cwd=cwd)
    return subprocess.CompletedProcess(
        done.args,
        done.returncode,
        done.stdout.decode("utf-8", errors="replace"),
        done.stderr.decode("utf-8", errors="replace"),
    )


def run_bytes(
    args: Sequence[str],
    *,
    input: str | bytes | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | str | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """:func:`run` with the output as the bytes written."""
    from redline.cli.main import cli

    data = input.encode() if isinstance(input, str) else input
    where = Path(cwd) if cwd is not None else Path.cwd()
    with process_state(dict(os.environ) if env is None else env, where, [PROG, *args]):
        result = CliRunner().invoke(cli, list(args), input=data, prog_name=PROG)
    stderr = result.stderr_bytes or b""
    code = result.exit_code
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        # What Python itself prints for an exception that reaches the top.
        assert result.exc_info is not None
        stderr += "".join(traceback.format_exception(*result.exc_info)).encode()
        code = 1
    return subprocess.CompletedProcess([PROG, *args], code, result.stdout_bytes, stderr)
