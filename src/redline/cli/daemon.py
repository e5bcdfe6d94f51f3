"""``redline daemon start|stop|status|run``."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import click

from redline.cli._connect import daemon_files
from redline.cli.options import repo_option


@click.group("daemon")
def daemon_group() -> None:
    """Manage the repository's background daemon (started on demand by other commands)."""


@daemon_group.command("start")
@repo_option
@click.option("--idle-timeout", type=float, default=None, help="Seconds idle before it exits.")
def start_command(repo: Path, idle_timeout: float | None) -> None:
    """Start the daemon in the background."""
    from redline.cli._connect import idle_timeout as resolve_idle
    from redline.daemon.lifecycle import start, status

    files = daemon_files(repo)
    if status(files).running:
        raise click.ClickException(
            f"a redline daemon is already running for {files.common}; "
            "`redline daemon status` shows it, `redline daemon stop` stops it"
        )
    current = start(files, repo, resolve_idle(idle_timeout), dict(os.environ))
    click.echo(f"redline daemon running (pid {current.pid}) on {current.socket}")


@daemon_group.command("stop")
@repo_option
def stop_command(repo: Path) -> None:
    """Stop the daemon (finishing the request it is working on)."""
    from redline.daemon.lifecycle import stop

    stopped = stop(daemon_files(repo))
    click.echo("redline daemon stopped" if stopped else "no redline daemon was running")


@daemon_group.command("status")
@repo_option
@click.option("--json", "as_json", is_flag=True, help="Print {running, pid, socket, repo}.")
def status_command(repo: Path, as_json: bool) -> None:
    """Say whether the daemon runs, and where."""
    from redline.daemon.lifecycle import status

    current = status(daemon_files(repo))
    if as_json:
        click.echo(json.dumps(current.to_dict()))
    elif current.running:
        click.echo(f"running (pid {current.pid}) on {current.socket} for {current.repo}")
    else:
        click.echo(f"not running for {current.repo} (it starts on demand)")


@daemon_group.command("run")
@repo_option
@click.option("--idle-timeout", type=float, default=None, help="Seconds idle before it exits.")
def run_command(repo: Path, idle_timeout: float | None) -> None:
    """Run the daemon in the foreground (for supervisors)."""
    from redline.cli._connect import idle_timeout as resolve_idle
    from redline.daemon.lifecycle import run

    fault_point = os.environ.get("REDLINE_FAULT")  # crash tests: die here, like kill -9

    def fault(point: str) -> None:
        if point == fault_point:
            os.kill(os.getpid(), signal.SIGKILL)

    run(
        repo,
        daemon_files(repo),
        resolve_idle(idle_timeout),
        fault if fault_point else None,
        env=os.environ,
    )
