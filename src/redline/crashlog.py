"""Crash logs: the traceback of a bug, kept where a user can send it, never shown.

Crash logs go to the platform's cache folder (:func:`crash_dir`:
``$XDG_CACHE_HOME/redline/``, or ``~/.cache/redline/`` when that variable is unset,
on Linux), one ``crash-<UTC time>-<pid>[-n].log`` per crash, or
to the temporary directory when the cache cannot be written. Every front end
(the CLI's boundary, ``redline apply``'s and ``redline mcp``'s answers, the
daemon's log) names the file in what it tells the user.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

from redline import __version__

MESSAGE_LIMIT = 500  # characters of an unexpected exception's message shown


def describe(exc: BaseException) -> str:
    """``Type: message`` of an unexpected exception, cut to a readable length."""
    text = str(exc)
    if len(text) > MESSAGE_LIMIT:
        text = text[:MESSAGE_LIMIT] + "…"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def where_logged(exc: BaseException) -> str:
    """Write the crash log; the sentence that says where it went and what to do with it."""
    try:
        path = crash_log(exc)
    except OSError as problem:
        return (
            f"the traceback could not be saved ({problem}); this is a bug in redline: "
            "please report it with the command that caused it"
        )
    return (
        f"the full traceback is in {path}; this is a bug in redline: "
        "please report it with that file and the command that caused it"
    )


def crash_dir() -> Path:
    """The platform's cache folder for redline (``$XDG_CACHE_HOME/redline``, else
    ``~/.cache/redline``, on Linux: :func:`redline.userdirs.user_cache_dir`)."""
    from redline.userdirs import user_cache_dir

    return user_cache_dir()


def crash_log(exc: BaseException) -> Path:
    """Write ``exc``'s traceback and context to a new crash log; its path."""
    text = "".join(
        [
            f"redline {__version__} on Python {sys.version.split()[0]} ({sys.platform})\n",
            f"time: {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}\n",
            f"command: {' '.join(sys.argv)}\n",
            f"cwd: {_cwd()}\n\n",
            *traceback.format_exception(exc),
        ]
    )
    stem = f"crash-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{os.getpid()}"
    try:
        folder = crash_dir()
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        return _write_new(folder, stem, text)
    except OSError:
        return _write_new(Path(tempfile.gettempdir()), f"redline-{stem}", text)


def _write_new(folder: Path, stem: str, text: str) -> Path:
    """Write ``text`` to a file of ``folder`` that did not exist (``stem``, ``stem-2``…)."""
    for n in range(1, 1000):
        path = folder / (f"{stem}.log" if n == 1 else f"{stem}-{n}.log")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            continue
        try:
            with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as handle:
                handle.write(text)
        except OSError:  # a full disk: no empty log is left behind
            path.unlink(missing_ok=True)
            raise
        return path
    raise FileExistsError(f"{folder / stem}.log and 998 more exist already")


def _cwd() -> str:
    try:
        return os.getcwd()
    except OSError as exc:  # the directory was removed under us
        return f"(unknown: {exc})"
