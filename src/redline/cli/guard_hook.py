"""``redline guard`` as a git hook runs it (pre-commit, pre-merge-commit, pre-push):
refuse a commit or push that carries an unapproved flagged edit.

It runs in every commit's hook, so it starts without click (``redline.cli.main``
reads ``--stage`` itself) and loads what judging needs, nothing more; ``redline
guard --range`` and the command's help are ``redline.cli.guard``'s.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from redline.cli.boundary import SettingError, echo, say
from redline.engine.errors import RedlineError

if TYPE_CHECKING:
    import pygit2

    from redline.hooks import stages
    from redline.settings.policy import PolicyError

STAGES = ("pre-commit", "pre-merge-commit", "pre-push")


def run_hook(stage: str, hook_args: tuple[str, ...]) -> int:
    """Judge what the hook of ``stage`` is about to commit or push (``hook_args``: git's
    arguments to the hook); the exit code: 0 lets it through, 1 refuses it."""
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
        echo(describe_broken_policy(error, change.label, not pushing))
        return 1
    found = judge(repo, ledger.load(repo), changes)
    if not found.ok:
        again = "push" if pushing else "commit"
        said = describe(
            found.blocked, found.unreadable, found.missing, again, found.mismatched, found.ignored
        )
        echo(said)
        return 1
    if remote:
        return _push_notes(repo, remote)
    return 0


def evidence_repo(path: Path) -> pygit2.Repository:
    """The repository around ``path``, with the notes fetched from remotes merged in
    (gitops.notes_sync): every command here reads the evidence."""
    from redline.gitops.notes_sync import import_fetched
    from redline.gitops.repo import discover

    repo = discover(path)
    import_fetched(repo)
    return repo


def _broken_policies(
    repo: pygit2.Repository, changes: list[stages.Change]
) -> list[tuple[stages.Change, PolicyError]]:
    """The changes whose new tree holds a policy that does not parse or validate: the
    guard refuses them, or the next agent edit would meet a policy it cannot read."""
    from redline.settings.policy import PolicyError, policy_from_tree

    out = []
    for change in changes:
        try:
            policy_from_tree(repo, change.new)
        except PolicyError as exc:
            out.append((change, exc))
    return out


def _framework_remote() -> str | None:
    """The remote pre-commit's pre-push stage pushes to (None when it pushes notes itself,
    or runs outside a push: ``pre-commit run --from-ref/--to-ref``)."""
    if os.environ.get("PRE_COMMIT_REMOTE_BRANCH", "").startswith("refs/notes/"):
        return None
    return os.environ.get("PRE_COMMIT_REMOTE_NAME") or None


def _push_notes(repo: pygit2.Repository, remote: str) -> int:
    """After a push passed the guard: the evidence goes to the remote with it."""
    from redline.gitops.notes_sync import push_needed, sync
    from redline.hooks.stages import dry_run

    if _config_false(repo, "redline.pushNotes") or dry_run() or not push_needed(repo, remote):
        return 0
    try:
        done = sync(repo, remote)
    except RedlineError as exc:
        echo(
            f"redline guard: refused — the evidence notes could not go with the push: {exc}\n"
            "Without them the pushed edit commits count as unapproved on every other clone "
            '("evidence missing"). Fix that and push again; or, if this remote must not '
            "take notes, `git config redline.pushNotes false` and share refs/notes/redline "
            "another way."
        )
        return 1
    say(done.describe())
    return 0


def _config_false(repo: pygit2.Repository, key: str) -> bool:
    try:
        return str(repo.config[key]).strip().lower() in ("false", "no", "off", "0")
    except KeyError:
        return False
