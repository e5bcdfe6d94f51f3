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

from redline.cli._connect import daemon_client, daemon_client_started, daemon_files
from redline.cli.options import repo_option
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
    "--full",
    is_flag=True,
    help="Wait until every file of the worktree is checked out (progress on a terminal).",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print {name, branch, worktree, resumed, base, edits, ready, done, total}.",
)
def open_command(repo: Path, base: str | None, name: str | None, full: bool, as_json: bool) -> None:
    """Open a session and print its worktree and branch.

    When the branch redline/NAME exists (a session closed with its branch kept),
    the session resumes it: a new worktree on that branch, its history continued.
    A large worktree is checked out by git in the background: the command answers
    at once and the session's requests wait for the checkout; --full waits here.
    """
    if name is not None:
        _check_name(name)  # refused here, before a daemon is started for nothing
    opened = _open(repo, {"name": name, "base": base, "wait": False}, full)
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
    if not opened.get("ready", True):
        click.echo(
            f"checkout: {opened.get('done', 0)}/{opened.get('total') or '?'} files so far; git "
            "goes on in the background and the session's requests wait for it "
            "(`redline session open --full` waits here)"
        )


def _check_name(name: str) -> None:
    from redline.gitops.names import check_name

    check_name(name)


def _open(repo: Path, params: dict[str, object], full: bool) -> Any:
    """``session.open``; a daemon started only for it is stopped again when it fails.
    With ``full``, the worktree's checkout is waited for (shown on a terminal)."""
    client, started = daemon_client_started(repo)
    try:
        with client:
            opened = client.call("session.open", params)
            if full and not opened.get("ready", True):
                opened.update(_checked_out(client, opened["name"]))
            return opened
    except RpcError:
        if started:
            from redline.daemon.lifecycle import DaemonError, stop

            with contextlib.suppress(DaemonError, OSError):
                stop(daemon_files(repo), unless_in_use=True)
        raise


def _checked_out(client: Any, name: str) -> dict[str, Any]:
    """Wait for session ``name``'s checkout, showing ``checkout: done/total`` on a terminal
    (nothing when stderr is piped); its last status."""
    import sys
    import time

    shown = sys.stderr.isatty()
    while True:
        status: dict[str, Any] = client.call("session.status", {"name": name})
        if shown and status.get("total"):
            sys.stderr.write(f"\rcheckout: {status['done']}/{status['total']} files")
            sys.stderr.flush()
        if status.get("ready") or status.get("error"):
            break
        time.sleep(0.2)
    if shown:
        sys.stderr.write("\n")
    if status.get("error"):
        raise click.ClickException(
            f"the worktree of session {name!r} could not be checked out "
            f"({status['error']}); close the session (`redline session close {name} "
            "--force`) and open it again"
        )
    return status


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
