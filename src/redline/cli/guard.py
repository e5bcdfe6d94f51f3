"""``redline guard``, ``redline approve``, ``redline review``, ``redline hooks``."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from redline.cli._connect import SettingError, repo_option

if TYPE_CHECKING:
    import pygit2

    from redline.engine.policy import Policy
    from redline.hooks import stages
    from redline.hooks.config import PolicyError

STAGES = ("pre-commit", "pre-merge-commit", "pre-push")


def _repo(path: Path) -> pygit2.Repository:
    from redline.gitops.repo import discover

    return discover(path)


def _policy(repo: pygit2.Repository, changes: tuple[stages.Change, ...] = ()) -> Policy:
    """HEAD's policy; when that one is broken, the one a commit or push repairing it brings
    (otherwise "fix the file and retry" could never get past the hook)."""
    from redline.hooks.config import PolicyError, policy_from_tree

    tree = None if repo.head_is_unborn else repo.head.peel().tree
    try:
        return policy_from_tree(repo, tree)
    except PolicyError as exc:
        for change in changes:
            try:
                return policy_from_tree(repo, change.new)
            except PolicyError:
                continue
        raise exc from None


def _broken_policies(
    repo: pygit2.Repository, changes: list[stages.Change]
) -> list[tuple[stages.Change, PolicyError]]:
    """The changes whose new tree holds a policy that does not parse or validate: the
    guard refuses them, or the next agent edit would meet a policy it cannot read."""
    from redline.hooks.config import PolicyError, policy_from_tree

    out = []
    for change in changes:
        try:
            policy_from_tree(repo, change.new)
        except PolicyError as exc:
            out.append((change, exc))
    return out


@click.command("guard")
@click.option("--stage", type=click.Choice(STAGES), default="pre-commit", show_default=True)
@click.argument("hook_args", nargs=-1)
def guard_command(stage: str, hook_args: tuple[str, ...]) -> None:
    """The hook entry point: refuse a commit or push carrying unapproved flagged edits."""
    from redline.hooks import ledger, stages
    from redline.hooks.guard import blocked, describe, describe_broken_policy, unreadable_notes

    # Git runs hooks at the top of the worktree, with GIT_DIR / GIT_INDEX_FILE set
    # for the repository and the index being committed.
    repo = _repo(Path(os.environ.get("GIT_DIR") or "."))
    from_ref = os.environ.get("PRE_COMMIT_FROM_REF")
    to_ref = os.environ.get("PRE_COMMIT_TO_REF")
    if from_ref and to_ref:  # pre-commit framework: pre-push stage, or run --from-ref/--to-ref
        change = stages.range_change(repo, from_ref, to_ref, "the push")
        if change is None and to_ref != stages.ZERO:
            raise SettingError(
                f"cannot resolve PRE_COMMIT_TO_REF {to_ref!r} to a commit of this repository; "
                "pass --to-ref a commit, branch or tag that exists here"
            )
        changes = [change] if change is not None else []
    elif stage == "pre-push":
        changes = stages.push_changes(repo, sys.stdin.read().splitlines())
    else:
        index_file = os.environ.get("GIT_INDEX_FILE")
        index_path = Path(index_file) if index_file else None
        if index_path is not None and not index_path.is_absolute():
            index_path = Path.cwd() / index_path
        changes = [stages.commit_change(repo, index_path, stages.amending())]
    committing = stage != "pre-push" and not (from_ref and to_ref)
    for change, error in _broken_policies(repo, changes):
        click.echo(describe_broken_policy(error, change.label, committing), err=True)
        sys.exit(1)
    policy = _policy(repo, tuple(changes))
    entries = ledger.load(repo)
    found = []
    unreadable = []
    for change in changes:
        found += blocked(repo, entries, policy, change.parent, change.new)
        unreadable += unreadable_notes(repo, entries, change.parent, change.new)
    if found or unreadable:
        click.echo(describe(found, dict.fromkeys(unreadable)), err=True)
        sys.exit(1)


@click.command("approve")
@repo_option
@click.argument("edits", nargs=-1, required=True)
def approve_command(repo: Path, edits: tuple[str, ...]) -> None:
    """Approve flagged edits (an edit id, or the commit that carries it)."""
    from redline.hooks.approve import approve

    done = approve(_repo(repo), list(edits))
    for item in done:
        click.echo(f"approved edit {item.edit} ({len(item.commits)} note(s)) as {item.by}")


@click.command("review")
@repo_option
@click.option("--json", "as_json", is_flag=True)
def review_command(repo: Path, as_json: bool) -> None:
    """List the flagged edits still waiting for approval, with their diffs."""
    from redline.hooks import ledger
    from redline.hooks.approve import waiting
    from redline.hooks.guard import Unreadable, describe_unreadable

    git = _repo(repo)
    entries = ledger.load(git)
    items = waiting(git, _policy(git), entries)
    unreadable = [Unreadable(c, why) for c, why in sorted(entries.unreadable.items())]
    if as_json:
        click.echo(json.dumps(items))
    elif items:
        _show_waiting(items)
    elif not unreadable:
        click.echo("nothing waiting: every flagged edit is approved")
    if unreadable:  # they may be flagged edits too: say so, and fail
        click.echo(describe_unreadable(unreadable, "redline review: "), err=True)
        sys.exit(1)


def _show_waiting(items: list[dict[str, Any]]) -> None:
    for item in items:
        lines = f"lines {item['start_line']}-{item['end_line']}" if item["start_line"] else ""
        click.secho(
            f"edit {item['edit']} (commit {item['commit'][:12]}): {item['path']} {lines} "
            f"{item['match_type']} {item['confidence']:g}",
            bold=True,
        )
        click.echo(f"  rule {item['rule']}: {item['reason']}")
        click.echo(item["diff"])
    click.echo("Approve with `redline approve EDIT...` once you have read each diff.")


@click.group("hooks")
def hooks_group() -> None:
    """Install the guard as plain git hooks (or use .pre-commit-hooks.yaml with pre-commit)."""


@hooks_group.command("install")
@repo_option
@click.option("--hooks-path", is_flag=True, help="Install into core.hooksPath when it is set.")
def install_command(repo: Path, hooks_path: bool) -> None:
    """Install pre-commit, pre-merge-commit and pre-push hooks that run `redline guard`."""
    from redline.hooks.install import install

    done = install(_repo(repo), sys.executable, hooks_path)
    for line in done:
        click.echo(line)


@hooks_group.command("uninstall")
@repo_option
@click.option("--hooks-path", is_flag=True, help="Uninstall from core.hooksPath when it is set.")
def uninstall_command(repo: Path, hooks_path: bool) -> None:
    """Remove redline's hooks, restoring any hook they had set aside."""
    from redline.hooks.install import uninstall

    done = uninstall(_repo(repo), hooks_path)
    for line in done or ["no redline hooks were installed"]:
        click.echo(line)
