"""``redline log``: a session's edit commits and their evidence, read from the repository."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from redline.cli._repository import open_repository
from redline.cli.options import repo_option
from redline.engine.confidence import shown_confidence
from redline.engine.paths import safe_text, shown_path


@click.command("log")
@repo_option
@click.argument("name", required=False)
@click.option(
    "--range",
    "spec",
    metavar="BASE..HEAD",
    help="The edits the commits of a range carry (a landed squash's each), not a session's.",
)
@click.option("--json", "as_json", is_flag=True)
def log_command(repo: Path, name: str | None, spec: str | None, as_json: bool) -> None:
    """List a session's commits with their evidence (newest first): each edit's state
    (clean, flagged, approved and by whom, undone) and what it tolerated.

    A closed session whose branch was kept is listed too; with --range BASE..HEAD,
    the edits of any commits (a teammate's clone, a landed squash). Reads the
    repository directly: no daemon is started.
    """
    from redline.gitops import history
    from redline.gitops import session as sessions
    from redline.gitops.notes_sync import import_fetched

    handle, layout = open_repository(repo)
    import_fetched(handle)  # the notes `git fetch` brought from remotes
    if spec is not None:
        if name is not None:
            raise click.UsageError("give a session NAME or --range BASE..HEAD, not both")
        from redline.hooks.gate import parse_range, resolve

        base, head = parse_range(spec)
        entries = history.range_history(
            handle, resolve(handle, base, "BASE").id, resolve(handle, head, "HEAD").id
        )
        if as_json:
            click.echo(json.dumps(entries))
            return
        if not entries:
            click.echo(f"no commits in {spec}")
        _show(entries)
        return
    if name is None:
        names = [s.name for s in sessions.all_sessions(layout)]
        if len(names) != 1:
            listed = ", ".join(names) or "none is open"
            raise click.UsageError(f"name a session ({listed}), or give --range BASE..HEAD")
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
    _show(found.entries)


def state_of(entry: dict[str, Any]) -> str:
    """An edit's state in words: clean, flagged (and how to clear it), approved by whom,
    undone."""
    state = entry.get("state")
    if state == "approved":
        return "approved by " + ", ".join(entry.get("approved_by") or ["?"])
    if state == "flagged":
        return f"flagged, not approved (`redline approve {entry.get('edit')}` once reviewed)"
    if state == "unknown":
        return "no evidence note"
    return str(state or "")


def _show(entries: list[dict[str, Any]]) -> None:
    from redline.engine.tolerated import one_line

    for entry in entries:
        commit = f"{entry['commit'][:12]} {safe_text(entry['summary'], keep='')}"
        undoes = f", undoes edit {entry['undoes']}" if entry.get("undoes") else ""
        click.echo(f"{commit}  [{entry['source']}, edit {entry['edit']}{undoes}] {state_of(entry)}")
        matched = False
        for op in entry["operations"]:
            lines = ""
            if op.get("start_line") is not None:
                lines = f" lines {op['start_line']}-{op['end_line']}"
            evidence = ""
            if op.get("match_type"):
                matched = True
                evidence = f" {op['match_type']} {shown_confidence(op['confidence'])}"
            click.echo(f"    {op.get('op', '')} {shown_path(str(op['path']))}{lines}{evidence}")
        if matched:
            said = one_line(entry.get("tolerated") or [])
            click.echo(safe_text(f"    tolerated: {said}", keep=""))
