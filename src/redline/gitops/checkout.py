"""Filling a session's worktree with git itself, in a process of its own.

libgit2's checkout (``Repository.add_worktree``) holds Python's GIL for the
whole checkout and makes about four times git's system calls: at 100,000
files the daemon answered nothing for over a minute. So the worktree is
registered here (the files ``git worktree add --no-checkout`` writes, in the
format libgit2 and git share), which takes milliseconds, and ``git checkout
--force --progress`` fills it in a child process, whose progress
(``Updating files: 45% (45000/100000)``) is read from its stderr.

A marker file (``<state>/checkouts/<name>``) exists from before the worktree
is registered until its checkout succeeded: a daemon that starts and finds
one checks that worktree out again. Nothing of the session can have been
committed meanwhile — its requests wait for the checkout (daemon.service).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping
from pathlib import Path

from redline.gitops.gitenv import without_git_redirects

_PROGRESS = re.compile(rb"\((\d+)/(\d+)\)")
_TAIL = 2000  # bytes of git's own messages kept for an error


def register(common: Path, admin: str, path: Path, branch: str) -> None:
    """Make ``path`` a linked worktree of the repository at ``common`` on ``branch``
    (a full ref name), with nothing checked out yet: ``<path>/.git`` first, then
    ``<common>/worktrees/<admin>``, so that ``git worktree prune`` never sees
    the record without its folder. OSError when a file cannot be written."""
    record = common / "worktrees" / admin
    path.mkdir(parents=True, exist_ok=True)
    _write(path / ".git", f"gitdir: {record}\n")
    record.mkdir(parents=True)
    _write(record / "commondir", "../..\n")
    _write(record / "HEAD", f"ref: {branch}\n")
    _write(record / "gitdir", f"{path / '.git'}\n")


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def marker(state: Path, name: str) -> Path:
    """The file saying that session ``name``'s worktree is not fully checked out."""
    return state / "checkouts" / name


def mark(state: Path, name: str) -> None:
    path = marker(state, name)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.touch()


class CheckoutFailed(Exception):
    """``git checkout`` failed; the message carries git's own words."""


class Checkout:
    """One ``git checkout`` of a session's worktree: run it here (:meth:`run`) or on a
    thread of its own (:meth:`start`), watch its progress, wait for it, stop it."""

    def __init__(
        self,
        root: Path,
        done_marker: Path,
        env: Mapping[str, str] | None = None,
        then: Callable[[], None] | None = None,
    ) -> None:
        self.root = root
        self.marker = done_marker
        self.env = dict(env) if env is not None else without_git_redirects(os.environ)
        self.then = then  # runs on the checkout's thread once the files are there
        self.done = 0
        self.total = 0
        self.error: str | None = None
        self.finished = threading.Event()
        self._process: subprocess.Popen[bytes] | None = None
        self._cancelled = False
        self._lock = threading.Lock()

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def start(self) -> Checkout:
        threading.Thread(
            target=self._run_safely, name=f"redline-checkout-{self.root.name}", daemon=True
        ).start()
        return self

    def run(self) -> None:
        """Check the worktree out now; CheckoutFailed says why it could not."""
        self._run_safely()
        if self.error is not None:
            raise CheckoutFailed(self.error)

    def run_here(self) -> None:
        """Check the worktree out now; :attr:`error` says why it could not."""
        self._run_safely()

    def wait(self, timeout: float | None = None) -> bool:
        return self.finished.wait(timeout)

    def cancel(self) -> None:
        """Stop the checkout (the session is being closed); returns at once."""
        with self._lock:
            self._cancelled = True
            process = self._process
        if process is not None:
            # git's own children too (a smudge filter): the whole group it leads.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=5)

    def progress(self) -> dict[str, object]:
        return {
            "ready": self.finished.is_set() and self.error is None,
            "done": self.done,
            "total": self.total,
            "error": self.error,
        }

    def _run_safely(self) -> None:
        try:
            self._check_out()
            if self.then is not None and not self._cancelled:
                self.then()
            if not self._cancelled:
                self.marker.unlink(missing_ok=True)
        except CheckoutFailed as exc:  # said to every request of the session
            self.error = str(exc)
        except Exception as exc:
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self.finished.set()

    def _check_out(self) -> None:
        args = [
            "git",
            "-C",
            str(self.root),
            # A checkout of redline's, not the user's: no post-checkout hook runs.
            "-c",
            "core.hooksPath=/dev/null",
            "checkout",
            "--force",
            "--progress",
        ]
        with self._lock:
            if self._cancelled:
                raise CheckoutFailed("the session was closed during its checkout")
            try:
                self._process = subprocess.Popen(
                    args,
                    env=self.env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    start_new_session=True,  # a group of its own, stopped whole by cancel
                )
            except OSError as exc:
                raise CheckoutFailed(
                    f"cannot run git ({exc}); is git installed and on PATH?"
                ) from None
        with self._process as process:
            said = self._follow(process)
            code = process.wait()
        if self._cancelled:
            raise CheckoutFailed("the session was closed during its checkout")
        if code != 0:
            words = said.decode("utf-8", "replace").strip() or f"exit status {code}"
            raise CheckoutFailed(f"git checkout failed in {self.root}: {words}")
        self.done = self.total = max(self.total, self.done)

    def _follow(self, process: subprocess.Popen[bytes]) -> bytes:
        """Read git's stderr to its end: the progress it reports, and the tail of the rest."""
        assert process.stderr is not None
        said = b""
        pending = b""
        stream = process.stderr
        assert isinstance(stream, io.BufferedReader)
        while chunk := stream.read1(65536):  # blocks off the GIL
            pending += chunk
            *lines, pending = re.split(rb"[\r\n]", pending)
            for line in lines:
                found = _PROGRESS.search(line)
                if found is not None and line.startswith(b"Updating files"):
                    self.total = int(found.group(2))
                    self.done = int(found.group(1))
                elif line.strip():
                    said = (said + line + b"\n")[-_TAIL:]
        return said + pending


def changed_since_checkout(root: Path, env: Mapping[str, str]) -> list[str]:
    """The paths of the worktree at ``root`` that differ from its index: what another
    program changed while git was checking it out (``git status``, which never takes
    the index's lock here). A failure lists nothing: the watcher sees later changes,
    and each request looks at the paths it names."""
    done = subprocess.run(
        [
            "git",
            "--no-optional-locks",
            "-C",
            str(root),
            "status",
            "--porcelain=v1",
            "-z",
            "--no-renames",
            "--untracked-files=all",
            "--ignore-submodules=all",
        ],
        env=dict(env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        return []
    return [os.fsdecode(item[3:]) for item in done.stdout.split(b"\0") if len(item) > 3]
