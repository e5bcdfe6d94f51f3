"""Evidence travels: fetching, merging and pushing ``refs/notes/redline``.

A plain ``git push`` pushes branches and tags only, and ``git fetch`` brings
no notes, so a teammate's clone would have commits without their evidence.
redline moves the notes beside the code without changing what git pushes or
fetches for any other ref:

- fetch: each remote gets one more fetch refspec,
  ``+refs/notes/redline:refs/notes/redline-remote/<remote>`` (:func:`setup`;
  ``redline hooks install`` and ``redline notes setup`` add it). ``git fetch``
  then keeps a copy of the remote's notes beside the local ones, never over
  them, and redline merges it into ``refs/notes/redline`` by union
  (gitops.notes_merge) before it reads notes (:func:`import_fetched`).
- push: once the guard has passed a push, the pre-push hook fetches the
  remote's notes, merges them, and pushes ``refs/notes/redline`` — a
  fast-forward of the remote's by construction, never a forced push; when
  another clone pushed notes in between, git rejects it and the loop fetches,
  merges and pushes again (:func:`sync`).

Git runs as a program here (it knows the transports and credentials); every
notes write stays pygit2's compare-and-swap.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess

import pygit2

from redline.engine.records import record
from redline.gitops.errors import GitModeError
from redline.gitops.notes import current, ref_target
from redline.gitops.notes_merge import Merged, merge_into
from redline.gitops.repo import NOTES_REF, common_dir

TRACKING = "refs/notes/redline-remote/"
# Set for the git that :func:`sync` runs: the reference-transaction hook leaves to sync the
# merge of what its fetch brings (sync merges it next, in its own process) and of the copy
# its push updates, rather than start a second redline to do it first.
SYNCING = "REDLINE_NOTES_SYNCING"
ATTEMPTS = 5  # fetch, merge, push; again when another clone pushed notes in between
_TIMEOUT = 300
_NAME = re.compile(r"[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*")


def refspec(remote: str) -> str:
    return f"+{NOTES_REF}:{tracking_ref(remote)}"


def tracking_ref(remote: str) -> str:
    """Where the notes of ``remote`` (a remote's name, or a URL) are kept."""
    if _NAME.fullmatch(remote) and ".." not in remote and not remote.endswith(".lock"):
        return TRACKING + remote
    return TRACKING + "url-" + hashlib.sha1(remote.encode()).hexdigest()[:12]


def setup(repo: pygit2.Repository, remotes: list[str] | None = None) -> list[str]:
    """Add the notes fetch refspec to ``remotes`` (default: every remote); what was done."""
    names = remote_names(repo) if remotes is None else remotes
    done = []
    for name in names:
        try:
            remote = repo.remotes[name]
        except (KeyError, ValueError):
            raise GitModeError(
                f"there is no remote named {name!r}; `git remote -v` lists the remotes"
            ) from None
        spec = refspec(name)
        if spec in remote.fetch_refspecs:
            done.append(f"{name}: fetches {NOTES_REF} already (into {tracking_ref(name)})")
            continue
        repo.remotes.add_fetch(name, spec)
        done.append(f"{name}: `git fetch` now brings {NOTES_REF} (into {tracking_ref(name)})")
    return done


def import_fetched(repo: pygit2.Repository) -> list[tuple[str, Merged]]:
    """Merge every fetched copy of a remote's notes into ``refs/notes/redline``.

    Cheap when there is nothing new: a copy the local notes already hold is
    skipped after one ancestry check.
    """
    out = []
    for name in _tracking_refs(repo):
        tip = ref_target(repo, name)
        if tip is None or not isinstance(repo.get(tip), pygit2.Commit):
            continue
        mine = current(repo)
        if mine is not None and (mine == tip or repo.descendant_of(mine, tip)):
            continue
        out.append((name, merge_into(repo, tip, name.removeprefix(TRACKING))))
    return out


def _tracking_refs(repo: pygit2.Repository) -> list[str]:
    """The refs under refs/notes/redline-remote/, loose or packed (read as files: this
    runs before every guard, and listing all refs of a large repository is not free)."""
    folder = common_dir(repo)
    loose = folder / TRACKING
    names = (
        {
            TRACKING + p.relative_to(loose).as_posix()
            for p in loose.rglob("*")
            if p.is_file() and not p.name.endswith(".lock")
        }
        if loose.is_dir()
        else set()
    )
    try:
        packed = (folder / "packed-refs").read_bytes()
    except OSError:
        packed = b""
    if TRACKING.encode() in packed:  # one scan in C; the lines only when there are some
        for line in packed.splitlines():
            if TRACKING.encode() in line and not line.startswith((b"#", b"^")):
                names.add(line.split(b" ", 1)[1].strip().decode())
    return sorted(names)


@record
class Synced:
    remote: str
    fetched: bool  # the remote had notes
    merged: Merged | None
    pushed: bool
    unpushed: bool = False  # the local notes hold what the remote lacks (push was not asked)

    def describe(self) -> str:
        parts = []
        if self.merged is not None and self.merged.how != "up to date":
            parts.append(f"merged the notes of {self.remote} ({self.merged.how})")
        if self.pushed:
            parts.append(f"pushed {NOTES_REF} to {self.remote}")
        if self.unpushed:
            parts.append(
                f"{self.remote} lacks notes this clone has, not pushed (--no-push); "
                f"`redline notes sync {self.remote}` pushes them"
            )
        if not parts:
            return f"{NOTES_REF} is the same here and on {self.remote}"
        text = "; ".join(parts)
        if self.merged is not None and self.merged.kept:
            kept = ", ".join(c[:12] for c in self.merged.kept)
            text += (
                f" (kept the local note of {kept}: the two notes differ and one is not a "
                "readable redline note)"
            )
        return text


def sync(repo: pygit2.Repository, remote: str, push: bool = True) -> Synced:
    """Fetch ``remote``'s notes, merge them into the local ones, and push the result.

    The push is never forced: the merged notes descend from what was fetched,
    so the remote takes them as a fast-forward; when another clone pushed in
    between, git rejects the push and this fetches, merges and tries again.
    """
    tracking = tracking_ref(remote)
    if _is_remote(repo, remote):
        setup(repo, [remote])
    merged: Merged | None = None
    for _ in range(ATTEMPTS):
        fetched = _fetch(repo, remote, tracking)
        theirs = ref_target(repo, tracking) if fetched else None
        if theirs is not None:
            merged = merge_into(repo, theirs, remote)
        mine = current(repo)
        if mine is None or mine == theirs:
            return Synced(remote, fetched, merged, False)
        if not push:
            return Synced(remote, fetched, merged, False, unpushed=True)
        if _push(repo, remote, mine):
            repo.references.create(tracking, mine, force=True)
            return Synced(remote, fetched, merged, True)
    raise GitModeError(
        f"{remote} kept taking new notes while redline was pushing {NOTES_REF} to it "
        f"({ATTEMPTS} tries); run `redline notes sync {remote}` again in a moment"
    )


def push_needed(repo: pygit2.Repository, remote: str) -> bool:
    """Whether the local notes hold anything the last copy fetched from ``remote`` lacks."""
    mine = current(repo)
    if mine is None:
        return False
    theirs = ref_target(repo, tracking_ref(remote))
    return theirs is None or (mine != theirs and not repo.descendant_of(theirs, mine))


def remote_names(repo: pygit2.Repository) -> list[str]:
    return [name for name in repo.remotes.names() if name]


def _is_remote(repo: pygit2.Repository, name: str) -> bool:
    return name in remote_names(repo)


def _fetch(repo: pygit2.Repository, remote: str, tracking: str) -> bool:
    """Fetch the remote's notes into ``tracking``; False when the remote has none."""
    proc = _git(
        repo, "fetch", "--no-tags", "--no-write-fetch-head", "--quiet", remote,
        f"+{NOTES_REF}:{tracking}",
    )  # fmt: skip
    if proc.returncode == 0:
        return True
    if "couldn't find remote ref" in proc.stderr:
        return False
    raise GitModeError(
        f"cannot fetch {NOTES_REF} from {remote}: {_last_line(proc.stderr)}; check the remote "
        f"(`git fetch {remote}`), then run `redline notes sync {remote}`"
    )


def _push(repo: pygit2.Repository, remote: str, tip: pygit2.Oid) -> bool:
    """Push ``tip`` to the remote's notes ref; False when the remote moved (rejected)."""
    proc = _git(repo, "push", "--no-verify", "--porcelain", remote, f"{tip}:{NOTES_REF}")
    if proc.returncode == 0:
        return True
    status = [line for line in proc.stdout.splitlines() if line.startswith("!")]
    if any(_raced(line) for line in status):
        return False  # another clone pushed notes first, or is pushing them now
    why = _last_line(" ".join(status) or proc.stderr)
    raise GitModeError(
        f"cannot push {NOTES_REF} to {remote}: {why}; check that the remote accepts "
        f"refs/notes/* (`git push {remote} {NOTES_REF}`), then run `redline notes sync {remote}`"
    )


def _raced(status: str) -> bool:
    """Whether a push status line says the remote's notes moved under the push:
    rejected as no fast-forward, or the remote's ref locked or changed meanwhile."""
    if "[rejected]" in status:
        return True
    moved = ("lock", "failed to update ref", "old value", "stale info")
    return "[remote rejected]" in status and any(word in status for word in moved)


def _git(repo: pygit2.Repository, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LC_ALL": "C"}  # git's messages are parsed: untranslated
    env[SYNCING] = "1"
    for name in ("GIT_INDEX_FILE", "GIT_WORK_TREE", "GIT_PREFIX"):
        env.pop(name, None)
    cwd = repo.workdir or repo.path
    command = ["git", f"--git-dir={repo.path}", *args]
    try:
        return subprocess.run(
            command, cwd=cwd, env=env, capture_output=True, text=True, timeout=_TIMEOUT
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitModeError(f"cannot run `git {args[0]}` ({exc}); is git on the PATH?") from None


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "git gave no reason"
