"""Objects staged in memory and written as one pack: git must read them as its own."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pygit2
import pytest

from gitmode_fixtures import FILES, assert_fsck_clean, git, git_wrapper, make_repo
from redline.gitops import refs
from redline.gitops.gitenv import without_git_redirects
from redline.gitops.packs import StagedObjects, consolidate, write_pack
from redline.gitops.writer import Writer


def _loose(repo: Path) -> set[str]:
    objects = repo / ".git" / "objects"
    return {f"{d.name}{f.name}" for d in objects.iterdir() if len(d.name) == 2 for f in d.iterdir()}


def _packs(repo: Path) -> list[str]:
    return sorted(p.stem for p in (repo / ".git" / "objects" / "pack").glob("*.idx"))


def _path_first(bin_dir: Path) -> dict[str, str]:
    """This environment for git, with ``bin_dir`` first on PATH."""
    env = without_git_redirects(os.environ)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    return env


def _commit_file(repo: pygit2.Repository, name: str, data: bytes) -> pygit2.Oid:
    """A commit on top of HEAD that adds ``name``, made the way the daemon makes them."""
    head = repo.head.peel(pygit2.Commit)
    builder = repo.TreeBuilder(head.tree)
    builder.insert(name, repo.create_blob(data), pygit2.enums.FileMode.BLOB)
    sig = pygit2.Signature("T", "t@example.com", 1_700_000_000, 0)
    return repo.create_commit(None, sig, sig, f"add {name}\n", builder.write(), [head.id])


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", FILES)


def test_staged_objects_are_served_from_memory_then_written_as_one_pack(repo: Path) -> None:
    handle = pygit2.Repository(str(repo))
    staged = StagedObjects.attach(handle)
    loose, packs = _loose(repo), _packs(repo)
    big = os.urandom(70_000)  # a size that takes several bytes of the entry header
    commit = _commit_file(handle, "big.bin", big)
    assert staged.pending == 3  # blob, tree, commit: nothing on disk yet
    assert (_loose(repo), _packs(repo)) == (loose, packs)
    # Read back before the flush, by full id and by a short one.
    assert handle[commit].tree["big.bin"].data == big
    assert handle.revparse_single(str(commit)[:10]).id == commit

    staged.flush()

    assert staged.pending == 0 and staged.written == 1
    assert _loose(repo) == loose
    [new] = set(_packs(repo)) - set(packs)
    assert handle[commit].tree["big.bin"].data == big  # the same handle finds the new pack
    handle.references.create("refs/heads/added", commit)
    assert git(repo, "cat-file", "-s", "added:big.bin") == f"{len(big)}\n"
    assert git(repo, "rev-parse", "added^{tree}") == f"{handle[commit].tree.id}\n"
    verified = git(repo, "verify-pack", "-v", str(repo / ".git/objects/pack" / f"{new}.idx"))
    assert "non delta: 3 objects" in verified
    assert_fsck_clean(repo)
    staged.flush()  # nothing staged: no empty pack
    assert len(_packs(repo)) == len(packs) + 1


def test_write_pack_holds_every_kind_of_object(tmp_path: Path, repo: Path) -> None:
    source = pygit2.Repository(str(repo))
    head = source.head.peel(pygit2.Commit)
    objects = {
        obj.id: (obj.type, obj.read_raw())
        for obj in (head, head.tree, source[head.tree["a.py"].id], source[head.tree["docs"].id])
    }
    target = make_repo(tmp_path / "other", {"x.txt": "x\n"})
    name = write_pack(target / ".git" / "objects" / "pack", objects)
    assert (target / ".git" / "objects" / "pack" / f"{name}.pack").is_file()
    for oid in objects:
        assert git(target, "cat-file", "-t", str(oid)).strip() in ("commit", "tree", "blob")
    assert git(target, "cat-file", "-p", f"{head.id}:a.py") == FILES["a.py"]


def test_a_pack_half_written_by_a_killed_process_is_removed(repo: Path) -> None:
    pack_dir = repo / ".git" / "objects" / "pack"
    pack_dir.mkdir(exist_ok=True)
    leftover = pack_dir / "tmp_pack_redline_pack-0123.pack"
    leftover.write_bytes(b"PACK\x00")
    StagedObjects.attach(pygit2.Repository(str(repo)))
    assert not leftover.exists()
    assert_fsck_clean(repo)


def test_consolidation_rolls_small_packs_together_under_a_live_handle(repo: Path) -> None:
    handle = pygit2.Repository(str(repo))
    staged = StagedObjects.attach(handle)
    commits = []
    for i in range(6):
        commits.append(_commit_file(handle, f"f{i}.txt", f"file {i}\n".encode()))
        staged.flush()
    handle.references.create("refs/heads/many", commits[-1])
    before = len(_packs(repo))

    assert consolidate(repo / ".git", env=without_git_redirects(os.environ)) is None

    assert len(_packs(repo)) < before
    for i, commit in enumerate(commits):  # the handle that saw the old packs still reads all
        assert handle[commit].tree[f"f{i}.txt"].data == f"file {i}\n".encode()
    assert_fsck_clean(repo)


def test_consolidation_without_git_says_what_to_do(repo: Path) -> None:
    env = {**os.environ, "PATH": str(repo / "no-such-dir")}
    problem = consolidate(repo / ".git", env=env)
    assert problem is not None and "install git" in problem


def test_a_repack_that_hangs_is_stopped_at_its_timeout(repo: Path, tmp_path: Path) -> None:
    bin_dir = git_wrapper(tmp_path / "bin", repack="sleep 60")
    env = _path_first(bin_dir)
    packs = _packs(repo)
    started = time.monotonic()

    problem = consolidate(repo / ".git", env=env, timeout=0.5)

    assert time.monotonic() - started < 30  # not the 60 s git would have taken
    assert problem is not None
    assert "did not finish within 0.5 s and was stopped; the packs are as before" in problem
    assert "run `git gc`" in problem
    assert _packs(repo) == packs
    assert_fsck_clean(repo)


def test_a_cancelled_repack_is_stopped(repo: Path, tmp_path: Path) -> None:
    bin_dir = git_wrapper(tmp_path / "bin", repack="sleep 60")
    env = _path_first(bin_dir)
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()

    problem = consolidate(repo / ".git", env=env, timeout=60, cancel=cancel)

    assert problem == "git repack was stopped as the daemon stops; the packs are as before"


def test_a_failing_repack_says_what_git_said(repo: Path, tmp_path: Path) -> None:
    bin_dir = git_wrapper(tmp_path / "bin", repack="echo 'fatal: out of disk' >&2; exit 128")
    env = _path_first(bin_dir)

    problem = consolidate(repo / ".git", env=env)

    git_dir = repo / ".git"
    assert problem == f"git repack failed (128: fatal: out of disk); run `git gc` in {git_dir}"


def test_a_ref_never_names_an_object_still_in_memory(repo: Path) -> None:
    handle = pygit2.Repository(str(repo))
    staged = StagedObjects.attach(handle)
    commit = _commit_file(handle, "new.txt", b"new\n")
    assert staged.pending == 3

    refs.update(handle, "refs/heads/moved", None, commit, "test: move", writer=Writer(staged))

    assert staged.pending == 0
    assert git(repo, "show", "moved:new.txt") == "new\n"  # a process of its own reads it
    assert_fsck_clean(repo)
