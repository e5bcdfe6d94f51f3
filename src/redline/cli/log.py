"""``redline log``: a session's edit commits and their evidence, read from the repository."""

from __future__ import annotations

import json
from pathlib import Path

import click

from redline.cli._connect import repo_option
from redline.cli._repository import open_repository
from redline.engine.confidence import shown_confidence
from redline.engine.paths import safe_text, shown_path


@click.command("log")
@repo_option
@click.argument("name", required=False)
@click.option("--json", "as_json", is_flag=True)
def log_command(repo: Path, name: str | None, as_json: bool) -> None:
    """List a session's commits with their evidence (newest first).

    A closed session whose branch was kept is listed too. Reads the repository
    directly: no daemon is started.
    """
    from redline.gitops import history
    from redline.gitops import session as sessions
    from redline.gitops.notes_sync import import_fetched

    handle, layout = open_repository(repo)
    import_fetched(handle)  # the notes `git fetch` brought from remotes
    if name is None:
        names = [s.name for s in sessions.all_sessions(layout)]
        if len(names) != 1:
            listed = ", ".join(names) or "none is open"
            raise click.UsageError(f"name a session ({listed})")
        name = names[0]
    found = history.session_history(handle, layout, name)
    if as_json:
        click.echo(json.dumps(found.entries))
        return
    if not found.open:
        click.echo(
            f"session {name} is closed; its branch {found.branch} is kept "
            f"(`redline session open --name {name}` resumes it)"
        )
    if not found.entries:
        hint = f"; `redline apply --session {name}` sends one" if found.open else ""
        click.echo(f"no edits on {found.branch} yet{hint}")
    for entry in found.entries:
        click.echo(
            f"{entry['commit'][:12]} {safe_text(entry['summary'], keep='')}  "
            f"[{entry['source']}, edit {entry['edit']}]"
        )
        for op in entry["operations"]:
            lines = ""
            if op.get("start_line") is not None:
                lines = f" lines {op['start_line']}-{op['end_line']}"
            evidence = ""
            if op.get("match_type"):
                evidence = f" {op['match_type']} {shown_confidence(op['confidence'])}"
            click.echo(f"    {op.get('op', '')} {shown_path(str(op['path']))}{lines}{evidence}")
