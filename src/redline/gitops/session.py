"""Sessions: a branch ``redline/<name>`` checked out in a scratch worktree.

A session's record (``sessions/<name>.json`` in redline's state directory)
lives while it is open. Closing it removes the worktree; when the branch is
kept, the record moves to ``closed/<name>.json``, so that its history can still
be read (``redline log``) and opening a session of that name later resumes it:
a new worktree on the same branch, whose history continues.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

import pygit2

from redline.gitops import journal, notes
from redline.gitops.checkout import Checkout, CheckoutFailed, mark, marker, register
from redline.gitops.errors import SessionError
from redline.gitops.names import check_name
from redline.gitops.repo import BRANCH_PREFIX, NOTES_REF, Layout


@dataclass(frozen=True)
class Session:
    name: str
    branch: str  # full ref name
    worktree: str
    base: str  # commit id the session's history starts after
    created: float
    resumed: bool = False  # continues the branch of an earlier session of this name
    # The branch the session was opened from (its full ref name; None when it was opened
    # from a commit, a tag or a detached HEAD): the main line whose committed policy and
    # permissions govern the session's agent, never the files of its own worktree.
    origin: str | None = None

    @property
    def short_branch(self) -> str:
        return self.branch.removeprefix("refs/heads/")


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


def _closed_path(layout: Layout, name: str) -> Path:
    return layout.closed / f"{name}.json"


def _read(path: Path) -> Session | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    return Session(**data)


def _write(path: Path, session: Session) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(asdict(session)), encoding="utf-8")
    os.replace(tmp, path)


def find(layout: Layout, name: str) -> Session | None:
    """The open session called ``name``, or None."""
    check_name(name)
    return _read(_meta_path(layout, name))


def find_closed(layout: Layout, name: str) -> Session | None:
    """The record of the closed session called ``name`` (its branch was kept), or None."""
    check_name(name)
    return _read(_closed_path(layout, name))


def load(layout: Layout, name: str) -> Session:
    session = find(layout, name)
    if session is None:
        raise SessionError(
            f"no session named {name!r}; `redline session list` shows the open ones, "
            f"`redline session open --name {name}` creates it"
        )
    return session


def all_sessions(layout: Layout) -> list[Session]:
    if not layout.sessions.is_dir():
        return []
    return [load(layout, p.stem) for p in sorted(layout.sessions.glob("*.json"))]


def open_session(
    repo: pygit2.Repository,
    layout: Layout,
    name: str | None,
    base: str | None,
    *,
    background: bool = False,
) -> Session:
    """Open a session: a new branch from ``base`` (default HEAD), or, when the branch
    ``redline/<name>`` exists, resume it (``Session.resumed``).

    With ``background`` the worktree is only registered, its files not yet checked
    out: the caller runs :func:`checkout_of` (the checkout marker says it is due)."""
    name = name or _free_name(repo, layout)
    check_name(name)
    layout.ensure()
    record = _read(_meta_path(layout, name))
    if record is not None and _worktree_gone(record):
        # Open, but its worktree was removed under it: checked out again, where it was.
        with contextlib.suppress(KeyError, pygit2.GitError):
            repo.lookup_worktree(_worktree_name(name)).prune(True)
        shutil.rmtree(record.worktree, ignore_errors=True)
        _resume(repo, layout, name, record.branch, None, Path(record.worktree), background)
        session = Session(  # the same session: where its history starts is kept
            name, record.branch, record.worktree, record.base, record.created, resumed=True
        )
        _write(_meta_path(layout, name), session)
        return session
    if record is not None:
        raise SessionError(
            f"session {name!r} is already open; use it, or close it first "
            f"(`redline session close {name}`)"
        )
    path = layout.worktrees / name
    if path.exists():
        raise SessionError(f"{path} already exists; remove it or pick another session name")
    branch = f"refs/heads/{BRANCH_PREFIX}{name}"
    if branch in repo.references:
        return _resume(repo, layout, name, branch, base, path, background)
    try:
        commit = repo.revparse_single(base or "HEAD").peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
        raise SessionError(
            f"cannot resolve {base or 'HEAD'!r} to a commit; give --base a branch, tag or "
            "commit (a repository needs at least one commit)"
        ) from None
    origin = _origin_branch(repo, base)
    ref = repo.branches.local.create(branch.removeprefix("refs/heads/"), commit)
    try:
        _add_worktree(repo, layout, name, path, branch, background)
    except SessionError:
        ref.delete()
        raise
    _ensure_rewrite_ref(repo)
    session = Session(name, branch, str(path), str(commit.id), time.time(), origin=origin)
    _write(_meta_path(layout, name), session)
    # A record left by a session whose branch was deleted since (by git) is stale.
    _closed_path(layout, name).unlink(missing_ok=True)
    return session


def _origin_branch(repo: pygit2.Repository, base: str | None) -> str | None:
    """The branch a new session starts from: HEAD's, or the branch ``base`` names (None:
    a commit, a tag, a detached HEAD)."""
    if base is None:
        if repo.head_is_unborn or repo.head_is_detached:
            return None
        name = repo.head.name
    else:
        name = base if base.startswith("refs/heads/") else f"refs/heads/{base}"
        if name not in repo.references:
            return None
    return None if name.startswith(f"refs/heads/{BRANCH_PREFIX}") else name


def _resume(
    repo: pygit2.Repository,
    layout: Layout,
    name: str,
    branch: str,
    base: str | None,
    path: Path,
    background: bool,
) -> Session:
    """A new worktree on the existing branch ``redline/<name>``; its history continues."""
    short = branch.removeprefix("refs/heads/")
    if base is not None:
        raise SessionError(
            f"branch {short} already exists, so session {name!r} would resume from its tip "
            f"and --base {base} cannot apply; drop --base to resume it, or pick another "
            f"session name to start from {base}"
        )
    held = _checked_out(repo, layout, branch)
    if held is not None:
        raise SessionError(held)
    try:
        tip = repo.references[branch].peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError):
        raise SessionError(
            f"branch {short} does not point at a commit; delete it (`git branch -D {short}`) "
            "or pick another session name"
        ) from None
    start = closed_base(repo, layout, name, tip.id)
    closed = _read(_closed_path(layout, name))
    origin = closed.origin if closed is not None else None
    _add_worktree(repo, layout, name, path, branch, background)
    _ensure_rewrite_ref(repo)
    session = Session(name, branch, str(path), str(start), time.time(), resumed=True, origin=origin)
    _write(_meta_path(layout, name), session)
    _closed_path(layout, name).unlink(missing_ok=True)
    return session


def _add_worktree(
    repo: pygit2.Repository, layout: Layout, name: str, path: Path, branch: str, background: bool
) -> None:
    """Register the worktree of session ``name`` at ``path`` on ``branch`` and, unless
    in the ``background``, check it out (with git: gitops.checkout)."""
    mark(layout.state, name)
    try:
        register(layout.common, _worktree_name(name), path, branch)
    except OSError as exc:
        _forget_worktree(repo, name, path)
        raise SessionError(
            f"cannot create the worktree at {path}: {exc}; `git worktree list` shows the "
            "worktrees git knows, `git worktree prune` forgets those whose folder is gone"
        ) from None
    if background:
        return
    try:
        checkout_of(layout, name, path).run()
    except CheckoutFailed as exc:
        _forget_worktree(repo, name, path)
        raise SessionError(f"cannot check out the session's worktree: {exc}") from None


def checkout_of(
    layout: Layout,
    name: str,
    path: Path,
    env: Mapping[str, str] | None = None,
    then: Callable[[], None] | None = None,
) -> Checkout:
    """The checkout of session ``name``'s worktree at ``path`` (not started yet)."""
    return Checkout(path, marker(layout.state, name), env, then)


def checkout_due(layout: Layout, name: str) -> bool:
    """Whether session ``name``'s worktree was registered but not yet fully checked out."""
    return marker(layout.state, name).exists()


def _forget_worktree(repo: pygit2.Repository, name: str, path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
    with contextlib.suppress(KeyError, pygit2.GitError):
        repo.lookup_worktree(_worktree_name(name)).prune(True)


def _worktree_gone(session: Session) -> bool:
    """Whether the session's worktree folder, or the repository's record of it, is gone."""
    root = Path(session.worktree)
    try:
        link = (root / ".git").read_text(encoding="utf-8", errors="replace")
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return True
    admin = link.removeprefix("gitdir:").strip()
    return not admin or not (root / admin).is_dir()


def _checked_out(repo: pygit2.Repository, layout: Layout, branch: str) -> str | None:
    """Why ``branch`` cannot get a worktree of its own (a worktree has it), or None."""
    short = branch.removeprefix("refs/heads/")
    if not repo.is_bare and _head_is(layout.common / "HEAD", branch):
        where = Path(repo.workdir) if repo.workdir else layout.common.parent
        return (
            f"branch {short} is checked out in your own worktree ({where}), so the session "
            "cannot resume in a worktree of its own; switch that worktree to another branch "
            "(`git switch -`), or pick another session name"
        )
    admin = layout.common / "worktrees"
    if not admin.is_dir():
        return None
    for entry in sorted(admin.iterdir()):
        if not _head_is(entry / "HEAD", branch):
            continue
        try:
            location = Path((entry / "gitdir").read_text(encoding="utf-8").strip()).parent
        except OSError:
            location = entry
        if not location.exists() and entry.name.startswith(_worktree_name("")):
            # A session worktree of redline's whose folder was removed: forgotten now.
            shutil.rmtree(entry, ignore_errors=True)
            continue
        if location.exists():
            return (
                f"branch {short} is checked out in the worktree {location}; remove that "
                f"worktree (`git worktree remove {location}`) or switch it to another branch, "
                "then open the session again — or pick another session name"
            )
        return (
            f"branch {short} is still registered to the worktree {location}, which no longer "
            "exists; run `git worktree prune` to forget it, then open the session again"
        )
    return None


def _head_is(head_file: Path, branch: str) -> bool:
    try:
        return head_file.read_text(encoding="utf-8").strip() == f"ref: {branch}"
    except OSError:
        return False


def closed_base(repo: pygit2.Repository, layout: Layout, name: str, tip: pygit2.Oid) -> pygit2.Oid:
    """Where the history of a session that is not open starts, its branch at ``tip``:
    as recorded when it was closed (while the branch still descends from it), or
    else as its notes say."""
    record = _read(_closed_path(layout, name))
    if record is not None:
        recorded = _commit_id(record.base)
        if recorded is not None and (recorded == tip or _descends(repo, tip, recorded)):
            return recorded
    return history_start(repo, name, tip)


def history_start(repo: pygit2.Repository, name: str, tip: pygit2.Oid) -> pygit2.Oid:
    """The commit below the run of commits, from ``tip`` down, that session ``name`` made.

    For a branch with no record (fetched from elsewhere, or its record lost), the
    notes tell which commits are the session's: each redline commit's note names
    its session.
    """
    current = tip
    while True:
        note = notes.read_note(repo, current)
        if note is None or note.get("session") != name:
            return current
        commit = repo[current]
        assert isinstance(commit, pygit2.Commit)
        if len(commit.parent_ids) != 1:
            return current
        current = commit.parent_ids[0]


def _commit_id(hex_id: str) -> pygit2.Oid | None:
    try:
        return pygit2.Oid(hex=hex_id)
    except (ValueError, TypeError):
        return None


def _descends(repo: pygit2.Repository, commit: pygit2.Oid, ancestor: pygit2.Oid) -> bool:
    try:
        return bool(repo.descendant_of(commit, ancestor))
    except (KeyError, pygit2.GitError):
        return False


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
        _closed_path(layout, session.name).unlink(missing_ok=True)
    else:
        # The branch stays: keep where its history starts, for `log` and a later resume.
        _write(_closed_path(layout, session.name), session)
    _meta_path(layout, session.name).unlink(missing_ok=True)
    marker(layout.state, session.name).unlink(missing_ok=True)
    journal.path_for(layout.journal, session.name).unlink(missing_ok=True)
