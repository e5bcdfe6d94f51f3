"""``redline demo``: what a team sees, on a throwaway repository.

A session gets an exact and a tolerant edit; each request the agent sent is
shown beside what redline found in the file, with the difference it tolerated
named. Then plain git, through the guard hooks ``redline hooks install`` puts
in place: a squash merge whose commit is refused, the evidence note as ``git
log --notes=redline`` shows it, ``redline review`` and the approval, the same
commit passing; and ``redline land`` bringing the session onto ``main``.
redline's own commands run as a person runs them (``python -m redline``), so
what is shown is what they print. Git runs with no global or system
configuration, so the user's own settings cannot change the story.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from redline.cli.beside import beside
from redline.engine.confidence import shown_confidence

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

FILES = {"app/greet.py": SAMPLE, ".redline.toml": POLICY}

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
    """Show redline end to end on a throwaway repository, as a team sees it."""
    from redline.daemon.lifecycle import stop

    root = Path(tempfile.mkdtemp(prefix="redline-demo-"))
    repo_dir = root / "repo"
    env = _git_env(os.environ)
    try:
        _make_repository(repo_dir, env)
        _run(repo_dir, env)
    finally:
        from redline.cli._connect import daemon_files

        stop(daemon_files(repo_dir))
        if keep:
            click.echo(f"\nKept {repo_dir}")
        else:
            shutil.rmtree(root, ignore_errors=True)


def _git_env(environ: Mapping[str, str]) -> dict[str, str]:
    """git with the demo's identity and no global or system configuration (a user's
    ``core.hooksPath`` or commit signing would change what the demo shows)."""
    from redline.gitops.gitenv import without_git_redirects

    env = without_git_redirects(environ)
    env.pop("GIT_CONFIG_SYSTEM", None)
    env.update(GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    return env


def _git(repo: Path, env: Mapping[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args], cwd=repo, env=dict(env), capture_output=True, text=True, timeout=120
    )


def _make_repository(path: Path, env: Mapping[str, str]) -> None:
    path.mkdir(parents=True)
    for name, text in FILES.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text, encoding="utf-8")
    for args in (
        ("init", "-q", "-b", "main"),
        ("config", "user.name", "redline demo"),
        ("config", "user.email", "demo@redline.invalid"),
        ("add", "-A"),
        ("commit", "-q", "-m", "A small project"),
    ):
        done = _git(path, env, *args)
        if done.returncode != 0:
            raise click.ClickException(
                f"git {' '.join(args)} failed in the demo repository: {done.stderr.strip()}; "
                "the demo needs git on the PATH"
            )


def _run(repo_dir: Path, env: Mapping[str, str]) -> None:
    from redline.cli._connect import daemon_client

    click.secho(f"Throwaway repository: {repo_dir}", bold=True)
    click.echo("(removed at the end; `redline demo --keep` keeps it to look around)")
    click.echo("Policy (.redline.toml): edits under app/ must match exactly, or be reviewed.")
    click.secho("\n== Install the guard as git hooks", bold=True)
    _redline(repo_dir, env, "hooks", "install")
    click.secho("\n== Open a session for the agent", bold=True)
    _redline(repo_dir, env, "session", "open", "--name", "demo")
    flagged = []
    with daemon_client(repo_dir, idle=60) as client:
        for number, request in enumerate((EXACT, TOLERANT), start=1):
            result = client.call("apply", {"session": "demo", "request": request, "full": True})
            _show(number, request, result)
            if result.get("flags"):
                flagged += [c["edit"] for c in result.get("commits", [])]
    click.secho("\n== The session's edits and their evidence", bold=True)
    _redline(repo_dir, env, "log", "demo")
    _team(repo_dir, env, flagged)


def _show(number: int, request: dict[str, str], result: dict[str, Any]) -> None:
    click.secho(
        f"\n== Request {number}: the agent sends an edit of {request['path']} "
        "(`redline apply --session demo`)",
        bold=True,
    )
    matches = result.get("matches") or []
    found = matches[0]["matched_text"] if matches else ""
    where = f"lines {matches[0]['start_line']}-{matches[0]['end_line']}" if matches else "nothing"
    for line in beside(request["old_string"], found, where):
        click.echo(line)
    click.echo(
        f"redline: {result['status']}, match_type {result['match_type']}, "
        f"confidence {shown_confidence(result['confidence'])}"
    )
    for said in result.get("tolerated") or [{"text": "nothing (an exact match)"}]:
        click.echo(f"tolerated: {said['text']}")
    for commit in result.get("commits", []):
        click.echo(f"commit {commit['commit'][:12]} (edit {commit['edit']}, {commit['source']})")
    for flag in result.get("flags", []):
        click.echo(f"flagged for review: {flag['reason']} (rule {flag['rule']})")
    if result.get("error"):
        click.echo(result["error"])
    click.echo("written in the file's own style:")
    click.echo(result.get("diff") or "")


def _team(repo_dir: Path, env: Mapping[str, str], flagged: list[str]) -> None:
    """Plain git through the installed hooks, review and approval, then ``redline land``
    (redline's commands run as a person runs them: their own output is shown)."""
    subject = "Greeting tweaks"
    click.secho("\n== Plain git on a branch of your own, through the installed hooks", bold=True)
    for args in (("switch", "-q", "-c", "try"), ("merge", "-q", "--squash", "redline/demo")):
        click.echo(f"$ git {' '.join(args)}")
        _git(repo_dir, env, *args)
    click.echo(f'$ git commit -m "{subject}"')
    refused = _git(repo_dir, env, "commit", "-q", "-m", subject)
    click.echo((refused.stderr or refused.stdout).rstrip())
    click.echo(f"(git exit status {refused.returncode}: nothing was committed)")

    click.secho("\n== The evidence: git log --notes=redline -1 redline/demo", bold=True)
    shown = _git(repo_dir, env, "log", "--notes=redline", "-1", "redline/demo")
    click.echo(shown.stdout.rstrip())

    click.secho("\n== A person reviews the flagged edit's diff and approves it", bold=True)
    _redline(repo_dir, env, "review")
    _redline(repo_dir, env, "approve", *flagged)
    click.echo(f'$ git commit -m "{subject}"')
    passed = _git(repo_dir, env, "commit", "-m", subject)
    click.echo((passed.stdout or passed.stderr).strip().splitlines()[0])
    click.echo(f"(git exit status {passed.returncode})")

    click.secho("\n== Land the session on main (checked out and clean) as one commit", bold=True)
    click.echo("$ git switch -q main")
    _git(repo_dir, env, "switch", "-q", "main")
    _redline(repo_dir, env, "land", "demo", "--squash", "-m", subject)
    click.echo("$ git log --format='%h %s%n%(trailers)' -1 main")
    click.echo(
        _git(repo_dir, env, "log", "--format=%h %s%n%(trailers)", "-1", "main").stdout.rstrip()
    )
    click.echo("$ git notes --ref=redline show main   (each edit it carries, summarised)")
    _squash_note(_git(repo_dir, env, "notes", "--ref=redline", "show", "main").stdout)


def _redline(repo_dir: Path, env: Mapping[str, str], *args: str) -> None:
    """Run ``redline ARGS`` in the demo repository and show what it says."""
    done = subprocess.run(
        [sys.executable, "-m", "redline", *args],
        cwd=repo_dir,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=120,
    )
    click.echo(f"$ redline {shlex.join(args)}")
    click.echo((done.stdout + done.stderr).rstrip())
    if done.returncode != 0:
        raise click.ClickException(f"`redline {shlex.join(args)}` failed in the demo repository")


def _squash_note(text: str) -> None:
    """One line per edit a squash commit's note carries: where, how it matched, its
    verdict and approvals; then what it tolerated."""
    for entry in json.loads(text).get("squashed", []):
        approvals = ", ".join(a["by"] for a in entry.get("approvals", []))
        verdict = (entry.get("policy") or {}).get("verdict", "?")
        for op in entry.get("operations", []):
            click.echo(
                f"edit {entry['edit']}: {op['path']} lines {op['start_line']}-{op['end_line']}, "
                f"{op['match_type']} {shown_confidence(op['confidence'])}, {verdict}"
                + (f", approved by {approvals}" if approvals else "")
            )
            for said in op.get("tolerated") or []:
                click.echo(f"  tolerated: {said['text']}")
