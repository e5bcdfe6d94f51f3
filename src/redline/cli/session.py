"""``redline session open|list|close``."""

from __future__ import annotations

import json
from pathlib import Path

import click

from redline.cli._connect import daemon_client, repo_option
from redline.daemon.protocol import RpcError


def _call(repo: Path, method: str, params: dict[str, object]) -> object:
    with daemon_client(repo) as client:
        try:
            return client.call(method, params)
        except RpcError as exc:
            raise click.ClickException(str(exc.data or exc.message)) from None


@click.group("session")
def session_group() -> None:
    """Sessions: a branch redline/NAME checked out in a scratch worktree."""


@session_group.command("open")
@repo_option
@click.option("--base", default=None, help="Commit to start from (default: HEAD).")
@click.option("--name", default=None, help="Session name (default: s-<date>-<time>).")
@click.option("--json", "as_json", is_flag=True, help="Print {name, branch, worktree}.")
def open_command(repo: Path, base: str | None, name: str | None, as_json: bool) -> None:
    """Open a session and print its worktree and branch."""
    opened = _call(repo, "session.open", {"name": name, "base": base})
    assert isinstance(opened, dict)
    if as_json:
        click.echo(json.dumps(opened))
        return
    click.echo(f"session:  {opened['name']}")
    click.echo(f"branch:   {opened['branch']}")
    click.echo(f"worktree: {opened['worktree']}")


@session_group.command("list")
@repo_option
@click.option("--json", "as_json", is_flag=True)
def list_command(repo: Path, as_json: bool) -> None:
    """List the open sessions."""
    found = _call(repo, "session.list", {})
    assert isinstance(found, list)
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
    kept = "" if delete_branch else f" (branch redline/{name} kept)"
    click.echo(f"closed session {name}{kept}")
