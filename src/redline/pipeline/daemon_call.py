"""A request sent to a daemon session, and what becomes of it when the call fails.

``redline apply --session`` and ``redline mcp`` (git mode) both send the wire
request as ``apply {session, request}``; every way that call can fail is the
request's result here, in one wording. Once the daemon holds a request, a lost
connection leaves it unknown whether it was committed: the answer says so and
how to find out (:func:`unsure`), never "not applied".
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from redline.pipeline.runners import clip, failure, rpc_error, rpc_status

OLD_DAEMON = (
    "the redline daemon that runs is older than this redline and does not check the "
    "[permission] rules of what it is sent; run `redline daemon stop` (the next command "
    "starts the current one), then send it again"
)

if TYPE_CHECKING:
    from redline.daemon.client import Client
    from redline.daemon.protocol import RpcError


class Sent:
    """What came of one ``apply`` call: the request's ``result``; whether the connection is
    gone (``lost``: closed or broken, make a new one for the next call); the daemon's error
    answer when it refused the call (``refused``); whether ``result`` is the daemon's
    answer (``answered``: cut to the fields asked for, see :func:`send`) rather than one
    made here.

    A plain class: ``redline apply --session`` imports this module on every call, and a
    dataclass would bring in :mod:`dataclasses` (and :mod:`inspect`) for it."""

    __slots__ = ("answered", "lost", "refused", "result")

    def __init__(
        self,
        result: dict[str, Any],
        lost: bool = False,
        refused: RpcError | None = None,
        answered: bool = False,
    ) -> None:
        self.result = result
        self.lost = lost
        self.refused = refused
        self.answered = answered

    def __repr__(self) -> str:
        return (
            f"Sent(result={self.result!r}, lost={self.lost!r}, refused={self.refused!r}, "
            f"answered={self.answered!r})"
        )


def unsure(session: str) -> str:
    """What to do about a request the daemon may or may not have committed."""
    return (
        "the daemon may or may not have committed it: run `redline daemon start` (a daemon "
        f"first finishes a request it was interrupted in), then `redline log {session}` "
        "shows the session's commits; check there (or re-read the file) before sending it "
        "again"
    )


def not_sent(why: object) -> str:
    """The error of a request that never reached the daemon (``why``: what stopped it)."""
    return f"{why}; nothing was sent to the daemon, so nothing was applied"


class _OlderDaemon(Exception):
    """The daemon does not judge the [permission] rules: it is sent nothing."""


def _judges_permissions(server: dict[str, Any]) -> None:
    from redline.daemon import protocol

    if server.get("permissions") != protocol.PERMISSIONS_ENFORCED:
        raise _OlderDaemon


def send(client: Client, session: str, request: Any, **params: Any) -> Sent:
    """Send ``request`` to ``session`` (``params``: ``dry_run``, ``asked``, ``full``); its
    result. The daemon answers with every field unless ``full=False`` is passed: then
    with the fields that say something (engine.result.shown), as ``redline apply``
    prints them.

    Raises only for what is not the call's: a signal (the caller answers it), or a
    daemon that answers with something that is not a result (a bug: ValueError).
    """
    from redline.daemon import protocol
    from redline.daemon.client import DaemonError
    from redline.daemon.protocol import RpcError

    try:
        # Every field: the front end decides what its caller is shown (engine.result.shown).
        # The first call of a connection goes with its hello: a daemon that runs it
        # that way judges permissions; an older one is vetted before it is sent anything.
        answer = client.call(
            "apply",
            {"session": session, "request": request, "full": True, **params},
            vet=_judges_permissions,
        )
    except _OlderDaemon:
        return Sent(failure("failed", request, not_sent(OLD_DAEMON), session))
    except DaemonError as exc:  # another protocol version: it ran nothing
        return Sent(failure("failed", request, str(exc), session))
    except RpcError as exc:
        if exc.code == protocol.CONNECTION_CLOSED:
            error = f"the daemon closed the connection before answering; {unsure(session)}"
            return Sent(failure("failed", request, error, session), lost=True)
        return Sent(failure(rpc_status(exc), request, rpc_error(exc), session), refused=exc)
    except OSError as exc:
        error = f"lost the connection to the daemon ({exc}); {unsure(session)}"
        return Sent(failure("failed", request, error, session), lost=True)
    if not isinstance(answer, dict) or "status" not in answer:
        raise ValueError(f"the daemon answered {clip(repr(answer))}, not a result")
    return Sent(answer, answered=True)
