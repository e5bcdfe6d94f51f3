"""What each hook stage checks: the (parent tree, new tree) pairs of a commit or push."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pygit2

ZERO = "0" * 40


@dataclass(frozen=True)
class Change:
    label: str  # for messages: "the commit", "push of refs/heads/main"
    parent: pygit2.Tree | None
    new: pygit2.Tree


def commit_change(repo: pygit2.Repository, index_file: Path | None, amending: bool) -> Change:
    """The commit being made (pre-commit, pre-merge-commit): the index against HEAD.

    ``index_file`` is the index git is committing (``GIT_INDEX_FILE``: a
    temporary one for ``git commit -a`` or ``git commit <paths>``). When
    amending, the new commit's parent is HEAD's parent.
    """
    index = pygit2.Index(str(index_file)) if index_file is not None else repo.index
    tree = repo[index.write_tree(repo)]
    assert isinstance(tree, pygit2.Tree)
    parent: pygit2.Tree | None = None
    if not repo.head_is_unborn:
        head = repo.head.peel(pygit2.Commit)
        if amending:
            parent = head.parents[0].tree if head.parents else None
        else:
            parent = head.tree
    return Change("the commit", parent, tree)


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
    return Change(label, base.tree if base is not None else None, new.tree)


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
    pid = _parent(os.getpid())
    for _ in range(6):
        if pid is None or pid <= 1:
            return False
        args = _cmdline(pid)
        if args and Path(args[0]).name in ("git", "git.exe"):
            return any(len(arg) >= 4 and "--amend".startswith(arg) for arg in args[1:])
        pid = _parent(pid)
    return False


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
