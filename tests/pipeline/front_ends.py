"""Every front end a request can come through, each sending a list of wire requests and
giving back their results (for the tables in this folder):

- ``apply-embedded``: ``redline apply --root`` in this process;
- ``apply-session``: ``redline apply --session`` (git mode: the daemon applies);
- ``raw-socket``: a socket client of the daemon (``daemon.client.Client``), which no
  front end stands in front of;
- ``mcp-embedded``, ``mcp-session``: ``redline mcp --embedded`` and ``redline mcp
  --session`` over the MCP SDK's in-memory transport, with a client that cannot ask a
  person.

``root`` is where the requests' paths lead: the repository's folder, or the session's
worktree.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from gitmode_fixtures import GitMode
from redline.daemon.client import Client
from support import cli as inproc
from support.mcp_client import connect, structured

Send = Callable[[list[dict[str, Any]]], list[dict[str, Any]]]


@dataclass
class FrontEnd:
    root: Path  # where the requests' paths lead
    send: Send


def _embedded(gm: GitMode) -> FrontEnd:
    def send(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
        payload = "".join(json.dumps(r) + "\n" for r in requests)
        args = ["apply", "--root", str(gm.repo), "--jsonl"]
        done = inproc.run(args, input=payload, env=gm.env, cwd=gm.repo)
        return [json.loads(line) for line in done.stdout.splitlines()]

    return FrontEnd(gm.repo, send)


def _session(gm: GitMode) -> FrontEnd:
    worktree = Path(gm.cli.open_session("s")["worktree"])

    def send(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
        payload = "".join(json.dumps(r) + "\n" for r in requests)
        done = gm.cli.run(
            "apply", "--session", "s", "--repo", str(gm.repo), "--jsonl", input=payload
        )
        return [json.loads(line) for line in done.stdout.splitlines()]

    return FrontEnd(worktree, send)


def _socket(gm: GitMode) -> FrontEnd:
    worktree = Path(gm.cli.open_session("s")["worktree"])

    def send(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
        with Client(gm.socket()) as client:
            return [client.call("apply", {"session": "s", "request": r}) for r in requests]

    return FrontEnd(worktree, send)


def _mcp(gm: GitMode, *args: str, root: Path) -> FrontEnd:
    def send(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
        async def main() -> list[dict[str, Any]]:
            async with connect(gm.env, gm.repo, *args) as session:
                results = []
                for request in requests:
                    arguments = {k: v for k, v in request.items() if k != "tool"}
                    answer = await session.call_tool(request["tool"], arguments)
                    results.append(structured(answer))
                return results

        return anyio.run(main)

    return FrontEnd(root, send)


def _mcp_embedded(gm: GitMode) -> FrontEnd:
    return _mcp(gm, "--embedded", root=gm.repo)


def _mcp_session(gm: GitMode) -> FrontEnd:
    worktree = Path(gm.cli.open_session("m")["worktree"])  # the server uses it as it is
    return _mcp(gm, "--session", "m", "--repo", str(gm.repo), root=worktree)


FRONT_ENDS: dict[str, Callable[[GitMode], FrontEnd]] = {
    "apply-embedded": _embedded,
    "apply-session": _session,
    "raw-socket": _socket,
    "mcp-embedded": _mcp_embedded,
    "mcp-session": _mcp_session,
}
