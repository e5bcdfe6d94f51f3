"""Upkeep that never holds up a request: warming imports, rolling packs together.

At start, the housekeeping thread imports what requests would otherwise
import on first use (the wire models and pydantic, the tolerant tiers'
libraries: ~0.1-0.2 s that the daemon's first request used to pay).

Each request writes its objects as one pack (``gitops.packs``); ``git repack
--geometric`` rolls them together every ``CONSOLIDATE_AFTER`` requests and
when requests pause. It runs here, on a thread of its own beside the
repository's one git worker, as a second process reading the repository, like
a ``git gc`` a user starts: no request waits for it, a run longer than its
timeout is killed (git removes old packs only after the new one is whole, so
the packs stay as they were), so is a run still going when the daemon stops,
and a failure is a line in the daemon's log, never a failed request.
"""

from __future__ import annotations

import importlib
import logging
import threading
import time
from collections.abc import Mapping
from pathlib import Path

from redline.gitops.packs import REPACK_TIMEOUT, consolidate

log = logging.getLogger("redline.daemon")
# Imported by requests on first use; see warm_imports.
REQUEST_MODULES = (
    "redline.tools.schema",
    "redline.engine.merge",
    "redline.engine.indent",
    "redline.engine.similarity",
    "numpy",
    "rapidfuzz.fuzz",
    "rapidfuzz.process",
    "rapidfuzz.distance",
    "charset_normalizer",
)


def warm_imports(modules: tuple[str, ...] = REQUEST_MODULES) -> None:
    """Import ``modules`` now, so that no request pays for it (a failure is logged only)."""
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # the request that needs it reports the problem
            log.exception("could not import %s ahead of the requests that use it", name)


class Housekeeping:
    """One thread that rolls up a repository's packs when asked, one run at a time."""

    def __init__(
        self, git_dir: Path, git_env: Mapping[str, str], timeout: float = REPACK_TIMEOUT
    ) -> None:
        self.git_dir = git_dir
        self.git_env = dict(git_env)
        self.timeout = timeout
        self._wanted = threading.Event()
        self._stopping = threading.Event()
        self._idle = threading.Event()  # nothing asked for and nothing running
        self._idle.set()
        self._lock = threading.Lock()  # keeps _idle and _wanted consistent
        self._thread: threading.Thread | None = None
        self._last_problem: str | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="redline-housekeeping", daemon=True)
        self._thread.start()

    def repack(self) -> None:
        """Ask for a roll-up; returns at once (asks made while one runs make one more run)."""
        if self._thread is None or self._stopping.is_set():
            return
        with self._lock:
            self._idle.clear()
            self._wanted.set()

    def wait_idle(self, timeout: float) -> bool:
        """Wait until nothing is asked for or running; False when ``timeout`` passed first."""
        return self._idle.wait(timeout)

    def stop(self) -> None:
        """Kill a roll-up that is running and end the thread."""
        self._stopping.set()
        self._wanted.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _run(self) -> None:
        warm_imports()
        while True:
            self._wanted.wait()
            if self._stopping.is_set():
                return
            self._wanted.clear()
            started = time.monotonic()
            problem = consolidate(
                self.git_dir, env=self.git_env, timeout=self.timeout, cancel=self._stopping
            )
            self._report(problem, time.monotonic() - started)
            with self._lock:
                if not self._wanted.is_set():
                    self._idle.set()

    def _report(self, problem: str | None, seconds: float) -> None:
        if problem is None:
            log.debug("rolled up the packs in %.0f ms", seconds * 1000)
        elif self._stopping.is_set():
            log.info("%s", problem)
        elif problem != self._last_problem:
            log.warning("could not roll up the packs redline wrote: %s", problem)
        else:
            log.debug("could not roll up the packs redline wrote (again): %s", problem)
        self._last_problem = problem
