"""``redline log``: a session's edit commits and their evidence."""

from __future__ import annotations

import json
from pathlib import Path

import click

from redline.cli._connect import daemon_client, repo_option
from redline.daemon.protocol import RpcError


@click.command("log")
@repo_option
@click.argument("name", required=False)
@click.option("--json", "as_json", is_flag=True)
def log_command(repo: Path, name: str | None, as_json: bool) -> None:
    """List a session's commits with their evidence (newest first)."""
    with daemon_client(repo) as client:
        try:
            if name is None:
                sessions = client.call("session.list", {})
                if len(sessions) != 1:
                    names = ", ".join(s["name"] for s in sessions) or "none open"
                    raise click.UsageError(f"name a session ({names})")
                name = sessions[0]["name"]
            entries = client.call("log", {"session": name})
        except RpcError as exc:
            raise click.ClickException(str(exc.data or exc.message)) from None
    if as_json:
        click.echo(json.dumps(entries))
        return
    for entry in entries:
        click.echo(
            f"{entry['commit'][:12]} {entry['summary']}  [{entry['source']}, edit {entry['edit']}]"
        )
        for op in entry["operations"]:
            lines = ""
            if op.get("start_line") is not None:
                lines = f" lines {op['start_line']}-{op['end_line']}"
            evidence = ""
            if op.get("match_type"):
                evidence = f" {op['match_type']} {op['confidence']}"
            click.echo(f"    {op.get('op', '')} {op['path']}{lines}{evidence}")
