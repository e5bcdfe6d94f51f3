"""Upkeep that never holds up a request: warming imports, rolling packs together.

Imports. Every request parses its JSON with the wire models (pydantic: ~0.14
s to import), which the daemon's first request used to pay. The housekeeping
thread imports them as the daemon starts, while the first session's worktree
is checked out; ``session.open`` waits for that before it answers, so that no
request meets an import half done. The tolerant tiers' libraries (numpy,
rapidfuzz, charset-normalizer: ~0.12 s) are imported once requests first
pause, not while the first ones run: a request an exact edit serves needs
none of them, and an import holds the interpreter's lock against it.

Packs. Each request writes its objects as one pack (``gitops.packs``),
held by a ``.keep`` while a request that may use it is in flight; every
``CONSOLIDATE_AFTER`` requests, and when requests pause, the small packs are
rolled together (``gitops.rollup``: never a loose object). The packs a
roll-up made redundant are removed once requests pause, and, in a session
that never pauses, at the roll-up after the one that made them redundant:
each pack the daemon's git library lists costs every object lookup that
misses, so a busy session must not keep them all. (Like ``git gc`` beside a
``git clone`` of the same folder, a removal while a local clone lists
``objects/pack`` can make that clone fail; it is rare and the clone can be
run again, while the packs of a session that never pauses would otherwise
grow without bound.) After any removal :attr:`Housekeeping.packs_removed` is
set, and the git worker gives its repository a fresh object database before
its next step (``Service.step``), dropping the removed packs from its list
and their mappings from the daemon's memory. Once requests pause the thread
also lets go of the ``.keep`` of packs no request needs any more. It all
runs on this thread, beside the repository's one git worker, as a second
process reading the repository, like a ``git gc`` a user starts: no request
waits for it, a run longer than its timeout is killed (the packs stay as
they were), so is a run still going when the daemon stops, and a failure is
a line in the daemon's log, never a failed request.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from redline.gitops.packs import Holds
from redline.gitops.rollup import REPACK_TIMEOUT, RollUp, remove_packs, roll_up, still_redundant

log = logging.getLogger("redline.daemon")
# Imported by every request on first use: warmed as the daemon starts.
REQUEST_MODULES = ("redline.tools.request",)
# Imported by tolerant matches and legacy encodings: warmed when requests first pause.
TOLERANT_MODULES = (
    "redline.engine.merge",
    "redline.engine.indent",
    "redline.engine.similarity",
    "numpy",
    "rapidfuzz.fuzz",
    "rapidfuzz.process",
    "rapidfuzz.distance",
    "charset_normalizer",
)
READY_TIMEOUT = 10.0  # seconds session.open waits at most for REQUEST_MODULES
WARM_WAIT = 5.0  # seconds the tolerant import waits for the requests being matched


def warm_imports(modules: tuple[str, ...]) -> None:
    """Import ``modules`` now, so that no request pays for it (a failure is logged only)."""
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # the request that needs it reports the problem
            log.exception("could not import %s ahead of the requests that use it", name)


class Housekeeping:
    """One thread for the daemon's upkeep: imports ahead of need, roll-ups, tidying."""

    def __init__(
        self,
        git_dir: Path,
        git_env: Mapping[str, str],
        timeout: float = REPACK_TIMEOUT,
        *,
        holds: Holds | None = None,
        state_dir: Path | None = None,
    ) -> None:
        self.git_dir = git_dir
        self.git_env = dict(git_env)
        self.timeout = timeout
        self.holds = holds or Holds(git_dir / "objects" / "pack")
        self.state_dir = state_dir or git_dir / "redline"
        self.rolls: list[RollUp] = []  # roll-ups whose rolled packs are not removed yet
        # Set when packs were removed: the worker's object database still lists them.
        self.packs_removed = threading.Event()
        self._ready = threading.Event()  # REQUEST_MODULES are imported
        self._wanted = threading.Event()  # a job was asked for
        self._repack = False
        self._tidy = False
        self._tolerant = False  # TOLERANT_MODULES asked for (once)
        self._stopping = threading.Event()
        self._idle = threading.Event()  # nothing asked for and nothing running
        self._idle.set()
        self._lock = threading.Lock()  # guards the job flags, _idle and _wanted
        # Requests being matched, and whether the tolerant libraries are being imported:
        # never both at once (see planning).
        self._gate = threading.Condition()
        self._planning = 0
        self._warming = False
        self._thread: threading.Thread | None = None
        self._last_problem: str | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="redline-housekeeping", daemon=True)
        self._thread.start()

    def wait_ready(self, timeout: float = READY_TIMEOUT) -> None:
        """Wait until what every request imports is imported (at once when not started)."""
        if self._thread is not None:
            self._ready.wait(timeout)

    def repack(self) -> None:
        """Ask for a roll-up; returns at once (asks made while one runs make one more run)."""
        self._ask(repack=True)

    def when_quiet(self) -> None:
        """Requests pause: roll up, tidy up, and import the tolerant tiers' libraries."""
        self._ask(repack=True, tidy=True, tolerant=True)

    @contextlib.contextmanager
    def planning(self) -> Iterator[None]:
        """A request is matched in the block. Two threads importing rapidfuzz at once can
        each see the other's half-imported module (an ImportError): the tolerant
        libraries are imported ahead of time only while no request is matched, and a
        request that comes meanwhile waits for that import (once, ~0.1 s)."""
        with self._gate:
            while self._warming:
                self._gate.wait()
            self._planning += 1
        try:
            yield
        finally:
            with self._gate:
                self._planning -= 1
                self._gate.notify_all()

    def _warm_tolerant(self) -> bool:
        """Import TOLERANT_MODULES once no request is matched; False when requests kept
        coming (asked again at the next pause)."""
        deadline = time.monotonic() + WARM_WAIT
        with self._gate:
            while self._planning:
                left = deadline - time.monotonic()
                if left <= 0 or self._stopping.is_set():
                    return False
                self._gate.wait(min(left, 0.1))
            self._warming = True
        try:
            warm_imports(TOLERANT_MODULES)
        finally:
            with self._gate:
                self._warming = False
                self._gate.notify_all()
        return True

    def wait_idle(self, timeout: float) -> bool:
        """Wait until nothing is asked for or running; False when ``timeout`` passed first."""
        return self._idle.wait(timeout)

    def stop(self) -> None:
        """Kill a roll-up that is running and end the thread; then tidy up (no request is
        in flight any more)."""
        self._stopping.set()
        self._wanted.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self._tidy_up()

    def _ask(self, repack: bool = False, tidy: bool = False, tolerant: bool = False) -> None:
        if self._thread is None or self._stopping.is_set():
            return
        with self._lock:
            self._repack = self._repack or repack
            self._tidy = self._tidy or tidy
            self._tolerant = self._tolerant or tolerant
            self._idle.clear()
            self._wanted.set()

    def _run(self) -> None:
        warm_imports(REQUEST_MODULES)
        self._ready.set()
        tolerant_done = False
        while True:
            self._wanted.wait()
            if self._stopping.is_set():
                return
            with self._lock:
                self._wanted.clear()
                repack, tidy, tolerant = self._repack, self._tidy, self._tolerant
                self._repack = self._tidy = False
            if tolerant and not tolerant_done:
                tolerant_done = self._warm_tolerant()
            if repack:
                self._roll_up()
            if tidy and not self._stopping.is_set():
                self._tidy_up()
            with self._lock:
                if not self._wanted.is_set():
                    self._idle.set()

    def _roll_up(self) -> None:
        started = time.monotonic()
        released = self.holds.releasable()
        outcome = roll_up(
            self.git_dir,
            self.state_dir,
            env=self.git_env,
            ours=released,
            held=self.holds.held() - released,
            skip=self.redundant,
            timeout=self.timeout,
            cancel=self._stopping,
        )
        if outcome.redundant:
            # What earlier roll-ups made redundant goes now, requests flowing or not; the
            # packs this one rolled stay until the next one (or a pause).
            earlier, self.rolls = self.rolls, [outcome]
            self._remove_rolled(earlier)
        self._report(outcome.problem, time.monotonic() - started)

    @property
    def redundant(self) -> set[str]:
        """The packs rolled together, not removed yet."""
        return {name for roll in self.rolls for name in roll.redundant}

    def _tidy_up(self) -> None:
        """Let go of the packs no request needs, and remove the packs rolled together."""
        try:
            self.holds.release()
        except OSError as exc:
            log.warning("could not let go of the packs no request needs: %s", exc)
        rolls, self.rolls = self.rolls, []
        self._remove_rolled(rolls)

    def _remove_rolled(self, rolls: list[RollUp]) -> None:
        """Remove the packs ``rolls`` made redundant, those still safe to remove (a pack
        not removed now never is: another program changed the packs, see
        still_redundant, and git's own next repack tidies up)."""
        if not rolls:
            return
        pack_dir = self.git_dir / "objects" / "pack"
        try:
            removed = remove_packs(pack_dir, still_redundant(pack_dir, rolls))
        except OSError as exc:
            log.warning("could not remove the packs rolled together: %s", exc)
            return
        self.holds.forget(removed)
        if removed:
            self.packs_removed.set()

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
