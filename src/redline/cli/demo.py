"""``redline demo``: a throwaway repository, a session, an exact and a tolerant edit,
their commits and evidence, and the guard refusing the tolerant one until approved."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import click

SAMPLE = '''\
"""Greeting service."""

import logging

log = logging.getLogger(__name__)


def greet(name):
\t# Say “hello” to the user by name.
\tmessage = f"Hello, {name}!"
\treturn message


def farewell(name):
\treturn f"Goodbye, {name}."
'''

POLICY = """\
[guard]
action = "review"

[[guard.protect]]
paths = ["app/**"]
require = "exact"
"""

EXACT = {
    "tool": "edit",
    "path": "app/greet.py",
    "old_string": 'def farewell(name):\n\treturn f"Goodbye, {name}."\n',
    "new_string": 'def farewell(name, polite=True):\n\treturn f"Goodbye, {name}."\n',
}
# What a model typically sends: spaces for the file's tabs, straight quotes for
# curly ones. redline finds it, says how, and keeps the file's own style.
TOLERANT = {
    "tool": "edit",
    "path": "app/greet.py",
    "old_string": (
        'def greet(name):\n    # Say "hello" to the user by name.\n'
        '    message = f"Hello, {name}!"\n    return message\n'
    ),
    "new_string": (
        'def greet(name):\n    # Say "hello" to the user by name.\n'
        '    message = f"Hello, {name}!"\n'
        "    log.info('greeted %s', name)\n    return message\n"
    ),
}


@click.command("demo")
@click.option("--keep", is_flag=True, help="Keep the throwaway repository and print its path.")
def demo_command(keep: bool) -> None:
    """Show redline end to end on a throwaway repository."""
    from redline.daemon.lifecycle import stop

    root = Path(tempfile.mkdtemp(prefix="redline-demo-"))
    repo_dir = root / "repo"
    try:
        _make_repository(repo_dir)
        _run(repo_dir)
    finally:
        from redline.cli._connect import daemon_files

        stop(daemon_files(repo_dir))
        if keep:
            click.echo(f"\nKept {repo_dir}")
        else:
            shutil.rmtree(root, ignore_errors=True)


def _make_repository(path: Path) -> None:
    import pygit2

    repo = pygit2.init_repository(str(path), initial_head="main")
    repo.config["user.name"] = "redline demo"
    repo.config["user.email"] = "demo@redline.invalid"
    (path / "app").mkdir()
    (path / "app" / "greet.py").write_text(SAMPLE, encoding="utf-8")
    (path / ".redline.toml").write_text(POLICY, encoding="utf-8")
    repo.index.add_all()
    repo.index.write()
    tree = repo.index.write_tree()
    sig = repo.default_signature
    repo.create_commit("HEAD", sig, sig, "A small project", tree, [])


def _run(repo_dir: Path) -> None:
    from redline.cli._connect import daemon_client

    click.secho(f"Throwaway repository: {repo_dir}", bold=True)
    click.echo("Policy (.redline.toml): edits under app/ must match exactly, or be reviewed.")
    with daemon_client(repo_dir, idle=60) as client:
        session = client.call("session.open", {"name": "demo"})
        click.secho("\n== Session", bold=True)
        click.echo(f"branch {session['branch']}, worktree {session['worktree']}")
        for title, request in (("Exact edit", EXACT), ("Tolerant edit", TOLERANT)):
            result = client.call("apply", {"session": "demo", "request": request})
            _show(title, result)
        click.secho("\n== redline log demo", bold=True)
        for entry in client.call("log", {"session": "demo"}):
            click.echo(f"{entry['commit'][:12]} {entry['summary']}  [edit {entry['edit']}]")
    _guard(repo_dir)


def _show(title: str, result: dict[str, Any]) -> None:
    click.secho(f"\n== {title}: {result['status']}", bold=True)
    click.echo(f"match_type={result['match_type']} confidence={result['confidence']}")
    for match in result["matches"]:
        click.echo(f"lines {match['start_line']}-{match['end_line']}, matched_text:")
        click.echo("".join(f"  | {line}\n" for line in match["matched_text"].splitlines()))
    for commit in result.get("commits", []):
        click.echo(f"commit {commit['commit'][:12]} (edit {commit['edit']}, {commit['source']})")
    for flag in result.get("flags", []):
        click.echo(f"flagged for review: {flag['reason']} (rule {flag['rule']})")
    if result.get("error"):
        click.echo(result["error"])
    click.echo(result.get("diff") or "")


def _guard(repo_dir: Path) -> None:
    import pygit2

    from redline.hooks import ledger
    from redline.hooks.approve import approve
    from redline.hooks.config import policy_from_tree
    from redline.hooks.guard import blocked, describe

    repo = pygit2.Repository(str(repo_dir))
    main = repo.head.peel(pygit2.Commit).tree
    work = repo.revparse_single("redline/demo").peel(pygit2.Commit).tree
    policy = policy_from_tree(repo, main)
    click.secho("\n== redline guard, committing the session's work onto main", bold=True)
    found = blocked(repo, ledger.load(repo), policy, main, work)
    click.echo(describe(found) if found else "passes")
    click.secho(f"\n== redline approve {' '.join(b.edit for b in found)}", bold=True)
    for item in approve(repo, [b.edit for b in found]):
        click.echo(f"approved edit {item.edit} as {item.by}")
    again = blocked(repo, ledger.load(repo), policy, main, work)
    click.secho("\n== redline guard again", bold=True)
    click.echo(describe(again) if again else "passes: every flagged edit is approved")
