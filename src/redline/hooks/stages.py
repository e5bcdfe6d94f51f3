"""What each hook stage checks: the (parent tree, new tree) pairs of a commit or push,
and the commits each brings (whose ``Redline-Edit:`` trailers hooks.evidence checks)."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterable, Iterator
from pathlib import Path

import pygit2

from redline.engine.records import record
from redline.gitops.gitenv import without_git_redirects
from redline.gitops.notes import trailer_edits
from redline.gitops.repo import BRANCH_PREFIX

ZERO = "0" * 40
SESSION_BRANCHES = f"refs/heads/{BRANCH_PREFIX}"
_SQUASHED = re.compile(r"^commit ([0-9a-f]{40})$", re.M)


@record(frozen=True)
class Change:
    label: str  # for messages: "the commit", "push of refs/heads/main"
    parent: pygit2.Tree | None
    new: pygit2.Tree
    # The commits the change brings: reachable from ``tips``, not from ``hide``.
    tips: tuple[pygit2.Oid, ...] = ()
    hide: tuple[pygit2.Oid, ...] = ()


def brought(repo: pygit2.Repository, change: Change) -> Iterator[pygit2.Commit]:
    """The commits ``change`` brings, oldest first (for a push: every pushed commit the
    remote lacks; for a commit: those a merge, squash or cherry-pick in progress takes in)."""
    if not change.tips:
        return
    order = pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.REVERSE
    walker = repo.walk(change.tips[0], order)
    for tip in change.tips[1:]:
        walker.push(tip)
    for oid in change.hide:
        walker.hide(oid)
    yield from walker


def commit_change(
    repo: pygit2.Repository, index_file: Path | None, amending: bool, merging: Iterable[str] = ()
) -> Change:
    """The commit being made (pre-commit, pre-merge-commit): the index against HEAD.

    ``index_file`` is the index git is committing (``GIT_INDEX_FILE``: a
    temporary one for ``git commit -a`` or ``git commit <paths>``). When
    amending, the new commit's parent is HEAD's parent. ``merging``: the commits
    ``git merge`` is merging (it names them in ``GITHEAD_<sha>`` variables for
    pre-merge-commit, before MERGE_HEAD is written).
    """
    tree = index_tree(repo, index_file)
    parent: pygit2.Tree | None = None
    tips = _in_progress(repo) + [o for o in map(_oid, merging) if o is not None]
    hide: tuple[pygit2.Oid, ...] = ()
    if not repo.head_is_unborn:
        head = repo.head.peel(pygit2.Commit)
        if amending:
            parent = head.parents[0].tree if head.parents else None
            tips.append(head.id)
            hide = tuple(head.parent_ids)
        else:
            parent = head.tree
            hide = (head.id,)
    return Change("the commit", parent, tree, tuple(dict.fromkeys(tips)), hide)


def index_tree(repo: pygit2.Repository, index_file: Path | None) -> pygit2.Tree:
    """The tree of the index git is committing (``index_file``; default the worktree's).

    ``git write-tree`` makes it: it reads the index in C and reuses the index's
    cache of trees, where libgit2 parses every entry into Python objects and
    builds every tree again (at 100,000 files ~100 ms, in each commit's hook).
    When git cannot (no git on PATH), libgit2 does it as before.
    """
    env = without_git_redirects(os.environ)
    if index_file is not None:
        env["GIT_INDEX_FILE"] = str(index_file)
    try:
        done = subprocess.run(
            ["git", "--git-dir", repo.path, "write-tree"],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            check=False,
        )
        oid: pygit2.Oid | None = _oid(done.stdout.decode("ascii", "replace").strip())
        if done.returncode != 0:
            oid = None
    except OSError:
        oid = None
    if oid is None or oid not in repo:
        index = pygit2.Index(str(index_file)) if index_file is not None else repo.index
        oid = index.write_tree(repo)
    tree = repo[oid]
    assert isinstance(tree, pygit2.Tree)
    return tree


def _in_progress(repo: pygit2.Repository) -> list[pygit2.Oid]:
    """The commits a merge, squash merge or cherry-pick in progress takes in: MERGE_HEAD,
    CHERRY_PICK_HEAD, the commits SQUASH_MSG lists, and — for ``cherry-pick -n``, which
    leaves only MERGE_MSG — the session-branch commits whose trailers MERGE_MSG quotes."""
    git_dir = Path(repo.path)
    found: list[pygit2.Oid | None] = []
    for name in ("MERGE_HEAD", "CHERRY_PICK_HEAD"):
        found += [_oid(line) for line in _read(git_dir / name).split()]
    found += [_oid(sha) for sha in _SQUASHED.findall(_read(git_dir / "SQUASH_MSG"))]
    edits = set(trailer_edits(_read(git_dir / "MERGE_MSG")))
    if edits and not found:
        found += _naming(repo, edits)
    return [oid for oid in found if oid is not None and isinstance(repo.get(oid), pygit2.Commit)]


def _naming(repo: pygit2.Repository, edits: set[str]) -> list[pygit2.Oid | None]:
    """The commits of session branches (not yet in HEAD) whose trailers name ``edits``."""
    tips = [
        repo.references[name].target
        for name in repo.references
        if name.startswith(SESSION_BRANCHES)
    ]
    tips = [t for t in tips if isinstance(t, pygit2.Oid)]
    if not tips:
        return []
    walker = repo.walk(tips[0], pygit2.enums.SortMode.TOPOLOGICAL)
    for tip in tips[1:]:
        walker.push(tip)
    if not repo.head_is_unborn:
        walker.hide(repo.head.target)
    found: list[pygit2.Oid | None] = []
    for commit in walker:
        message = commit.raw_message.decode("utf-8", errors="replace")
        if edits & set(trailer_edits(message)):
            found.append(commit.id)
    return found


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _oid(text: str) -> pygit2.Oid | None:
    try:
        return pygit2.Oid(hex=text.strip())
    except ValueError:
        return None


def push_changes(repo: pygit2.Repository, lines: Iterable[str]) -> list[Change]:
    """One change per ref being pushed (pre-push stdin: local ref, sha, remote ref, sha)."""
    out = []
    for line in lines:
        parts = line.split()
        if len(parts) != 4:
            continue
        local_ref, local_sha, remote_ref, remote_sha = parts
        change = range_change(repo, remote_sha, local_sha, f"push of {local_ref} to {remote_ref}")
        if change is not None:
            out.append(change)
    return out


def range_change(
    repo: pygit2.Repository, from_sha: str | None, to_sha: str, label: str
) -> Change | None:
    """``from_sha`` → ``to_sha``; an unknown or zero ``from_sha`` falls back to the
    newest merge base with a remote-tracking branch (everything, when none)."""
    if to_sha == ZERO:
        return None  # deleting a ref pushes no content
    new = _commit(repo, to_sha)
    if new is None:
        return None
    base = _commit(repo, from_sha) if from_sha and from_sha != ZERO else None
    if base is None:
        base = _remote_base(repo, new)
    hide = (base.id,) if base is not None else ()
    return Change(label, base.tree if base is not None else None, new.tree, (new.id,), hide)


def _commit(repo: pygit2.Repository, rev: str | None) -> pygit2.Commit | None:
    """A sha or, from ``pre-commit run --from-ref/--to-ref``, any revision (``HEAD``)."""
    if not rev:
        return None
    try:
        return repo.revparse_single(rev).peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
        return None


def _remote_base(repo: pygit2.Repository, tip: pygit2.Commit) -> pygit2.Commit | None:
    best: pygit2.Commit | None = None
    for name in repo.references:
        if not name.startswith("refs/remotes/"):
            continue
        target = repo.references[name].resolve().target
        if not isinstance(target, pygit2.Oid):
            continue
        try:
            base_id = repo.merge_base(tip.id, target)
        except pygit2.GitError:
            continue
        if base_id is None:
            continue
        candidate = repo[base_id]
        assert isinstance(candidate, pygit2.Commit)
        if best is None or candidate.commit_time > best.commit_time:
            best = candidate
    return best


def amending() -> bool:
    """Whether the git process running this hook is ``git commit --amend`` (Linux /proc).

    That is the nearest git ancestor, however it was spelt: through an alias
    (``git ci --amend``) or with the option abbreviated (``--amen``), as git allows.
    """
    return any(len(arg) >= 4 and "--amend".startswith(arg) for arg in _git_args()[1:])


def dry_run() -> bool:
    """Whether the git process running this hook is ``git push --dry-run`` (``-n``):
    the pre-push hook runs then too, and must not push the notes for real."""
    return any(
        arg == "-n" or (len(arg) >= 5 and "--dry-run".startswith(arg)) for arg in _git_args()[1:]
    )


def _git_args() -> list[str]:
    """The command line of the nearest git ancestor of this process (Linux /proc)."""
    pid = _parent(os.getpid())
    for _ in range(6):
        if pid is None or pid <= 1:
            return []
        args = _cmdline(pid)
        if args and Path(args[0]).name in ("git", "git.exe"):
            return args
        pid = _parent(pid)
    return []


def _cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def _parent(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    try:
        return int(stat.rsplit(")", 1)[1].split()[1])
    except (IndexError, ValueError):
        return None
