"""Installing the guard as plain git hooks (pre-commit, pre-merge-commit, pre-push), and
the reference-transaction hook that merges a fetch's redline notes as it lands.

As pre-commit does: a small script that runs redline, an ID line to recognise
our own script, an existing hook kept as ``<hook>.legacy`` and run first, and
the hooks directory of the common git dir so that every worktree is guarded.
"""

from __future__ import annotations

import os
from pathlib import Path

import pygit2

from redline.engine.errors import RedlineError
from redline.fsops.atomic import replace_file
from redline.gitops.notes_sync import SYNCING
from redline.gitops.repo import common_dir

MARKER = "redline-guard-hook-v1"
GUARD_HOOKS = ("pre-commit", "pre-merge-commit", "pre-push")
NOTES_HOOK = "reference-transaction"
HOOKS = (*GUARD_HOOKS, NOTES_HOOK)

TEMPLATE = """#!/bin/sh
# {marker}: installed by `redline hooks install`; `redline hooks uninstall` removes it.
# Refuses commits and pushes that carry unapproved flagged redline edits.
hook={hook}
here=$(cd "$(dirname "$0")" && pwd)
python={python}
if [ "$hook" = pre-push ]; then
    input=$(cat)
fi
if [ -x "$here/$hook.legacy" ]; then
    if [ "$hook" = pre-push ]; then
        printf '%s\\n' "$input" | "$here/$hook.legacy" "$@" || exit $?
    else
        "$here/$hook.legacy" "$@" || exit $?
    fi
fi
if [ -x "$python" ]; then
    set -- "$python" -m redline guard --stage "$hook" "$@"
else
    set -- redline guard --stage "$hook" "$@"
fi
if [ "$hook" = pre-push ]; then
    printf '%s\\n' "$input" | "$@"
else
    exec "$@" </dev/null
fi
"""


# git runs it for every ref update: the shell alone decides, and only a transaction
# that brought another clone's notes (fetched into refs/notes/redline-remote/) starts
# redline, once it is committed, to merge them into refs/notes/redline by union.
NOTES_TEMPLATE = """#!/bin/sh
# {marker}: installed by `redline hooks install`; `redline hooks uninstall` removes it.
# After a fetch brings another clone's redline notes, merges them into refs/notes/redline.
here=$(cd "$(dirname "$0")" && pwd)
python={python}
input=$(cat)
if [ -x "$here/{hook}.legacy" ]; then
    printf '%s\\n' "$input" | "$here/{hook}.legacy" "$@" || exit $?
fi
[ "$1" = committed ] || exit 0
# `redline notes sync` (run by the pre-push hook too) merges what its own fetch brings
[ -z "${syncing}" ] || exit 0
case "$input" in
    *" refs/notes/redline-remote/"*) ;;
    *) exit 0 ;;
esac
if [ -x "$python" ]; then
    set -- "$python" -m redline notes import --quiet
else
    set -- redline notes import --quiet
fi
if ! "$@" </dev/null; then
    echo "redline: could not merge the fetched notes; run \\`redline notes import\\`" >&2
fi
exit 0
"""


class InstallError(RedlineError):
    pass


def hooks_dir(repo: pygit2.Repository, use_hooks_path: bool) -> Path:
    """Where git looks for hooks; refuse core.hooksPath unless asked to use it."""
    try:
        configured = repo.config["core.hooksPath"]
    except KeyError:
        configured = None
    if configured:
        path = Path(os.path.expanduser(str(configured)))
        if not path.is_absolute():
            path = Path(repo.workdir or common_dir(repo)) / path
        if not use_hooks_path:
            raise InstallError(
                f"core.hooksPath is set ({configured}), so git runs hooks from {path}, not "
                "from .git/hooks (another hook manager may own it). Re-run with --hooks-path "
                "to install there, or unset core.hooksPath"
            )
        return path
    return common_dir(repo) / "hooks"


def is_ours(path: Path) -> bool:
    try:
        return MARKER in path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def install(
    repo: pygit2.Repository,
    python: str,
    use_hooks_path: bool = False,
    hooks: tuple[str, ...] = HOOKS,
) -> list[str]:
    """Install ``hooks`` (default: the guard's three and the notes merge); return what
    was done, one line per hook."""
    folder = hooks_dir(repo, use_hooks_path)
    folder.mkdir(parents=True, exist_ok=True)
    done = []
    for hook in hooks:
        path = folder / hook
        legacy = folder / f"{hook}.legacy"
        note = "installed"
        if path.exists() and not is_ours(path):
            if legacy.exists():
                raise InstallError(
                    f"{path} is not redline's and {legacy} already exists; merge them by "
                    "hand, then run `redline hooks install` again"
                )
            os.replace(path, legacy)
            note = f"installed; the existing hook runs first as {legacy.name}"
        elif path.exists():
            note = "updated"
        # In one step: git may run the hook at any moment, never a half-written one.
        template = NOTES_TEMPLATE if hook == NOTES_HOOK else TEMPLATE
        script = template.format(marker=MARKER, hook=hook, python=_quote(python), syncing=SYNCING)
        replace_file(path, script.encode(), 0o777)
        done.append(f"{hook}: {note} ({path})")
    return done


def uninstall(repo: pygit2.Repository, use_hooks_path: bool = False) -> list[str]:
    folder = hooks_dir(repo, use_hooks_path)
    done = []
    for hook in HOOKS:
        path = folder / hook
        legacy = folder / f"{hook}.legacy"
        if not is_ours(path):
            continue
        path.unlink()
        if legacy.exists():
            os.replace(legacy, path)
            done.append(f"{hook}: removed; the previous hook is restored")
        else:
            done.append(f"{hook}: removed")
    return done


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"
