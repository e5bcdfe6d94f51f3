"""``redline notes``: the evidence (``refs/notes/redline``) shared through a remote."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from redline.cli.options import repo_option

if TYPE_CHECKING:
    import pygit2


@click.group("notes")
def notes_group() -> None:
    """Share the evidence notes through a remote (fetched and pushed with the code)."""


@notes_group.command("setup")
@repo_option
@click.argument("remotes", nargs=-1)
def setup_command(repo: Path, remotes: tuple[str, ...]) -> None:
    """Make `git fetch` bring refs/notes/redline from REMOTES (default: every remote).

    One time per clone, for pre-commit users (`redline hooks install` does it too).
    Also installs the reference-transaction hook that merges fetched notes into
    refs/notes/redline as the fetch lands, so `git log --notes=redline` shows them.
    """
    import sys

    from redline.gitops.notes_sync import setup
    from redline.gitops.repo import discover
    from redline.hooks.install import NOTES_HOOK, InstallError, install

    git = discover(repo)
    done = setup(git, list(remotes) or None)
    if not done:
        raise click.UsageError("this repository has no remote; `git remote add NAME URL` first")
    try:
        done += install(git, sys.executable, hooks=(NOTES_HOOK,))
    except InstallError as exc:
        done.append(
            f"{NOTES_HOOK}: not installed ({exc}); fetched notes are merged by the next "
            "redline command, or `redline notes import`"
        )
    for line in done:
        click.echo(line)


@notes_group.command("import")
@repo_option
@click.option("--quiet", is_flag=True, help="Print nothing when all went well.")
def import_command(repo: Path, quiet: bool) -> None:
    """Merge the notes `git fetch` brought (refs/notes/redline-remote/*) into yours.

    By union: no approval or edit is lost on either side. Every redline command that
    reads notes does this first; the reference-transaction hook does it as a fetch lands.
    """
    from redline.gitops.notes_sync import import_fetched
    from redline.gitops.repo import discover

    merged = import_fetched(discover(repo))
    if quiet:
        return
    for name, outcome in merged:
        click.echo(f"{name}: {outcome.how}")
    if not merged:
        click.echo("nothing new: refs/notes/redline holds every fetched copy already")


@notes_group.command("sync")
@repo_option
@click.option("--no-push", is_flag=True, help="Only fetch the remote's notes and merge them.")
@click.argument("remote", required=False)
def sync_command(repo: Path, no_push: bool, remote: str | None) -> None:
    """Fetch REMOTE's notes, merge them into yours by union, and push the result.

    REMOTE defaults to the current branch's upstream remote, else origin.
    """
    from redline.gitops.notes_sync import import_fetched, sync
    from redline.gitops.repo import discover

    git = discover(repo)
    import_fetched(git)
    name = remote or _default_remote(git)
    click.echo(sync(git, name, push=not no_push).describe())


def _default_remote(repo: pygit2.Repository) -> str:
    from redline.gitops.notes_sync import remote_names

    names = remote_names(repo)
    if not repo.head_is_unborn and repo.head.name.startswith("refs/heads/"):
        try:
            upstream = repo.config[f"branch.{repo.head.shorthand}.remote"]
        except KeyError:
            upstream = None
        if upstream and upstream in names:
            return str(upstream)
    if "origin" in names:
        return "origin"
    if len(names) == 1:
        return names[0]
    raise click.UsageError(
        "name the remote to share notes with (`redline notes sync REMOTE`): "
        + (f"this repository has {', '.join(names)}" if names else "this repository has none")
    )
