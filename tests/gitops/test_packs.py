"""Objects staged in memory and written as one pack: git must read them as its own."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pygit2
import pytest

from gitmode_fixtures import FILES, assert_fsck_clean, git, make_repo
from redline.gitops import packs, refs
from redline.gitops.packs import KEEP_MARK, StagedObjects, write_pack
from redline.gitops.writer import Writer


def _loose(repo: Path) -> set[str]:
    objects = repo / ".git" / "objects"
    return {f"{d.name}{f.name}" for d in objects.iterdir() if len(d.name) == 2 for f in d.iterdir()}


def _packs(repo: Path) -> list[str]:
    return sorted(p.stem for p in (repo / ".git" / "objects" / "pack").glob("*.idx"))


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


def test_a_ref_never_names_an_object_still_in_memory(repo: Path) -> None:
    handle = pygit2.Repository(str(repo))
    staged = StagedObjects.attach(handle)
    commit = _commit_file(handle, "new.txt", b"new\n")
    assert staged.pending == 3

    refs.update(handle, "refs/heads/moved", None, commit, "test: move", writer=Writer(staged))

    assert staged.pending == 0
    assert git(repo, "show", "moved:new.txt") == "new\n"  # a process of its own reads it
    assert_fsck_clean(repo)


# --- what a write leaves, and what holds a pack ------------------------------------------


def _names(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()} if folder.is_dir() else set()


def _full_on(call: int) -> tuple[list[int], object]:
    """A ``write_all`` that fails as a full disk does on its ``call``-th use."""
    calls: list[int] = []
    real = packs.write_all

    def write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
        calls.append(fd)
        if len(calls) == call:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(fd, data)

    return calls, write_all


@pytest.mark.parametrize("failing", [1, 2, 3], ids=["keep", "pack", "index"])
def test_a_failed_flush_leaves_nothing_in_the_way_of_the_next(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: int
) -> None:
    """A full disk at any file of a flush: no temporary, no pack without its index, no
    .keep is left, the objects stay staged, and the next flush writes them."""
    handle = pygit2.Repository(str(repo))
    staging = tmp_path / "staging"
    staged = StagedObjects.attach(handle, staging)
    pack_dir = repo / ".git" / "objects" / "pack"
    before = _names(pack_dir)
    commit = _commit_file(handle, "new.txt", b"new\n")
    _, full = _full_on(failing)
    monkeypatch.setattr(packs, "write_all", full)
    with pytest.raises(OSError, match="No space left on device"):
        staged.flush()
    assert _names(pack_dir) == before
    assert _names(staging) == set()
    assert staged.pending == 3

    monkeypatch.undo()
    staged.flush()  # the same pack, by the same names: nothing is in its way
    assert staged.pending == 0
    [name] = {p.stem for p in pack_dir.glob("*.idx")} - {n[:-4] for n in before}
    assert _names(pack_dir) - before == {f"{name}.pack", f"{name}.idx", f"{name}.keep"}
    handle.references.create("refs/heads/added", commit)
    assert git(repo, "show", "added:new.txt") == "new\n"
    assert_fsck_clean(repo)


def test_a_pack_is_written_beside_and_renamed_in_whole(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No name in objects/pack ever names a half-written file (or one that goes away): a
    local clone copying the folder meanwhile finds every file it listed."""
    handle = pygit2.Repository(str(repo))
    staging = tmp_path / "staging"
    staged = StagedObjects.attach(handle, staging)
    moves: list[tuple[str, str]] = []
    real = os.replace

    def replace(source: str | Path, target: str | Path) -> None:
        moves.append((str(source), str(target)))
        real(source, target)

    monkeypatch.setattr(packs.os, "replace", replace)
    handle.create_blob(b"blob\n")
    staged.flush()
    pack_dir = repo / ".git" / "objects" / "pack"
    assert [Path(s).parent for s, _ in moves] == [staging, staging]
    assert [Path(t).suffix for _, t in moves] == [".pack", ".idx"]  # the index last
    assert {Path(t).parent for _, t in moves} == {pack_dir}


def test_each_pack_is_kept_until_no_request_that_may_use_it_runs(repo: Path) -> None:
    handle = pygit2.Repository(str(repo))
    staged = StagedObjects.attach(handle)
    holds = staged.holds
    pack_dir = repo / ".git" / "objects" / "pack"

    first = holds.begin()  # a request starts...
    handle.create_blob(b"one\n")
    staged.flush()
    [one] = holds.held()
    assert (pack_dir / f"{one}.keep").read_bytes() == KEEP_MARK
    second = holds.begin()  # ...another starts (another session)...
    handle.create_blob(b"two\n")
    staged.flush()
    [two] = holds.held() - {one}
    holds.end(second)  # ...and ends first: either pack may hold the first one's objects
    assert holds.releasable() == set()
    holds.end(first)
    assert holds.releasable() == {one, two}

    assert holds.release() == {one, two}
    assert not list(pack_dir.glob("*.keep"))
    assert holds.held() == set()


def test_packs_a_previous_daemon_kept_are_let_go_and_others_are_not(repo: Path) -> None:
    pack_dir = repo / ".git" / "objects" / "pack"
    pack_dir.mkdir(parents=True, exist_ok=True)
    (pack_dir / "pack-1111.keep").write_bytes(KEEP_MARK)
    (pack_dir / "pack-2222.keep").write_bytes(b"receive-pack 123 on host\n")  # git's own
    staged = StagedObjects.attach(pygit2.Repository(str(repo)))
    staged.holds.adopt_leftovers()
    assert staged.holds.release() == {"pack-1111"}
    assert _names(pack_dir) == {"pack-2222.keep"}


def _mapped_packs(pack_dir: Path) -> tuple[int, int]:
    """How many mappings of this process are of files in ``pack_dir``, and how many of
    those files are deleted (Linux's /proc/self/maps)."""
    lines = [
        line
        for line in Path("/proc/self/maps").read_text().splitlines()
        if str(pack_dir.resolve()) in line
    ]
    return len(lines), sum(line.endswith("(deleted)") for line in lines)


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc/self/maps")
def test_a_fresh_object_database_forgets_removed_packs_and_keeps_serving_the_store(
    repo: Path,
) -> None:
    """libgit2 keeps every pack it has found mapped for the life of an object database,
    deleted or not; :meth:`StagedObjects.reopen` gives the repository a new one that lists
    the packs there are now, with the staged objects still served and still written."""
    handle = pygit2.Repository(str(repo))
    staged = StagedObjects.attach(handle)
    pack_dir = repo / ".git" / "objects" / "pack"
    blobs = []
    for i in range(12):
        blobs.append(handle.create_blob(f"blob {i}\n".encode()))
        staged.flush()
        handle.references.create(f"refs/tags/b{i}", blobs[-1])
        assert handle[blobs[0]].data == b"blob 0\n"  # every pack so far in libgit2's list
    for keep in pack_dir.glob("*.keep"):
        keep.unlink()
    git(repo, "repack", "-a", "-d", "-q")  # another program rolls them all into one
    assert len(_packs(repo)) == 1
    assert _mapped_packs(pack_dir)[1] >= 12  # the removed packs stay mapped...

    staged.reopen(handle)

    assert _mapped_packs(pack_dir)[1] == 0  # ...until the database is a fresh one
    assert [handle[b].data for b in blobs] == [f"blob {i}\n".encode() for i in range(12)]
    # A pack written by another program after the reopening is found too.
    (repo / "late.txt").write_text("written by git\n")
    late = git(repo, "hash-object", "-w", "late.txt").strip()
    git(repo, "tag", "late", late)
    git(repo, "repack", "-d", "-q")
    assert late not in _loose(repo)
    assert handle[late].data == b"written by git\n"
    # What is staged is served before the flush and written by it, as before.
    staged_blob = handle.create_blob(b"staged after the reopening\n")
    assert staged.pending == 1 and handle[staged_blob].data == b"staged after the reopening\n"
    staged.reopen(handle)  # with an object staged: still served
    assert handle[staged_blob].data == b"staged after the reopening\n"
    staged.flush()
    assert git(repo, "cat-file", "-p", str(staged_blob)) == "staged after the reopening\n"
    assert_fsck_clean(repo)
