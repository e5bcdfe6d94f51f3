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


def _policy(repo: pygit2.Repository) -> Policy:
    """HEAD's policy (what ``redline review`` judges by)."""
    from redline.hooks.config import policy_from_tree

    return policy_from_tree(repo, _head_tree(repo))


def _judging_policy(repo: pygit2.Repository, change: stages.Change) -> Policy:
    """What a commit or push is judged by: HEAD's policy, the policy it starts from and
    the one it brings, joined — a change can add rules but not take one away, so an
    agent's unapproved edit of the policy cannot weaken the judgement of the change
    that carries it. A side whose policy is broken is left out (otherwise "fix the
    file and retry" could never get past the hook)."""
    from redline.hooks.config import stricter_policy

    label = change.label if change.label.startswith("the ") else f"the {change.label}"
    return stricter_policy(
        repo,
        [
            (_head_tree(repo), "in HEAD"),
            (change.parent, f"before {label}"),
            (change.new, f"in {label}"),
        ],
    )


def _head_tree(repo: pygit2.Repository) -> pygit2.Tree | None:
    import pygit2

    return None if repo.head_is_unborn else repo.head.peel(pygit2.Commit).tree


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
    from redline.hooks.evidence import missing_evidence
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
        merging = [
            name.removeprefix("GITHEAD_") for name in os.environ if name.startswith("GITHEAD_")
        ]
        changes = [stages.commit_change(repo, index_path, stages.amending(), merging)]
    committing = stage != "pre-push" and not (from_ref and to_ref)
    for change, error in _broken_policies(repo, changes):
        click.echo(describe_broken_policy(error, change.label, committing), err=True)
        sys.exit(1)
    entries = ledger.load(repo)
    found = []
    unreadable = []
    missing = []
    for change in changes:
        policy = _judging_policy(repo, change)
        found += blocked(repo, entries, policy, change.parent, change.new)
        unreadable += unreadable_notes(repo, entries, change.parent, change.new)
        brought = stages.brought(repo, change)
        missing += missing_evidence(repo, entries, brought, change.parent, change.new)
    if found or unreadable or missing:
        again = "commit" if committing else "push"
        message = describe(found, dict.fromkeys(unreadable), dict.fromkeys(missing), again)
        click.echo(message, err=True)
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
        for commit in item.unnoted:
            click.echo(
                f"  commit {commit[:12]} had no evidence note: a new note records that the "
                "evidence was missing and this approval"
            )


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
        lines = f"lines {item['start_line']}-{item['end_line']} " if item["start_line"] else ""
        how = (
            f"{item['match_type']} {item['confidence']:g}"
            if item["match_type"] is not None and item["confidence"] is not None
            else item.get("op") or item["rule"]
        )
        click.secho(
            f"edit {item['edit']} (commit {item['commit'][:12]}): {item['path']} {lines}{how}",
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
