"""Where an MCP server's requests go: a daemon session (git mode) or a folder (embedded).

Both take the wire request (the same JSON as ``redline apply`` reads) and give
the result dict; neither raises for anything a request or the daemon does —
a problem is the request's result, so the agent always gets an answer. Calls
block: the server runs them on a worker thread, one at a time.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from redline.pipeline.runners import embedded_runner, failure, guarded, rpc_error, rpc_status

if TYPE_CHECKING:
    from redline.daemon.client import Client
    from redline.settings.folder import FolderSettings

Connect = Callable[[], tuple["Client", bool]]  # a daemon client, and whether it was started


class Backend(Protocol):
    def apply(
        self, request: dict[str, Any], client_name: str | None, asked: bool = False
    ) -> dict[str, Any]:
        """The request's result. ``asked``: a person allowed what an ask rule holds for it
        (the daemon judges the rules again, and lets an ask rule pass only then)."""

    def where(self, client_name: str | None) -> Path | None:
        """The folder request paths are relative to (None when it cannot be known now:
        the request then fails in ``apply``, saying why)."""

    def close(self) -> None: ...


class Embedded:
    """Requests applied to the files under ``root`` in this process (``redline apply --root``),
    under its settings (``folder``: read as ``redline apply`` reads them, settings.folder;
    read now when not given)."""

    def __init__(self, root: Path, folder: FolderSettings | None = None) -> None:
        self.root = root
        self._run = embedded_runner(root, dry_run=False, threshold=None, folder=folder)

    def apply(
        self, request: dict[str, Any], client_name: str | None, asked: bool = False
    ) -> dict[str, Any]:
        return self._run(request)

    def where(self, client_name: str | None) -> Path | None:
        return self.root

    def close(self) -> None:
        pass


class Daemon:
    """Requests sent to a daemon session: the one named, or else one named for the client
    (``naming.session_name_for``), opened on the first call — or used as it is when it
    is open already, resumed when only its branch is left.

    One connection serves every call. A daemon that stopped or restarted between
    calls is reconnected to (started again if need be) before the next request goes
    out; a connection lost during a call is that call's ``failed`` result, saying
    how to find out whether it was committed.
    """

    def __init__(self, connect: Connect, name: str | None) -> None:
        self._connect = connect
        self._named = name
        self._client: Client | None = None
        self.name: str | None = None  # the session in use, once the first call opened it
        self.worktree: Path | None = None  # its worktree, known once it is open

    def apply(
        self, request: dict[str, Any], client_name: str | None, asked: bool = False
    ) -> dict[str, Any]:
        from redline.pipeline.daemon_call import unsure

        self._name(client_name)
        assert self.name is not None
        return guarded(partial(self._send, asked=asked), unsure(self.name), self.name)(request)

    def where(self, client_name: str | None) -> Path | None:
        """The session's worktree (the session opened when it is not yet)."""
        from redline.engine.errors import RedlineError

        self._name(client_name)
        try:
            self._ready()
        except (RedlineError, OSError):
            return None  # the request's apply reports it
        return self.worktree

    def _name(self, client_name: str | None) -> None:
        if self.name is None:
            from redline.mcp.naming import session_name_for

            self.name = self._named or session_name_for(client_name)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def _send(self, request: Any, asked: bool) -> dict[str, Any]:
        from redline.daemon.protocol import RpcError
        from redline.engine.errors import RedlineError
        from redline.pipeline.daemon_call import not_sent, send

        assert self.name is not None
        try:
            client = self._ready()
        except RpcError as exc:  # session.open refused: the name, the base, the repository
            return failure(rpc_status(exc), request, rpc_error(exc), self.name)
        except RedlineError as exc:
            return failure("failed", request, not_sent(exc), self.name)
        sent = send(client, self.name, request, **({"asked": True} if asked else {}))
        if sent.lost:
            self.close()
        return sent.result

    def _ready(self) -> Client:
        """The connection, made (and the session opened) when there is none or the daemon
        went away since the last call."""
        if self._client is not None and self._client.peer_closed():
            self.close()
        if self._client is None:
            client, _ = self._connect()
            try:
                self._open(client)
            except BaseException:
                client.close()
                raise
            self._client = client
        return self._client

    def _open(self, client: Client) -> None:
        from redline.daemon.protocol import RpcError

        if self._is_open(client):
            return
        try:
            opened = client.call("session.open", {"name": self.name})
        except RpcError:
            if not self._is_open(client):  # not another server of this client opening it too
                raise
            return
        self.worktree = Path(opened["worktree"])

    def _is_open(self, client: Client) -> bool:
        for item in client.call("session.list") or []:
            if item.get("name") == self.name:
                self.worktree = Path(item["worktree"])
                return True
        return False
