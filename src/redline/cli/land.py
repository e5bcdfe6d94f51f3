"""``redline land`` and ``redline undo``.

``land`` runs in this process, as ``approve`` does: it is a person's command
(hooks.land). ``undo`` goes through the repository's daemon (starting it when
needed), which makes the undo commit in turn with the session's requests.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import click

from redline.cli._connect import daemon_client, daemon_files
from redline.cli.options import repo_option
from redline.engine.errors import RedlineError
from redline.engine.paths import shown_path


@click.command("land")
@repo_option
@click.argument("name")
@click.option(
    "--into", default=None, help="Branch to land on (default: the one your worktree is on)."
)
@click.option(
    "--merge",
    "mode",
    flag_value="merge",
    default=True,
    help="Keep each edit commit and its note: fast-forward when the branch has not moved "
    "on, else a merge commit (the default).",
)
@click.option(
    "--squash",
    "mode",
    flag_value="squash",
    help="One commit whose note carries every edit's evidence and whose message every "
    "Redline-Edit trailer.",
)
@click.option("--close", is_flag=True, help="Close the session once landed (its branch is kept).")
@click.option("--message", "-m", default=None, help="Subject of the merge or squash commit.")
@click.option("--json", "as_json", is_flag=True, help="Print the outcome as JSON.")
def land_command(
    repo: Path,
    name: str,
    into: str | None,
    mode: str,
    close: bool,
    message: str | None,
    as_json: bool,
) -> None:
    """Bring session NAME's work onto a branch, once the guard passes it.

    Refused, with what to do, when the guard refuses it (unapproved flagged edits,
    evidence missing), when the branches conflict, or when the branch is checked
    out in a worktree with uncommitted changes (they are never touched).

    Exit status: 0 landed (or nothing to land), 1 refused (or landed, but --close could
    not close the session: the message says why).
    """
    from redline.cli._repository import open_repository
    from redline.gitops.landing import LandError
    from redline.hooks.land import LandRefused, land

    handle, layout = open_repository(repo)
    try:
        done = land(handle, layout, name, into, mode == "squash", message, os.environ)
    except (LandRefused, LandError) as exc:
        details = exc.to_dict() if isinstance(exc, LandRefused) else {}
        if as_json:
            click.echo(json.dumps({"status": "refused", "session": name, "reason": str(exc),
                                   **details}))  # fmt: skip
        else:
            click.echo(f"redline land: session {name} was not landed.\n{exc}", err=True)
        sys.exit(1)
    outcome = done.to_dict()
    problem = None
    if close:
        try:
            outcome["closed"] = _close(repo, handle, layout, name)
        except RedlineError as exc:  # landed all the same: say so, and why it stays open
            outcome["closed"], problem = False, f"the session was not closed: {exc}"
            outcome["close_error"] = problem
    if as_json:
        click.echo(json.dumps(outcome))
    else:
        _show_landed(outcome)
    if problem is not None:
        click.echo(f"redline land: {problem}", err=True)
        sys.exit(1)


def _close(repo: Path, handle: Any, layout: Any, name: str) -> bool:
    """Close the open session ``name`` (through its daemon when one runs); whether it was."""
    from redline.daemon.lifecycle import try_connect
    from redline.gitops import session as sessions

    session = sessions.find(layout, name)
    if session is None:
        return False
    client = try_connect(daemon_files(repo), timeout=30)
    if client is None:
        sessions.close_session(handle, layout, session, delete_branch=False, force=False)
        return True
    with client:
        client.call("session.close", {"name": name})
    return True


def _show_landed(outcome: dict[str, Any]) -> None:
    into, session = outcome["into"], outcome["session"]
    if outcome["status"] == "nothing":
        click.echo(f"nothing to land: {into} has every commit of redline/{session} already")
    else:
        count = len(outcome["commits"])
        edits = " ".join(outcome["edits"]) or "none"
        click.echo(
            f"landed session {session} on {into} ({outcome['mode']}): {count} commit(s), "
            f"edits {edits}"
        )
        click.echo(f"{into}: {outcome['previous'][:12]} -> {outcome['commit'][:12]}")
        if outcome["mode"] == "squash":
            click.echo(
                "the squash commit's note carries each edit's evidence: "
                f"`git notes --ref=redline show {outcome['commit'][:12]}`"
            )
        if outcome["worktree"]:
            click.echo(f"your worktree {outcome['worktree']} is up to date with it")
    if outcome.get("closed"):
        click.echo(f"closed session {session} (branch redline/{session} kept)")


@click.command("undo")
@repo_option
@click.argument("edit")
@click.option(
    "--session", default=None, help="The session of the edit (default: the one that has it)."
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def undo_command(repo: Path, edit: str, session: str | None, as_json: bool) -> None:
    """Take back one edit (its id, or its commit) with a new commit in its session.

    Refused, naming the lines, when a later edit changed the same lines.

    Exit status: 0 undone (or nothing left to undo), 1 refused.
    """
    name = session or _session_of(repo, edit)
    with daemon_client(repo) as client:
        result = client.call("undo", {"session": name, "edit": edit})
    if as_json:
        click.echo(json.dumps(result))
    elif result["status"] == "undone":
        [*_external, made] = result["commits"]
        click.echo(
            f"undid edit {result['edit']} (commit {result['commit'][:12]}) in session "
            f"{result['session']}: commit {made['commit'][:12]} (edit {made['edit']}) reverts "
            f"{', '.join(shown_path(p) for p in made['paths'])}"
        )
        for flag in result["flags"]:
            click.echo(f"flagged for review: {flag['reason']} (rule {flag['rule']})")
    else:
        click.echo(result["error"], err=True)
    if result.get("hint"):
        click.echo(result["hint"], err=True)
    sys.exit(0 if result["status"] in ("undone", "no_change") else 1)


def _session_of(repo: Path, edit: str) -> str:
    """The open session that has ``edit`` (the only open one, when that is all there is)."""
    from redline.cli._repository import open_repository
    from redline.gitops import session as sessions
    from redline.gitops.errors import SessionError
    from redline.gitops.undo import find_edit

    handle, layout = open_repository(repo)
    found = sessions.all_sessions(layout)
    if len(found) == 1:
        return found[0].name
    for candidate in found:
        try:
            find_edit(handle, candidate, edit)
        except SessionError:
            continue
        return candidate.name
    names = ", ".join(s.name for s in found)
    if not found:
        raise SessionError("no session is open; `redline session list` shows the open ones")
    raise click.UsageError(f"no open session has edit {edit!r}; name it with --session ({names})")
