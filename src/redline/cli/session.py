"""``redline session open|list|close``.

``open`` and ``close`` go through the repository's daemon (starting it when
needed); ``list`` only reads, in this process, and starts none.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import click

from redline.cli._connect import daemon_client, daemon_client_started, daemon_files, repo_option
from redline.daemon.protocol import RpcError


def _call(repo: Path, method: str, params: dict[str, object]) -> Any:
    with daemon_client(repo) as client:
        return client.call(method, params)  # an error answer is the boundary's to show


@click.group("session")
def session_group() -> None:
    """Sessions: a branch redline/NAME checked out in a scratch worktree."""


@session_group.command("open")
@repo_option
@click.option("--base", default=None, help="Commit to start from (default: HEAD).")
@click.option("--name", default=None, help="Session name (default: s-<date>-<time>).")
@click.option(
    "--json", "as_json", is_flag=True, help="Print {name, branch, worktree, resumed, base, edits}."
)
def open_command(repo: Path, base: str | None, name: str | None, as_json: bool) -> None:
    """Open a session and print its worktree and branch.

    When the branch redline/NAME exists (a session closed with its branch kept),
    the session resumes it: a new worktree on that branch, its history continued.
    """
    if name is not None:
        _check_name(name)  # refused here, before a daemon is started for nothing
    opened = _open(repo, {"name": name, "base": base})
    if as_json:
        click.echo(json.dumps(opened))
        return
    click.echo(f"session:  {opened['name']}")
    click.echo(f"branch:   {opened['branch']}")
    click.echo(f"worktree: {opened['worktree']}")
    if opened.get("resumed"):
        click.echo(
            f"resumed:  {opened['branch']} existed, so the session continues its history "
            f"({opened['edits']} earlier commit(s); `redline log {opened['name']}` lists them)"
        )


def _check_name(name: str) -> None:
    from redline.gitops.names import check_name

    check_name(name)


def _open(repo: Path, params: dict[str, object]) -> Any:
    """``session.open``; a daemon started only for it is stopped again when it fails."""
    client, started = daemon_client_started(repo)
    try:
        with client:
            return client.call("session.open", params)
    except RpcError:
        if started:
            from redline.daemon.lifecycle import DaemonError, stop

            with contextlib.suppress(DaemonError, OSError):
                stop(daemon_files(repo), unless_in_use=True)
        raise


@session_group.command("list")
@repo_option
@click.option("--json", "as_json", is_flag=True)
def list_command(repo: Path, as_json: bool) -> None:
    """List the open sessions (read from the repository: no daemon is started)."""
    from redline.cli._repository import open_repository
    from redline.gitops import history

    found = history.open_sessions(*open_repository(repo))
    if as_json:
        click.echo(json.dumps(found))
        return
    if not found:
        click.echo("no open sessions; `redline session open` creates one")
    for item in found:
        click.echo(
            f"{item['name']}\t{item['branch']}\t{item['edits']} commit(s)\t{item['worktree']}"
        )


@session_group.command("close")
@repo_option
@click.argument("name")
@click.option("--delete-branch", is_flag=True, help="Delete the branch too (refused if unmerged).")
@click.option("--force", is_flag=True, help="Discard uncommitted or unmerged work.")
def close_command(repo: Path, name: str, delete_branch: bool, force: bool) -> None:
    """Remove a session's worktree (and, with --delete-branch, its branch)."""
    _call(repo, "session.close", {"name": name, "delete_branch": delete_branch, "force": force})
    if delete_branch:
        click.echo(f"closed session {name} and deleted its branch redline/{name}")
    else:
        click.echo(
            f"closed session {name} (branch redline/{name} kept: `redline log {name}` shows its "
            f"history, `redline session open --name {name}` resumes it)"
        )
