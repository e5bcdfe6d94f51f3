"""Sessions: a branch ``redline/<name>`` checked out in a scratch worktree."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import pygit2

from redline.gitops import journal
from redline.gitops.errors import SessionError
from redline.gitops.repo import BRANCH_PREFIX, NOTES_REF, Layout

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")


@dataclass(frozen=True)
class Session:
    name: str
    branch: str  # full ref name
    worktree: str
    base: str  # commit id the session started from
    created: float

    @property
    def short_branch(self) -> str:
        return self.branch.removeprefix("refs/heads/")


def check_name(name: str) -> None:
    if not _NAME.fullmatch(name) or name.endswith((".lock", ".")) or ".." in name:
        raise SessionError(
            f"invalid session name {name!r}: use letters, digits, '.', '_' and '-' "
            "(up to 63 characters, starting with a letter or digit)"
        )


def new_name() -> str:
    return time.strftime("s-%Y%m%d-%H%M%S")


def _free_name(repo: pygit2.Repository, layout: Layout) -> str:
    """A default name no session, branch or worktree uses (``-2``, ``-3``… within a second)."""
    stem = new_name()
    name, n = stem, 1
    while (
        _meta_path(layout, name).exists()
        or f"refs/heads/{BRANCH_PREFIX}{name}" in repo.references
        or (layout.worktrees / name).exists()
    ):
        n += 1
        name = f"{stem}-{n}"
    return name


def _meta_path(layout: Layout, name: str) -> Path:
    return layout.sessions / f"{name}.json"


def load(layout: Layout, name: str) -> Session:
    check_name(name)
    try:
        data = json.loads(_meta_path(layout, name).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SessionError(
            f"no session named {name!r}; `redline session list` shows the open ones, "
            "`redline session open --name NAME` creates one"
        ) from None
    return Session(**data)


def all_sessions(layout: Layout) -> list[Session]:
    if not layout.sessions.is_dir():
        return []
    return [load(layout, p.stem) for p in sorted(layout.sessions.glob("*.json"))]


def open_session(
    repo: pygit2.Repository, layout: Layout, name: str | None, base: str | None
) -> Session:
    name = name or _free_name(repo, layout)
    check_name(name)
    layout.ensure()
    if _meta_path(layout, name).exists():
        raise SessionError(
            f"session {name!r} is already open; use it, or close it first "
            f"(`redline session close {name}`)"
        )
    branch = f"refs/heads/{BRANCH_PREFIX}{name}"
    if branch in repo.references:
        raise SessionError(
            f"branch {branch.removeprefix('refs/heads/')} already exists; pick another session "
            "name or delete that branch"
        )
    try:
        commit = repo.revparse_single(base or "HEAD").peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
        raise SessionError(
            f"cannot resolve {base or 'HEAD'!r} to a commit; give --base a branch, tag or "
            "commit (a repository needs at least one commit)"
        ) from None
    path = layout.worktrees / name
    if path.exists():
        raise SessionError(f"{path} already exists; remove it or pick another session name")
    ref = repo.branches.local.create(branch.removeprefix("refs/heads/"), commit)
    try:
        repo.add_worktree(_worktree_name(name), str(path), ref)
    except pygit2.GitError as exc:
        ref.delete()
        raise SessionError(f"cannot create the worktree at {path}: {exc}") from None
    _ensure_rewrite_ref(repo)
    session = Session(name, branch, str(path), str(commit.id), time.time())
    _meta_path(layout, name).write_text(json.dumps(asdict(session)), encoding="utf-8")
    return session


def _worktree_name(name: str) -> str:
    return f"redline-{name}"


def _ensure_rewrite_ref(repo: pygit2.Repository) -> None:
    """``notes.rewriteRef``: rebase and amend carry the evidence notes along."""
    config = repo.config
    try:
        values = list(config.get_multivar("notes.rewriteRef"))
    except (KeyError, pygit2.GitError):
        values = []
    if NOTES_REF not in values:
        config.set_multivar("notes.rewriteRef", "^$", NOTES_REF)


def is_dirty(session: Session) -> list[str]:
    """Paths in the worktree that differ from the branch (changes no commit has yet)."""
    worktree = pygit2.Repository(session.worktree)
    return sorted(worktree.status())


def is_merged(repo: pygit2.Repository, session: Session) -> bool:
    """Whether the session's work is reachable from the main HEAD (or there is none)."""
    try:
        tip = repo.references[session.branch].target
    except KeyError:
        return True
    if str(tip) == session.base:
        return True
    try:
        head = repo.head.target
    except pygit2.GitError:
        return False
    return bool(head == tip or repo.descendant_of(head, tip))


def close_session(
    repo: pygit2.Repository, layout: Layout, session: Session, delete_branch: bool, force: bool
) -> None:
    if not force:
        dirty = is_dirty(session) if Path(session.worktree).is_dir() else []
        if dirty:
            raise SessionError(
                f"session {session.name!r} has {len(dirty)} uncommitted change(s) in its worktree "
                f"({', '.join(dirty[:5])}); send them through an edit first, or pass --force "
                "to discard them"
            )
        if delete_branch and not is_merged(repo, session):
            raise SessionError(
                f"branch {session.short_branch} has edits that are not merged into HEAD; merge "
                "them, close without --delete-branch to keep the branch, or pass --force to "
                "drop them"
            )
    shutil.rmtree(session.worktree, ignore_errors=True)
    with contextlib.suppress(KeyError, pygit2.GitError):
        repo.lookup_worktree(_worktree_name(session.name)).prune(True)
    if delete_branch:
        with contextlib.suppress(KeyError):
            repo.references.delete(session.branch)
    _meta_path(layout, session.name).unlink(missing_ok=True)
    journal.path_for(layout.journal, session.name).unlink(missing_ok=True)
