"""``redline guard``, ``redline approve``, ``redline review``, ``redline hooks``."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from redline.cli._connect import SettingError, repo_option
from redline.engine.confidence import shown_confidence
from redline.engine.errors import RedlineError

if TYPE_CHECKING:
    import pygit2

    from redline.engine.policy import Policy
    from redline.hooks import stages
    from redline.hooks.config import PolicyError
    from redline.hooks.ledger import Ledger

STAGES = ("pre-commit", "pre-merge-commit", "pre-push")


def _repo(path: Path) -> pygit2.Repository:
    """The repository around ``path``, with the notes fetched from remotes merged in
    (gitops.notes_sync): every command here reads the evidence."""
    from redline.gitops.notes_sync import import_fetched
    from redline.gitops.repo import discover

    repo = discover(path)
    import_fetched(repo)
    return repo


def _policy(repo: pygit2.Repository, ledger: Ledger) -> Policy:
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
    "--verify",
    is_flag=True,
    help="With --range: run each agent edit's recorded request again on its commit's parent "
    "and refuse a note it does not reproduce.",
)
@click.argument("hook_args", nargs=-1)
def guard_command(
    stage: str, spec: str | None, as_json: bool, verify: bool, hook_args: tuple[str, ...]
) -> None:
    """The hook entry point: refuse a commit or push carrying unapproved flagged edits.

    With --range BASE..HEAD (a CI job): check every commit of the range; exit 1
    when one carries an unapproved flagged edit or lacks its evidence, and end
    with a one-line summary.
    """
    if spec is not None:
        _guard_range(spec, as_json, verify)
        return
    if as_json or verify:
        raise click.UsageError(
            f"{'--json' if as_json else '--verify'} goes with --range BASE..HEAD"
        )
    from redline.hooks import ledger, stages
    from redline.hooks.gate import judge
    from redline.hooks.guard import describe, describe_broken_policy

    # Git runs hooks at the top of the worktree, with GIT_DIR / GIT_INDEX_FILE set
    # for the repository and the index being committed.
    repo = _repo(Path(os.environ.get("GIT_DIR") or "."))
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


def _guard_range(spec: str, as_json: bool, verify: bool) -> None:
    from redline.hooks import ledger
    from redline.hooks.gate import check_range, parse_range
    from redline.hooks.guard import describe
    from redline.hooks.reproduce import recorded_request

    base, head = parse_range(spec)
    repo = _repo(Path(os.environ.get("GIT_DIR") or "."))
    source = recorded_request if verify else None
    verdict = check_range(repo, ledger.load(repo), base, head, source)
    found = verdict.findings
    if as_json:
        click.echo(json.dumps(verdict.to_json(spec)))
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

    done = approve(_repo(repo), list(edits))
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
    settled: list[str] = []
    policy = _policy(git, entries)
    signatures = None
    if policy.approvals == "signed":  # only approvals that verify count (hooks.signed)
        from redline.hooks.signed import for_review

        entries, signatures = for_review(git, entries)
    items = waiting(git, policy, entries, settled)
    unreadable = [Unreadable(c, why) for c, why in sorted(entries.unreadable.items())]
    if signatures is not None:
        for item in items:
            item["ignored_approvals"] = [
                {"by": i.by, "commit": i.commit, "reason": i.reason}
                for i in signatures.ignored
                if i.edit == item["edit"]
            ]
    if as_json:
        click.echo(json.dumps(items))
    elif items:
        _show_waiting(items)
    elif not unreadable:
        still = " still on a branch" if settled else ""
        click.echo(f"nothing waiting: every flagged edit{still} is approved")
    if signatures is not None and not as_json:
        for edit, who in sorted(signatures.signed.items()):
            click.echo(f"edit {edit}: approved, signed by {', '.join(who)}")
    if settled and not as_json:
        click.echo(_not_listed(settled))
    if unreadable:  # they may be flagged edits too: say so, and fail
        click.echo(describe_unreadable(unreadable, "redline review: "), err=True)
        sys.exit(1)


_NAMED = 10  # edits named in review's "not listed" line


def _not_listed(settled: list[str]) -> str:
    """Review's line about the flagged edits no branch holds any more."""
    one = len(settled) == 1
    named = " ".join(settled[:_NAMED]) + (
        f" and {len(settled) - _NAMED} more" if len(settled) > _NAMED else ""
    )
    return (
        f"not listed: {len(settled)} unapproved flagged edit{'' if one else 's'} no longer "
        f"on any branch, HEAD or the index (undone, or the lines removed since): {named}; "
        f"the guard lets {'it' if one else 'them'} pass, so "
        f"{'it needs' if one else 'they need'} no approval"
    )


def _show_waiting(items: list[dict[str, Any]]) -> None:
    from redline.engine.paths import safe_text, shown_path

    for item in items:
        lines = f"lines {item['start_line']}-{item['end_line']} " if item["start_line"] else ""
        how = (
            f"{item['match_type']} {shown_confidence(item['confidence'])}"
            if item["match_type"] is not None and item["confidence"] is not None
            else item.get("op") or item["rule"]
        )
        click.secho(
            f"edit {item['edit']} (commit {item['commit'][:12]}): {shown_path(item['path'])} "
            f"{lines}{how}",
            bold=True,
        )
        click.echo(safe_text(f"  rule {item['rule']}: {item['reason']}", keep=""))
        for ignored in item.get("ignored_approvals", []):
            said = f"  approval by {ignored['by']} ignored: {ignored['reason']}"
            click.echo(safe_text(said, keep=""))
        click.echo(safe_text(item["diff"]))
    click.echo("Approve with `redline approve EDIT...` once you have read each diff.")


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

    git = _repo(repo)
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

    done = uninstall(_repo(repo), hooks_path)
    for line in done or ["no redline hooks were installed"]:
        click.echo(line)
