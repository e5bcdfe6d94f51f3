"""Landing a session's branch on a branch of the user's: the commit, and moving the branch.

Two ways (``redline land``; the guard runs first, in hooks.land):

- ``merge`` (the default) keeps every edit commit, its trailer and its note as
  they are: the target fast-forwards to the session's tip when the session
  started from the target's tip (or a commit the target has not moved past), and
  gets a merge commit (first parent: the target) when the target moved on.
- ``squash`` makes one commit on top of the target with the session's changes.
  Its message carries every ``Redline-Edit:`` trailer of the commits it takes in,
  and its note (``tool: squash``) lists each edit's note under ``squashed`` with
  the commit it came from: the guard, ``review`` and ``approve`` see each edit
  in it, also where the session's commits are not (hooks.ledger).

The target moves only by git's own safety. When no worktree has it checked out,
its ref moves with a compare-and-swap (gitops.refs): from the tip that was
judged, or not at all. When a worktree has it checked out, that worktree must
be clean — no staged or unstaged change to a tracked file, and no untracked or
ignored file where the landing adds one — or nothing happens and the paths are
named; then ``git merge --ff-only`` to the new commit runs there, so that git
itself moves the branch, its index and its files together (and runs the user's
``post-merge`` hook). Uncommitted work is never touched.
"""

from __future__ import annotations

import os
import secrets
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pygit2

from redline.engine.paths import shown_path
from redline.gitops import notes, refs
from redline.gitops.errors import GitModeError
from redline.gitops.gitenv import without_git_redirects
from redline.gitops.objects import write_commit
from redline.gitops.repo import BRANCH_PREFIX, Layout, signature
from redline.gitops.writer import PLAIN, Writer

MERGE = "merge"
SQUASH = "squash"
FAST_FORWARD = "fast-forward"
_SHOWN = 10  # paths named in a refusal
GIT_TIMEOUT = 600.0  # seconds a git command in the user's worktree may take


class LandError(GitModeError):
    """The session cannot land: the branches conflict, the target is dirty or moved."""


@dataclass(frozen=True)
class Plan:
    """What landing session ``session`` on ``target`` does, before anything is written."""

    session: str
    source: str  # refs/heads/redline/<session>
    target: str  # refs/heads/<branch>
    tip: pygit2.Oid  # the session branch's tip
    old: pygit2.Oid  # the target's tip
    mode: str  # fast-forward | merge | squash
    parent: pygit2.Tree  # the target's tree
    tree: pygit2.Tree  # the target's tree once landed
    commits: tuple[pygit2.Commit, ...]  # what it brings, oldest first

    @property
    def branch(self) -> str:
        return self.target.removeprefix("refs/heads/")


def target_ref(repo: pygit2.Repository, layout: Layout, into: str | None) -> str:
    """The branch to land on: ``into``, or the one checked out in the main worktree."""
    if into is None:
        head = _read(layout.common / "HEAD")
        if not head.startswith("ref: refs/heads/") or repo.is_bare:
            raise LandError(
                "your worktree is not on a branch (HEAD is detached); name the branch to land "
                "on with --into BRANCH"
            )
        into = head.removeprefix("ref: ")
    name = into if into.startswith("refs/heads/") else f"refs/heads/{into}"
    short = name.removeprefix("refs/heads/")
    if short.startswith(BRANCH_PREFIX):
        raise LandError(
            f"{short} is a session branch; land on a branch of your own (--into BRANCH)"
        )
    if notes.ref_target(repo, name) is None:
        raise LandError(
            f"there is no branch {short} to land on; create it (`git branch {short}`) or name "
            "another with --into"
        )
    return name


def plan(
    repo: pygit2.Repository, session: str, tip: pygit2.Oid, target: str, squash: bool
) -> Plan | None:
    """The landing of ``tip`` on ``target`` (None: the target has it all already);
    LandError naming the paths when the two branches conflict."""
    old = notes.ref_target(repo, target)
    assert old is not None
    if old == tip or repo.descendant_of(old, tip):
        return None
    base = _commit(repo, old)
    brought = _brought(repo, tip, old)
    if not squash and repo.descendant_of(tip, old):
        return Plan(session, _source(session), target, tip, old, FAST_FORWARD, base.tree,
                    _commit(repo, tip).tree, brought)  # fmt: skip
    index = repo.merge_commits(old, tip)
    if index.conflicts is not None:
        paths = sorted({(o or t or a).path for a, o, t in index.conflicts})
        short = target.removeprefix("refs/heads/")
        raise LandError(
            f"session {session} conflicts with {short} in {len(paths)} file(s): "
            f"{_listed(paths)}; merge them by hand (`git merge {BRANCH_PREFIX}{session}` on "
            f"{short}), or have the session's work brought up to date with {short} first"
        )
    tree = repo[index.write_tree(repo)]
    assert isinstance(tree, pygit2.Tree)
    mode = SQUASH if squash else MERGE
    return Plan(session, _source(session), target, tip, old, mode, base.tree, tree, brought)


def make_commit(
    repo: pygit2.Repository, plan: Plan, message: str | None, writer: Writer = PLAIN
) -> tuple[pygit2.Oid, dict[str, Any] | None]:
    """The commit the target moves to, and the note it needs (a squash's only)."""
    if plan.mode == FAST_FORWARD:
        return plan.tip, None
    sig = signature(repo)
    listed = "\n".join(
        f"  {str(c.id)[:12]} {c.message.splitlines()[0] if c.message else ''}" for c in plan.commits
    )
    if plan.mode == MERGE:
        source = _source_short(plan)
        subject = message or f"Merge session {plan.session} ({source}) into {plan.branch}"
        text = f"{subject}\n\nLanded by redline from {source}:\n{listed}\n"
        oid = write_commit(repo, plan.tree.id, [plan.old, plan.tip], sig, sig, text, writer)
        return oid, None
    note = squash_note(repo, plan)
    edits = [str(e["edit"]) for e in notes.squashed(note)]
    subject = message or f"redline: session {plan.session} ({len(edits)} edit(s))"
    trailers = "".join(f"Redline-Edit: {edit}\n" for edit in edits)
    text = f"{subject}\n\nSquashed by redline from {_source_short(plan)}:\n{listed}\n" + (
        f"\n{trailers}" if trailers else ""
    )
    oid = write_commit(repo, plan.tree.id, [plan.old], sig, sig, text, writer)
    return oid, note


def squash_note(repo: pygit2.Repository, plan: Plan) -> dict[str, Any]:
    """The note of a squash of ``plan``'s commits: each edit's note (as it is now, its
    approvals included) and the commit it came from; a squash's own are taken apart."""
    carried: list[dict[str, Any]] = []
    for commit in plan.commits:
        data = notes.read_note(repo, commit.id)
        if data is None:
            continue
        inner = notes.squashed(data)
        if "squashed" in data:
            carried += inner
            continue
        entry = {k: v for k, v in data.items() if k != "schema"}
        entry["commit"] = str(commit.id)
        carried.append(entry)
    note = notes.Note(secrets.token_hex(6), "", plan.session, notes.SQUASH_TOOL, None, "land", [])
    note.files = notes.files_between(plan.parent, plan.tree)
    return {**note.to_json(), "policy": None, "squashed": carried}


def add_note(repo: pygit2.Repository, commit: pygit2.Oid, note: Mapping[str, Any]) -> None:
    """Attach ``note`` to ``commit`` (the notes compare-and-swap: nothing else is lost)."""
    notes.publish(
        repo,
        lambda tip: {} if notes.blob_of(repo, commit, tip) is not None else {commit: note},
        signature(repo),
    )


def holder(layout: Layout, repo: pygit2.Repository, target: str) -> Path | None:
    """The worktree that has ``target`` checked out (the main one or a linked one), if any."""
    if not repo.is_bare and _read(layout.common / "HEAD") == f"ref: {target}":
        return Path(repo.workdir) if repo.workdir else layout.common.parent
    admin = layout.common / "worktrees"
    for entry in sorted(admin.iterdir()) if admin.is_dir() else []:
        if _read(entry / "HEAD") != f"ref: {target}":
            continue
        location = Path(_read(entry / "gitdir")).parent
        if location.is_dir():
            return location
    return None


def check_clean(worktree: Path, plan: Plan, env: Mapping[str, str]) -> None:
    """LandError naming what would be at risk in ``worktree``, where the target is
    checked out: changes to tracked files, and files where the landing adds one."""
    status = _git(worktree, env, "--no-optional-locks", "status", "--porcelain=v1", "-z",
                  "--untracked-files=no", "--ignore-submodules=none")  # fmt: skip
    if status.returncode != 0:
        raise LandError(
            f"cannot read the state of your worktree {worktree} "
            f"(git status: {_said(status)}); land again once `git status` works there"
        )
    dirty = _status_paths(status.stdout)
    if dirty:
        raise LandError(
            f"{plan.branch} is checked out in {worktree}, which has uncommitted changes "
            f"({_listed(dirty)}); redline does not touch them: commit or stash them "
            f"(`git stash`), then land again — or land on another branch with --into"
        )
    added = [
        d.new_file.path
        for d in plan.parent.diff_to_tree(plan.tree).deltas
        if d.status == pygit2.enums.DeltaStatus.ADDED
    ]
    in_the_way = [p for p in added if os.path.lexists(worktree / p)]
    if in_the_way:
        raise LandError(
            f"{plan.branch} is checked out in {worktree}, where files not in {plan.branch} "
            f"stand where the session adds files ({_listed(in_the_way)}); move them away, "
            "then land again"
        )


def move_target(
    repo: pygit2.Repository,
    plan: Plan,
    new: pygit2.Oid,
    worktree: Path | None,
    env: Mapping[str, str],
) -> None:
    """Move the target from ``plan.old`` to ``new``: its ref alone (compare-and-swap), or,
    where a worktree has it checked out, by ``git merge --ff-only`` there."""
    moved = (
        f"{plan.branch} moved since it was checked (it is no longer at {str(plan.old)[:12]}); "
        "land again"
    )
    if worktree is None:
        try:
            refs.update(repo, plan.target, plan.old, new, f"redline: land {plan.session}")
        except GitModeError as exc:
            if notes.ref_target(repo, plan.target) != plan.old:
                raise LandError(moved) from None
            raise LandError(f"cannot move {plan.branch}: {exc}") from None
        return
    if notes.ref_target(repo, plan.target) != plan.old:
        raise LandError(moved)
    action = {"GIT_REFLOG_ACTION": f"redline land {plan.session}"}
    done = _git(worktree, {**env, **action}, "merge", "--ff-only", "--quiet", str(new))
    if done.returncode != 0:
        raise LandError(
            f"git refused to bring {plan.branch} in {worktree} to the landed commit "
            f"{str(new)[:12]}: {_said(done)}; nothing of yours was changed — fix what git "
            "names, then land again"
        )
    if notes.ref_target(repo, plan.target) != new:
        raise LandError(moved)


def _source(session: str) -> str:
    return f"refs/heads/{BRANCH_PREFIX}{session}"


def _source_short(plan: Plan) -> str:
    return plan.source.removeprefix("refs/heads/")


def _brought(
    repo: pygit2.Repository, tip: pygit2.Oid, old: pygit2.Oid
) -> tuple[pygit2.Commit, ...]:
    walker = repo.walk(tip, pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.REVERSE)
    walker.hide(old)
    return tuple(walker)


def _commit(repo: pygit2.Repository, oid: pygit2.Oid) -> pygit2.Commit:
    found = repo[oid]
    assert isinstance(found, pygit2.Commit)
    return found


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError:
        return ""


def _git(cwd: Path, env: Mapping[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            ["git", *args],
            cwd=cwd,
            env=without_git_redirects(env),
            capture_output=True,
            text=True,
            errors="replace",
            timeout=GIT_TIMEOUT,
        )
    except OSError as exc:
        raise LandError(
            f"cannot run git in {cwd} ({exc.strerror or exc}); redline lands on a checked-out "
            "branch with git itself: install git, or land on another branch with --into"
        ) from None
    except subprocess.TimeoutExpired:
        raise LandError(
            f"`git {' '.join(args[:2])}` in {cwd} did not finish within {GIT_TIMEOUT:g} s and "
            "was stopped (a hook of yours, post-merge say, may be waiting for input); check "
            "`git status` and `git log -1` there to see whether the branch moved, then land "
            "again if it did not"
        ) from None


def _status_paths(output: str) -> list[str]:
    """The paths of ``git status --porcelain=v1 -z`` (a rename's source left out)."""
    found: list[str] = []
    fields = iter(output.split("\0"))
    for item in fields:
        if len(item) < 4:
            continue
        found.append(item[3:])
        if item[0] in "RC":
            next(fields, None)
    return found


def _said(proc: subprocess.CompletedProcess[str]) -> str:
    text = " ".join((proc.stderr or proc.stdout).split())
    return text[:500] or f"exit status {proc.returncode}"


def _listed(paths: list[str]) -> str:
    shown = ", ".join(shown_path(p) for p in paths[:_SHOWN])
    return shown + (f" and {len(paths) - _SHOWN} more" if len(paths) > _SHOWN else "")
