"""``redline guard``, ``redline approve``, ``redline hooks`` (``redline review``: cli.review)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from redline.cli._connect import SettingError, repo_option
from redline.engine.errors import RedlineError

if TYPE_CHECKING:
    import pygit2

    from redline.engine.policy import Policy
    from redline.hooks import stages
    from redline.hooks.config import PolicyError
    from redline.hooks.ledger import Ledger

STAGES = ("pre-commit", "pre-merge-commit", "pre-push")


def evidence_repo(path: Path) -> pygit2.Repository:
    """The repository around ``path``, with the notes fetched from remotes merged in
    (gitops.notes_sync): every command here reads the evidence."""
    from redline.gitops.notes_sync import import_fetched
    from redline.gitops.repo import discover

    repo = discover(path)
    import_fetched(repo)
    return repo


def head_policy(repo: pygit2.Repository, ledger: Ledger) -> Policy:
    """HEAD's policy, with what unapproved agent edits of it took away (hooks.mainline):
    what ``redline review`` judges by."""
    from redline.hooks.gate import head_tree
    from redline.hooks.mainline import guarded_policy

    return guarded_policy(repo, ledger, [(head_tree(repo), "in HEAD")])


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
    from redline.hooks import ledger, stages
    from redline.hooks.gate import judge
    from redline.hooks.guard import describe, describe_broken_policy

    # Git runs hooks at the top of the worktree, with GIT_DIR / GIT_INDEX_FILE set
    # for the repository and the index being committed.
    repo = evidence_repo(Path(os.environ.get("GIT_DIR") or "."))
    from_ref = os.environ.get("PRE_COMMIT_FROM_REF")
    to_ref = os.environ.get("PRE_COMMIT_TO_REF")
    # pre-commit's pre-push stage names the remote; with no FROM_REF it pushes a
    # history from its root commit (PRE_COMMIT_LOCAL_BRANCH is what is pushed).
    framework_push = os.environ.get("PRE_COMMIT_LOCAL_BRANCH") if not from_ref else None
    remote = hook_args[0] if stage == "pre-push" and hook_args else None
    pushing = True
    if from_ref and to_ref:  # pre-commit framework: pre-push stage, or run --from-ref/--to-ref
        change = stages.range_change(repo, from_ref, to_ref, "the push")
        if change is None and to_ref != stages.ZERO:
            raise SettingError(
                f"cannot resolve PRE_COMMIT_TO_REF {to_ref!r} to a commit of this repository; "
                "pass --to-ref a commit, branch or tag that exists here"
            )
        changes = [change] if change is not None else []
        remote = _framework_remote()
    elif framework_push and os.environ.get("PRE_COMMIT_REMOTE_NAME"):
        change = stages.range_change(repo, None, framework_push, "the push")
        changes = [change] if change is not None else []
        remote = _framework_remote()
    elif stage == "pre-push":
        lines = sys.stdin.read().splitlines()
        changes = stages.push_changes(repo, lines)
        if any(len(p) == 4 and p[2].startswith("refs/notes/") for p in map(str.split, lines)):
            remote = None  # the push carries notes itself: leave them to it
    else:
        index_file = os.environ.get("GIT_INDEX_FILE")
        index_path = Path(index_file) if index_file else None
        if index_path is not None and not index_path.is_absolute():
            index_path = Path.cwd() / index_path
        merging = [
            name.removeprefix("GITHEAD_") for name in os.environ if name.startswith("GITHEAD_")
        ]
        changes = [stages.commit_change(repo, index_path, stages.amending(), merging)]
        pushing = False
    for change, error in _broken_policies(repo, changes):
        click.echo(describe_broken_policy(error, change.label, not pushing), err=True)
        sys.exit(1)
    found = judge(repo, ledger.load(repo), changes)
    if not found.ok:
        again = "push" if pushing else "commit"
        said = describe(
            found.blocked, found.unreadable, found.missing, again, found.mismatched, found.ignored
        )
        click.echo(said, err=True)
        sys.exit(1)
    if remote:
        _push_notes(repo, remote)


def _framework_remote() -> str | None:
    """The remote pre-commit's pre-push stage pushes to (None when it pushes notes itself,
    or runs outside a push: ``pre-commit run --from-ref/--to-ref``)."""
    if os.environ.get("PRE_COMMIT_REMOTE_BRANCH", "").startswith("refs/notes/"):
        return None
    return os.environ.get("PRE_COMMIT_REMOTE_NAME") or None


def _push_notes(repo: pygit2.Repository, remote: str) -> None:
    """After a push passed the guard: the evidence goes to the remote with it."""
    from redline.gitops.notes_sync import push_needed, sync
    from redline.hooks.stages import dry_run

    if _config_false(repo, "redline.pushNotes") or dry_run() or not push_needed(repo, remote):
        return
    try:
        done = sync(repo, remote)
    except RedlineError as exc:
        click.echo(
            f"redline guard: refused — the evidence notes could not go with the push: {exc}\n"
            "Without them the pushed edit commits count as unapproved on every other clone "
            '("evidence missing"). Fix that and push again; or, if this remote must not '
            "take notes, `git config redline.pushNotes false` and share refs/notes/redline "
            "another way.",
            err=True,
        )
        sys.exit(1)
    click.echo(f"redline: {done.describe()}", err=True)


def _config_false(repo: pygit2.Repository, key: str) -> bool:
    try:
        return str(repo.config[key]).strip().lower() in ("false", "no", "off", "0")
    except KeyError:
        return False


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
