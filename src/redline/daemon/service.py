"""What the daemon does for each method.

Every method runs on the repository's one git worker thread, except ``hello``
(answered by the server itself) and ``apply``, which runs on a planning
thread and hands the steps that read or write the repository to the worker
(:attr:`Service.on_worker`): only those wait for one another, never for
another session's matching.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import pygit2

from redline import __version__
from redline.daemon import protocol
from redline.daemon.housekeeping import Housekeeping
from redline.daemon.protocol import PERMISSIONS_ENFORCED, PROTOCOL_VERSION, RpcError
from redline.daemon.settings import CommittedSettings
from redline.engine.edit import EditRequest
from redline.engine.errors import RedlineError, RequestError
from redline.engine.hints import FailureHints
from redline.engine.patch import PatchRequest
from redline.engine.records import replace
from redline.engine.result import Result, shown
from redline.fsops.resources import ResourceError, explain, is_resource
from redline.gitops import history, outcomes
from redline.gitops import session as sessions
from redline.gitops.apply import OnWorker, PolicyReading, SessionApplier, here
from redline.gitops.checkout import Checkout, changed_since_checkout
from redline.gitops.durability import Durability
from redline.gitops.errors import SessionError, WorktreeGone
from redline.gitops.packs import CONSOLIDATE_AFTER, StagedObjects, fresh_odb
from redline.gitops.repo import main_repository
from redline.gitops.spares import SparePool
from redline.gitops.worktree import request_path
from redline.gitops.writer import Writer
from redline.hooks import ledger
from redline.hooks.mainline import Mainline
from redline.settings.files import settings_table
from redline.settings.policy import policy_from_files
from redline.tools.permissions import Permissions, unknown_rules, verdict

log = logging.getLogger("redline.daemon")
T = TypeVar("T")
OPEN_GRACE = 0.5  # seconds session.open without ``wait`` waits for a small checkout
PACK_FILES_OPEN = 128  # pack files libgit2 keeps open at most (the least used are closed)
# libgit2 keeps the trees and commits it has read, up to 256 MiB by default: each request
# reads its own new ones (~7 KB), so the daemon grew by that much a request until the
# cache was full, some 37,000 requests on. What a request reads again is a small set.
OBJECT_CACHE = 4 * 1024 * 1024


class Service:
    """One repository's sessions; every method but ``apply`` runs on the git worker."""

    def __init__(
        self,
        repo_path: Path,
        *,
        git_env: Mapping[str, str],
        fault: Callable[[str], None] | None = None,
        user_config: Path | None = None,
    ) -> None:
        # libgit2 keeps every pack file it read open, and the daemon writes a pack per
        # request: without a bound a long session runs out of file descriptors.
        pygit2.settings.mwindow_file_limit = PACK_FILES_OPEN
        pygit2.settings.cache_max_size(OBJECT_CACHE)
        self.repo, self.layout = main_repository(repo_path)
        self.layout.ensure()
        # Every object the daemon writes is staged, then written as one pack per call,
        # and the packs are rolled together beside the requests, never inside one.
        self.staged = StagedObjects.attach(self.repo, self.layout.state / "staging")
        self.housekeeping = Housekeeping(
            Path(self.repo.path), git_env, holds=self.staged.holds, state_dir=self.layout.state
        )
        # ...and the files it creates take the inode of a spare made ahead of time; what
        # is fsynced follows git's core.fsync (read again before each request).
        self.spares = SparePool(self.layout.state / "spares")
        self.writer = Writer(self.staged, self.spares, Durability.from_config(self.repo.config))
        self._fault = fault
        self._flush_problem: str | None = None
        self._appliers: dict[str, SessionApplier] = {}
        # The committed settings: each session's policy and [permission] rules (judged
        # here for every client), from one reading of the main line's files.
        self.settings = CommittedSettings(self.repo, user_config)
        # Worktrees being checked out by git in the background (gitops.checkout), by session.
        self._checkouts: dict[str, Checkout] = {}
        self.git_env = dict(git_env)
        self._hints: dict[str, FailureHints] = {}
        self.on_session_open: Callable[[SessionApplier], None] = lambda applier: None
        self.on_session_close: Callable[[str], None] = lambda name: None
        # Runs a step of ``apply`` on the git worker through :meth:`step` (the server
        # sets it); by default on the calling thread, for a caller that is the worker.
        self.on_worker: OnWorker = here

    @property
    def repo_dir(self) -> str:
        return str(self.repo.workdir or self.repo.path)

    def startup(self) -> None:
        """Finish requests a crash interrupted, and start watching every session."""
        self.spares.start()
        self.housekeeping.start()
        for session in sessions.all_sessions(self.layout):
            if sessions.checkout_due(self.layout, session.name) and _registered(session):
                # Its checkout was cut short (the daemon stopped): no request of the
                # session ran since (they wait for it), so it is simply done again.
                log.warning("session %s: checking its worktree out again", session.name)
                self._check_out(session, again=True)
                continue
            try:
                self.applier(session.name)
            except Exception:  # one broken session must not keep the others from being served
                log.exception("session %s: cannot load it; its requests will say why", session.name)
        # The packs a previous daemon held: its requests are finished or dropped by now.
        self.staged.holds.adopt_leftovers()

    def shutdown(self) -> None:
        self.housekeeping.stop()
        self.spares.stop()

    def applier(self, name: str, checked_out_now: bool = False) -> SessionApplier:
        """The session's applier, made (and its worktree watched) on first use.

        ``checked_out_now``: the session's worktree was checked out from its tip
        by this very call and its path is not yet known to anyone, so it holds
        exactly the tip: its first request needs no walk of the whole worktree,
        since the watcher attached here sees every later change.
        """
        if name not in self._appliers:
            applier = self._loaded(name)
            if checked_out_now:
                applier.dirty.overflowed = False  # before watching: nothing can be missed
            self._appliers[name] = applier
            self.on_session_open(applier)
            if checked_out_now:
                # The first request would otherwise read and hash the worktree's
                # index (20,000 entries: ~25 ms); opening pays it instead.
                applier.warm()
        return self._appliers[name]

    def _loaded(self, name: str) -> SessionApplier:
        """A new applier of session ``name``, with what a crash left of its requests done."""
        session = sessions.load(self.layout, name)
        if not Path(session.worktree).is_dir():
            raise WorktreeGone(name, session.worktree)
        applier = SessionApplier(
            self.repo,
            self.layout,
            session,
            writer=self.writer,
            fault=self._fault,
            reading=PolicyReading(policy_from_files, settings_table),
            mainline=Mainline(self.repo, session, ledger.load, self.settings.policy),
        )
        done = applier.publisher.recover()
        if done:
            log.warning("session %s: %s", name, done)
        return applier

    def _check_out(self, session: sessions.Session, again: bool = False) -> Checkout:
        """Start git checking out ``session``'s worktree; its requests wait for it.

        With no server (``on_worker`` left as it is) the checkout runs here and now.
        """
        name = session.name
        root = Path(session.worktree)
        if again:  # a git process killed with the daemon left its lock behind
            with contextlib.suppress(OSError):
                _index_lock(root).unlink(missing_ok=True)
        checkout = sessions.checkout_of(
            self.layout, name, root, self.git_env, then=lambda: self._attach(name, checkout)
        )
        self._checkouts[name] = checkout
        if self.on_worker is here:
            checkout.run_here()
        else:
            checkout.start()
        return checkout

    def _attach(self, name: str, checkout: Checkout) -> None:
        """On the checkout's thread, once git wrote the files: serve the session.

        Its applier is made on the worker; the watch is attached, and what changed
        in the worktree while git was checking it out (``git status``, run after the
        watch, so nothing falls between them) is handed to its first snapshot here,
        off the worker — a watch of 100,000 files takes a while.
        """
        applier = self.on_worker(lambda: self._adopt(name))
        self.on_session_open(applier)
        if checkout.cancelled:  # closed meanwhile
            self.on_session_close(name)
            return
        for path in changed_since_checkout(applier.root, self.git_env):
            applier.dirty.add(path)
        applier.warm()

    def _adopt(self, name: str) -> SessionApplier:
        """On the worker: session ``name``'s applier, not watched yet, whose worktree git
        just checked out (what changed meanwhile is added to it by :meth:`_attach`)."""
        applier = self._loaded(name)
        with applier.dirty.lock:
            applier.dirty.overflowed = False
        self._appliers[name] = applier
        return applier

    def checkout_problem(self, name: str, wait: bool = True) -> str | None:
        """Wait for session ``name``'s checkout (if one runs); why it failed, or None."""
        checkout = self._checkouts.get(name)
        if checkout is None:
            return None
        if wait:
            checkout.wait()
        elif not checkout.finished.is_set():
            return (
                f"the worktree of session {name!r} is still being checked out "
                f"({checkout.done}/{checkout.total or '?'} files); retry when "
                f"`redline session open --name {name} --full` or `session.status` says ready"
            )
        if checkout.error is None:
            return None
        return (
            f"the worktree of session {name!r} could not be checked out ({checkout.error}); "
            f"close the session (`redline session close {name} --force`) and open it again"
        )

    def call(self, method: Callable[[dict[str, Any]], Any], params: dict[str, Any]) -> Any:
        """Run one method; the objects it wrote are on disk before it answers."""
        token = self.staged.holds.begin()
        try:
            self._read_settings()
            return self.step(lambda: method(params))
        finally:
            self.staged.holds.end(token)

    def step(self, work: Callable[[], T]) -> T:
        """Run a method or a step of ``apply`` on the worker, then write the objects it
        staged.

        That write is a courtesy: whatever names an object on disk (a ref, the
        journal) writes the staged objects first itself and fails if it cannot
        (gitops.refs, gitops.publish). So when the disk is full the objects stay
        staged for the next write, and the step's own outcome is the answer.
        """
        with self.spares.serving():
            if self.housekeeping.packs_removed.is_set():
                self._reopen_odb()
            try:
                return work()
            finally:
                try:
                    self.writer.flush()
                except Exception as exc:
                    self._unwritten(exc)
                else:
                    self._unwritten(None)
                if self.staged.written >= CONSOLIDATE_AFTER:
                    self.roll_up_packs()

    def _reopen_odb(self) -> None:
        """Give the repository, and each session's worktree view of it, a fresh object
        database: the packs housekeeping removed leave libgit2's list, and the daemon's
        memory (see gitops.packs.StagedObjects.reopen)."""
        self.housekeeping.packs_removed.clear()
        try:
            self.staged.reopen(self.repo)
            for applier in self._appliers.values():
                fresh_odb(applier.worktree, self.staged.objects_dir)
        except Exception as exc:  # the old one still serves; tried again after the next removal
            log.warning("could not give the repository a fresh object database: %s", exc)

    def _unwritten(self, problem: Exception | None) -> None:
        """Log once why staged objects cannot be written, and once that they can again."""
        said = None if problem is None else str(problem)
        if said == self._flush_problem:
            return
        if problem is None:
            log.info("staged objects are written again")
        else:
            log.warning(
                "cannot write the staged objects yet (the next request tries again): %s", said
            )
        self._flush_problem = said

    def _read_settings(self) -> None:
        """What git's configuration asks of the writes (core.fsync), as it is now."""
        try:
            self.writer.durability = Durability.from_config(self.repo.config)
        except Exception as exc:  # a configuration libgit2 cannot read: keep what was read
            log.warning("cannot read the repository's configuration: %s", exc)

    def roll_up_packs(self) -> None:
        """Ask for the packs written since the last time to be rolled together.

        Returns at once: ``git repack`` runs on the housekeeping thread, so no
        request waits for it, and its failure is a line in the log.
        """
        if self.staged.written:
            self.staged.written = 0
            self.housekeeping.repack()

    # -- methods ---------------------------------------------------------------

    def hello(self, params: dict[str, Any]) -> dict[str, Any]:
        wanted = params.get("protocol", PROTOCOL_VERSION)
        if wanted != PROTOCOL_VERSION:
            raise RpcError(
                protocol.INVALID_PARAMS,
                "unsupported protocol version",
                f"this daemon speaks protocol {PROTOCOL_VERSION}, the client asked for {wanted!r};"
                " restart the daemon with the same redline version as the client",
            )
        return {
            "server": "redline",
            "version": __version__,
            "protocol": PROTOCOL_VERSION,
            "permissions": PERMISSIONS_ENFORCED,
        }

    def session_open(self, params: dict[str, Any]) -> dict[str, Any]:
        """Runs on a planning thread: git checks the worktree out in a process of its own
        while the daemon serves everything else. ``wait`` (default true): answer once the
        worktree is complete; false: at once (within OPEN_GRACE), with its progress."""
        name = _optional_str(params, "name")
        base = _optional_str(params, "base")
        wait = params.get("wait", True)
        if not isinstance(wait, bool):
            raise RpcError(protocol.INVALID_PARAMS, "invalid params", "'wait' must be a boolean")
        token = self.staged.holds.begin()
        try:
            session, edits = self.on_worker(lambda: self._open(name, base))
        finally:
            self.staged.holds.end(token)
        checkout = self._checkouts[session.name]
        checkout.wait(None if wait else OPEN_GRACE)
        # The daemon's first session: what its first request imports is imported
        # by now (during the checkout), not half-way through when it arrives.
        self.housekeeping.wait_ready()
        if wait and checkout.error is not None:
            raise SessionError(self.checkout_problem(session.name) or checkout.error)
        return {
            "name": session.name,
            "branch": session.short_branch,
            "worktree": session.worktree,
            "resumed": session.resumed,
            "base": session.base,
            "edits": edits,
            **checkout.progress(),
        }

    def _open(self, name: str | None, base: str | None) -> tuple[sessions.Session, int]:
        """On the worker: the session's branch, record and registered worktree, its
        checkout started; the session and how many edits its branch has."""
        session = sessions.open_session(self.repo, self.layout, name, base, background=True)
        if session.name in self._appliers:  # its worktree was checked out again (it was gone)
            del self._appliers[session.name]
            self.on_session_close(session.name)
        self._check_out(session)
        return session, len(history.commits(self.repo, session.branch, session.base))

    def session_status(self, params: dict[str, Any]) -> dict[str, Any]:
        """Answered at once: whether the session's worktree is checked out, and how far."""
        name = _required_str(params, "name")
        checkout = self._checkouts.get(name)
        if checkout is not None:
            return {"name": name, **checkout.progress()}
        if sessions.find(self.layout, name) is None:
            raise SessionError(
                f"no session named {name!r}; `redline session list` shows the open ones"
            )
        return {"name": name, "ready": True, "done": 0, "total": 0, "error": None}

    def session_list(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        return history.open_sessions(self.repo, self.layout)

    def session_close(self, params: dict[str, Any]) -> dict[str, Any]:
        name = _required_str(params, "name")
        session = sessions.load(self.layout, name)
        checkout = self._checkouts.pop(name, None)
        if checkout is not None:
            checkout.cancel()
        sessions.close_session(
            self.repo,
            self.layout,
            session,
            delete_branch=bool(params.get("delete_branch", False)),
            force=bool(params.get("force", False)),
        )
        self._appliers.pop(name, None)
        self._hints.pop(name, None)
        self.settings.forget(name)
        self.on_session_close(name)
        return {"name": name, "closed": True}

    def apply(self, params: dict[str, Any]) -> dict[str, Any]:
        """Runs on a planning thread (or the worker, with ``on_worker`` left as it is);
        the requests of one session come one at a time (the server sees to it)."""
        name = _required_str(params, "session")
        request_obj = params.get("request")
        if not isinstance(params.get("asked", False), bool):
            raise RpcError(
                protocol.INVALID_PARAMS,
                "invalid params",
                "'asked' must be true or false: whether a person allowed what an ask rule "
                "holds for this request",
            )
        full = params.get("full", False)
        if not isinstance(full, bool):
            raise RpcError(
                protocol.INVALID_PARAMS,
                "invalid params",
                "'full' must be true or false: whether the answer carries every field of the "
                "result (false: the fields that say something, as `redline apply` prints)",
            )
        token = self.staged.holds.begin()
        try:
            return shown(self._apply(name, request_obj, params), full)
        finally:
            self.staged.holds.end(token)

    def _apply(self, name: str, request_obj: Any, params: dict[str, Any]) -> dict[str, Any]:
        from redline.tools.request import parse_request

        problem = self.checkout_problem(name)  # on this planning thread, not the worker
        if problem is not None:
            result = Result("failed", path=_request_path(request_obj), error=problem)
            result.session = name
            return result.to_dict()
        try:
            applier, rules = self.on_worker(lambda: self._judged(name))
        except WorktreeGone as exc:
            path = request_obj.get("path") if isinstance(request_obj, dict) else None
            result = Result("failed", path=path if isinstance(path, str) else None, error=str(exc))
            result.session = name
            return result.to_dict()
        if isinstance(rules, str):
            stopped = unknown_rules(rules, request_obj)
        else:
            stopped = verdict(rules, request_obj, asked=bool(params.get("asked", False)))
        if stopped is not None:
            stopped["session"] = name
            return stopped
        try:
            request, turn = parse_request(request_obj)
        except RequestError as exc:
            path = request_obj.get("path") if isinstance(request_obj, dict) else None
            result = Result("invalid", path=path if isinstance(path, str) else None, error=str(exc))
            result.session = name
            return result.to_dict()
        if not isinstance(request, PatchRequest):
            # Reported as embedded mode reports it: an absolute path inside the worktree
            # relative to it, './a.py' as 'a.py'.
            request = replace(request, path=request_path(applier.root, request.path))
        model = request_obj.get("model") if isinstance(request_obj, dict) else None
        dry_run = bool(params.get("dry_run", False))
        try:
            with self.housekeeping.planning():
                result = applier.apply(request, model, dry_run=dry_run, on_worker=self.on_worker)
        except WorktreeGone as exc:  # removed under the session: reopening it is the fix
            result = Result("failed", path=getattr(request, "path", None), error=str(exc))
            result.session = name
        except (ResourceError, OSError) as exc:
            # The machine, not the request: nothing landed (a request that landed is
            # answered as applied, whatever fails after), so it is a refusal to retry.
            refused = _not_applied(exc, str(self.layout.common))
            if refused is None:
                raise
            result = Result("failed", path=getattr(request, "path", None), error=refused)
            result.session = name
        if isinstance(request, EditRequest):
            self._hints.setdefault(name, FailureHints()).observe(request.path, turn, result)
        answer = result.to_dict()
        if not dry_run and result.status != "applied":
            self._record_outcomes(name, request_obj, answer)
        return answer

    def _judged(self, name: str) -> tuple[SessionApplier, Permissions | str]:
        """On the worker: the session's applier, with git's settings read as they are now,
        and the permission rules for its requests (or why they cannot be read)."""
        self._read_settings()
        applier = self.applier(name)
        try:
            return applier, self.settings.permissions(applier.session)
        except RedlineError as exc:
            return applier, str(exc)

    def _record_outcomes(self, name: str, request: Any, answer: dict[str, Any]) -> None:
        """Note a refused request (or a patch's refused file groups) in the session's
        outcome log (``redline stats`` reads it); a log that cannot be written is a line
        in the daemon's log, never a failure."""
        try:
            for line in outcomes.entries(name, request, answer):
                problem = outcomes.record(self.layout, line)
                if problem is not None:
                    log.warning("session %s: outcome not recorded: %s", name, problem)
        except Exception:
            log.exception("session %s: could not record a %s outcome", name, answer["status"])

    def when_quiet(self) -> None:
        """Idle-time upkeep: roll up packs, import the tolerant tiers' libraries (once),
        and warm the guard's ledger cache for hooks."""
        self.roll_up_packs()
        self.housekeeping.when_quiet()
        try:
            ledger.load(self.repo)
        except Exception:  # a cache is an optimisation; the hook rebuilds it if needed
            log.exception("could not refresh the review ledger")

    def undo(self, params: dict[str, Any]) -> dict[str, Any]:
        """Revert one edit of a session in a new commit of it (on the git worker, in turn
        with the session's requests). Offered to agents: an undo only takes an edit's
        changes back, judged as an edit is, so it can clear no flag (gitops.undo)."""
        name = _required_str(params, "session")
        edit = _required_str(params, "edit")
        problem = self.checkout_problem(name, wait=False)  # on the worker: never wait here
        if problem is not None:
            raise SessionError(problem)
        return self.applier(name).undo(edit).to_dict()

    def log(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        name = _required_str(params, "session")
        return history.session_history(self.repo, self.layout, name).entries


def _request_path(request: Any) -> str | None:
    path = request.get("path") if isinstance(request, dict) else None
    return path if isinstance(path, str) else None


def _registered(session: sessions.Session) -> bool:
    return (Path(session.worktree) / ".git").is_file()


def _index_lock(root: Path) -> Path:
    admin = (root / ".git").read_text(encoding="utf-8").removeprefix("gitdir:").strip()
    return (root / admin) / "index.lock"


def _not_applied(exc: Exception, where: str) -> str | None:
    """The answer's error for a request the machine stopped (None: not the machine's doing);
    ``where`` is the repository, for an error that names no file."""
    outcome = "the request was not applied: nothing was written"
    if isinstance(exc, ResourceError):
        said = explain(exc.cause, exc.cause.filename or where)
        return f"{exc.doing}: {said} — {exc.outcome or outcome}"
    if isinstance(exc, OSError) and is_resource(exc):
        return f"cannot apply the request: {explain(exc, exc.filename or where)} — {outcome}"
    return None


def _required_str(params: dict[str, Any], key: str) -> str:
    value = params.get(key)
    if not isinstance(value, str) or not value:
        raise RpcError(
            protocol.INVALID_PARAMS, "invalid params", f"{key!r} must be a non-empty string"
        )
    return value


def _optional_str(params: dict[str, Any], key: str) -> str | None:
    value = params.get(key)
    if value is not None and not isinstance(value, str):
        raise RpcError(protocol.INVALID_PARAMS, "invalid params", f"{key!r} must be a string")
    return value or None


def error_for(exc: Exception) -> RpcError:
    """The JSON-RPC error an exception from a method maps to (the one place)."""
    if isinstance(exc, RpcError):
        return exc
    if isinstance(exc, SessionError):
        return RpcError(protocol.SESSION_ERROR, "session error", str(exc))
    if isinstance(exc, RedlineError):  # on purpose: its message says what to do
        return RpcError(protocol.REPOSITORY_ERROR, "cannot do that", str(exc))
    if isinstance(exc, OSError) and is_resource(exc):  # the machine, not a bug
        log.warning("%s", exc)
        return RpcError(protocol.REPOSITORY_ERROR, "cannot do that", explain(exc))
    log.exception("internal error")
    return RpcError(
        protocol.INTERNAL_ERROR,
        "internal error",
        f"{type(exc).__name__}: {exc}; the daemon is still running, see its log",
    )
