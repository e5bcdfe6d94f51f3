"""Rolling small packs together: git's geometric choice, no loose object touched, nothing
removed before requests pause."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pygit2
import pytest

from gitmode_fixtures import FILES, assert_fsck_clean, git, git_wrapper, make_repo
from redline.gitops.gitenv import without_git_redirects
from redline.gitops.packs import StagedObjects
from redline.gitops.rollup import geometric_split, remove_packs, roll_up, still_redundant


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository whose own commits are loose objects, as `git commit` leaves them."""
    return make_repo(tmp_path / "repo", FILES)


def _loose(repo: Path) -> set[str]:
    objects = repo / ".git" / "objects"
    return {f"{d.name}{f.name}" for d in objects.iterdir() if len(d.name) == 2 for f in d.iterdir()}


def _packs(repo: Path) -> set[str]:
    return {p.stem for p in (repo / ".git" / "objects" / "pack").glob("*.idx")}


def _env(bin_dir: Path | None = None) -> dict[str, str]:
    env = without_git_redirects(os.environ)
    if bin_dir is not None:
        env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    return env


def _commits(repo: Path, count: int) -> tuple[pygit2.Repository, StagedObjects, list[pygit2.Oid]]:
    """``count`` commits made as the daemon makes them, one pack each, on branch many."""
    handle = pygit2.Repository(str(repo))
    staged = StagedObjects.attach(handle)
    commits = []
    parent = handle.head.peel(pygit2.Commit)
    for i in range(count):
        builder = handle.TreeBuilder(parent.tree)
        builder.insert(f"f{i}.txt", handle.create_blob(f"file {i}\n".encode()), 0o100644)
        sig = pygit2.Signature("T", "t@example.com", 1_700_000_000 + i, 0)
        oid = handle.create_commit(None, sig, sig, f"f{i}\n", builder.write(), [parent.id])
        staged.flush()
        commits.append(oid)
        parent = handle[oid]
    handle.references.create("refs/heads/many", commits[-1])
    return handle, staged, commits


@pytest.mark.parametrize(
    ("counts", "split"),
    [
        ([], 0),
        ([5], 0),
        ([1, 2, 4, 8], 0),  # already a progression
        ([3, 3], 2),
        ([1, 1, 1, 1, 100], 4),
        ([1, 1, 1, 3], 4),  # rolling the first three makes 3, which the 3 then joins
        ([10, 11, 100], 2),
    ],
)
def test_the_split_is_gits_geometric_one(counts: list[int], split: int) -> None:
    assert geometric_split(counts) == split


def test_small_packs_are_rolled_and_no_loose_object_is_touched(repo: Path, tmp_path: Path) -> None:
    handle, staged, commits = _commits(repo, 6)
    loose = _loose(repo)
    assert loose  # the repository's own commit
    before = _packs(repo)
    released = staged.holds.releasable()
    assert released == before  # no request runs

    outcome = roll_up(repo / ".git", tmp_path / "state", env=_env(), ours=released)

    assert outcome.problem is None
    assert outcome.made is not None and outcome.made not in before
    assert outcome.redundant == before
    # Nothing is removed yet (requests may be flowing), and no loose object ever is.
    assert _packs(repo) == before | {outcome.made}
    assert _loose(repo) == loose
    assert not (tmp_path / "state" / "rollup").exists()

    assert remove_packs(repo / ".git" / "objects" / "pack", outcome.redundant) == before
    assert _packs(repo) == {outcome.made}
    assert not list((repo / ".git" / "objects" / "pack").glob("*.keep"))
    assert _loose(repo) == loose
    for i, commit in enumerate(commits):  # the handle that saw the old packs still reads all
        assert handle[commit].tree[f"f{i}.txt"].data == f"file {i}\n".encode()
    assert git(repo, "show", "many:f5.txt") == "file 5\n"
    assert_fsck_clean(repo)


def test_packs_held_kept_by_others_or_promised_are_not_rolled(repo: Path, tmp_path: Path) -> None:
    _, staged, _ = _commits(repo, 5)
    names = sorted(_packs(repo))
    pack_dir = repo / ".git" / "objects" / "pack"
    theirs, promised, held = names[0], names[1], names[2]
    (pack_dir / f"{theirs}.keep").unlink()
    (pack_dir / f"{theirs}.keep").write_text("kept by someone else\n")
    (pack_dir / f"{promised}.promisor").write_text("")
    ours = staged.holds.releasable() - {theirs, promised, held}

    outcome = roll_up(repo / ".git", tmp_path / "state", env=_env(), ours=ours, held={held})

    assert outcome.problem is None
    assert outcome.redundant == set(names[3:])
    remove_packs(pack_dir, outcome.redundant)
    assert_fsck_clean(repo)


def test_a_single_pack_is_left_alone(repo: Path, tmp_path: Path) -> None:
    _, staged, _ = _commits(repo, 1)
    outcome = roll_up(repo / ".git", tmp_path / "state", env=_env(), ours=staged.holds.releasable())
    assert outcome.problem is None and outcome.made is None and outcome.redundant == set()


def test_without_git_it_says_what_to_do(repo: Path, tmp_path: Path) -> None:
    _, staged, _ = _commits(repo, 2)
    env = {**os.environ, "PATH": str(tmp_path / "no-such-dir")}
    outcome = roll_up(repo / ".git", tmp_path / "state", env=env, ours=staged.holds.releasable())
    assert outcome.problem is not None and "install git" in outcome.problem
    assert outcome.redundant == set()


def test_a_roll_up_that_hangs_is_stopped_at_its_timeout(repo: Path, tmp_path: Path) -> None:
    _, staged, _ = _commits(repo, 2)
    packs = _packs(repo)
    bin_dir = git_wrapper(tmp_path / "bin", pack_objects="sleep 60")
    started = time.monotonic()

    outcome = roll_up(
        repo / ".git",
        tmp_path / "state",
        env=_env(bin_dir),
        ours=staged.holds.releasable(),
        timeout=0.5,
    )

    assert time.monotonic() - started < 30  # not the 60 s git would have taken
    assert outcome.problem is not None
    assert "did not finish within 0.5 s and was stopped; the packs are as before" in outcome.problem
    assert "run `git gc`" in outcome.problem
    assert outcome.redundant == set()
    assert _packs(repo) == packs
    assert_fsck_clean(repo)


def test_a_cancelled_roll_up_is_stopped(repo: Path, tmp_path: Path) -> None:
    _, staged, _ = _commits(repo, 2)
    bin_dir = git_wrapper(tmp_path / "bin", pack_objects="sleep 60")
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()

    outcome = roll_up(
        repo / ".git",
        tmp_path / "state",
        env=_env(bin_dir),
        ours=staged.holds.releasable(),
        cancel=cancel,
    )

    assert outcome.problem == (
        "git pack-objects was stopped as the daemon stops; the packs are as before"
    )


def test_a_failing_roll_up_says_what_git_said(repo: Path, tmp_path: Path) -> None:
    _, staged, _ = _commits(repo, 2)
    bin_dir = git_wrapper(tmp_path / "bin", pack_objects="echo 'fatal: out of disk' >&2; exit 128")

    outcome = roll_up(
        repo / ".git", tmp_path / "state", env=_env(bin_dir), ours=staged.holds.releasable()
    )

    assert outcome.problem == (
        "git pack-objects failed (128: fatal: out of disk); the packs are as before — run "
        f"`git gc` in {repo / '.git'}"
    )
    assert outcome.redundant == set()


def test_nothing_is_removed_once_git_has_repacked_the_packs_a_roll_up_made(
    repo: Path, tmp_path: Path
) -> None:
    """git's own pack of every reachable object is rolled with one of the daemon's; then
    ``git repack -a -d`` removes the rolled pack and writes its pack again, under the same
    name (a content hash). Removing that name as redundant would remove every object:
    nothing of the roll-up is removed."""
    git(repo, "repack", "-a", "-d", "-q")
    [gits] = _packs(repo)
    handle = pygit2.Repository(str(repo))
    staged = StagedObjects.attach(handle)
    for i in range(6):  # objects no ref names: git's next repack drops them
        handle.create_blob(f"scratch {i}\n".encode())
    staged.flush()
    outcome = roll_up(repo / ".git", tmp_path / "state", env=_env(), ours=staged.holds.releasable())
    assert outcome.made is not None and gits in outcome.redundant

    git(repo, "repack", "-a", "-d", "-q")

    pack_dir = repo / ".git" / "objects" / "pack"
    assert outcome.made not in _packs(repo)
    assert still_redundant(pack_dir, [outcome]) == set()
    remove_packs(pack_dir, still_redundant(pack_dir, [outcome]))
    assert git(repo, "cat-file", "-t", "HEAD") == "commit\n"
    assert_fsck_clean(repo)


def test_what_a_roll_up_made_redundant_goes_while_its_pack_is_there(
    repo: Path, tmp_path: Path
) -> None:
    _, staged, _ = _commits(repo, 4)
    outcome = roll_up(repo / ".git", tmp_path / "state", env=_env(), ours=staged.holds.releasable())
    pack_dir = repo / ".git" / "objects" / "pack"
    assert still_redundant(pack_dir, [outcome]) == outcome.redundant != set()
