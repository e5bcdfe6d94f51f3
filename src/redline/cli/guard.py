"""``redline guard``, ``redline approve``, ``redline hooks`` (``redline review``: cli.review)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from redline.cli.boundary import SettingError
from redline.cli.guard_hook import STAGES, evidence_repo
from redline.cli.options import repo_option

if TYPE_CHECKING:
    import pygit2

    from redline.engine.policy import Policy
    from redline.hooks.ledger import Ledger


def head_policy(repo: pygit2.Repository, ledger: Ledger) -> Policy:
    """HEAD's policy, with what unapproved agent edits of it took away (hooks.mainline):
    what ``redline review`` judges by."""
    from redline.hooks.gate import head_tree
    from redline.hooks.mainline import guarded_policy

    return guarded_policy(repo, ledger, [(head_tree(repo), "in HEAD")])


@click.command("guard")
@click.option("--stage", type=click.Choice(STAGES), default="pre-commit", show_default=True)
@click.option(
    "--range",
    "spec",
    metavar="BASE..HEAD",
    help="Check the commits of a range, as pre-push checks a push (for CI).",
)
@click.option("--json", "as_json", is_flag=True, help="With --range: the verdict as JSON.")
@click.option(
    "--format",
    "form",
    type=click.Choice(["text", "json", "github"]),
    default=None,
    help="With --range: text (default), json (as --json), or github: GitHub Actions "
    "annotations per flagged edit, and a Markdown summary to $GITHUB_STEP_SUMMARY.",
)
@click.option(
    "--summary",
    "summary_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="With --format github: append the Markdown summary to this file "
    "(default: $GITHUB_STEP_SUMMARY).",
)
@click.option(
    "--verify",
    is_flag=True,
    help="With --range: run each agent edit's recorded request again on its commit's parent "
    "and refuse a note it does not reproduce.",
)
@click.argument("hook_args", nargs=-1)
def guard_command(
    stage: str,
    spec: str | None,
    as_json: bool,
    form: str | None,
    summary_file: Path | None,
    verify: bool,
    hook_args: tuple[str, ...],
) -> None:
    """The hook entry point: refuse a commit or push carrying unapproved flagged edits.

    With --range BASE..HEAD (a CI job): check every commit of the range; exit 1
    when one carries an unapproved flagged edit or lacks its evidence, and end
    with a one-line summary.
    """
    if as_json and form not in (None, "json"):
        raise click.UsageError(f"--json and --format {form} ask for two outputs; give one")
    form = "json" if as_json else form
    if spec is not None:
        _guard_range(spec, form or "text", summary_file, verify)
        return
    if form is not None or summary_file is not None or verify:
        raise click.UsageError(
            "--json, --format, --summary and --verify go with --range BASE..HEAD"
        )
    from redline.cli.guard_hook import run_hook

    sys.exit(run_hook(stage, hook_args))


def _guard_range(spec: str, form: str, summary_file: Path | None, verify: bool) -> None:
    from redline.hooks import ledger
    from redline.hooks.gate import check_range, parse_range
    from redline.hooks.guard import describe
    from redline.hooks.reproduce import recorded_request

    base, head = parse_range(spec)
    repo = evidence_repo(Path(os.environ.get("GIT_DIR") or "."))
    entries = ledger.load(repo)
    source = recorded_request if verify else None
    verdict = check_range(repo, entries, base, head, source)
    found = verdict.findings
    if form == "json":
        click.echo(json.dumps(verdict.to_json(spec)))
    elif form == "github":
        from redline.hooks import ci_report

        items = ci_report.flagged_in_range(repo, entries, verdict, head_policy(repo, entries))
        others = ""
        if found.missing or found.unreadable or found.mismatched:
            again = "push the notes (`redline notes sync`), then run the check"
            others = describe([], found.unreadable, found.missing, again, found.mismatched)
        for line in ci_report.commands(items, others):
            click.echo(line)
        click.echo(verdict.summary(spec))
        target = summary_file or (
            Path(os.environ["GITHUB_STEP_SUMMARY"])
            if os.environ.get("GITHUB_STEP_SUMMARY")
            else None
        )
        if target is not None:
            try:
                with target.open("a", encoding="utf-8") as out:
                    out.write(ci_report.markdown(items, verdict.summary(spec)))
            except OSError as exc:
                raise SettingError(
                    f"cannot append the Markdown summary to {target}: {exc.strerror or exc}; "
                    "check --summary or $GITHUB_STEP_SUMMARY"
                ) from None
    else:
        if found.missing:
            click.echo(
                "evidence missing: fetch refs/notes/redline before the check (`git fetch origin "
                "'+refs/notes/*:refs/notes/*'`); notes never pushed are pushed from the clone "
                "that made them (`redline notes sync`)"
            )
        if not found.ok:
            again = "push the notes (`redline notes sync`), then run the check"
            click.echo(
                describe(
                    found.blocked,
                    found.unreadable,
                    found.missing,
                    again,
                    found.mismatched,
                    found.ignored,
                    found.unreproduced,
                )
            )
        click.echo(verdict.summary(spec))
    if not found.ok:
        sys.exit(1)


@click.command("approve")
@repo_option
@click.argument("edits", nargs=-1, required=True)
def approve_command(repo: Path, edits: tuple[str, ...]) -> None:
    """Approve flagged edits (an edit id, or the commit that carries it)."""
    from redline.hooks.approve import approve

    done = approve(evidence_repo(repo), list(edits))
    for item in done:
        if item.status == "not flagged":
            click.echo(f"edit {item.edit}: nothing to approve — {item.why}")
            continue
        if item.status == "already":
            click.echo(
                f"edit {item.edit} was already approved by {item.by} (at {item.at}); "
                "a second approval adds nothing"
            )
            continue
        signed = f", signed with {item.signed}" if item.signed else ""
        click.echo(f"approved edit {item.edit} ({len(item.commits)} note(s)) as {item.by}{signed}")
        if item.why:
            click.echo(f"  note: {item.why}")
        for commit in item.unnoted:
            click.echo(
                f"  commit {commit[:12]} had no evidence note: a new note records that the "
                "evidence was missing and this approval"
            )


@click.group("hooks")
def hooks_group() -> None:
    """Install the guard as plain git hooks (or use .pre-commit-hooks.yaml with pre-commit)."""


@hooks_group.command("install")
@repo_option
@click.option("--hooks-path", is_flag=True, help="Install into core.hooksPath when it is set.")
def install_command(repo: Path, hooks_path: bool) -> None:
    """Install pre-commit, pre-merge-commit and pre-push hooks that run `redline guard`."""
    from redline.gitops.notes_sync import setup
    from redline.hooks.install import install

    git = evidence_repo(repo)
    done = install(git, sys.executable, hooks_path)
    for line in done:
        click.echo(line)
    for line in setup(git) or [_NO_REMOTE]:
        click.echo(f"notes: {line}")


_NO_REMOTE = (
    "no remote yet; the first push through the pre-push hook sets it up to fetch "
    "refs/notes/redline (or run `redline notes setup` after `git remote add`)"
)


@hooks_group.command("uninstall")
@repo_option
@click.option("--hooks-path", is_flag=True, help="Uninstall from core.hooksPath when it is set.")
def uninstall_command(repo: Path, hooks_path: bool) -> None:
    """Remove redline's hooks, restoring any hook they had set aside."""
    from redline.hooks.install import uninstall

    done = uninstall(evidence_repo(repo), hooks_path)
    for line in done or ["no redline hooks were installed"]:
        click.echo(line)
