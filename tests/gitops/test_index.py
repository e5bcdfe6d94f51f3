"""Staging by patching index entries in place: git must read the result as its own."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pygit2
import pytest

from redline.gitops.index import IndexPatcher, repair_checksum


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout


def _repo(tmp_path: Path, index_version: int = 2) -> Path:
    root = tmp_path / "r"
    root.mkdir(parents=True)
    _git(root, "init", "-q", "-b", "main")
    _git(root, "config", "user.name", "T")
    _git(root, "config", "user.email", "t@example.com")
    _git(root, "config", "index.version", str(index_version))
    for i in range(30):
        (root / f"d{i % 3}").mkdir(exist_ok=True)
        (root / f"d{i % 3}" / f"f{i}.txt").write_text(f"line {i}\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "init")
    _git(root, "status")  # lets git write its cache-tree extension
    return root


def _stage(root: Path, path: str, content: bytes, patcher: IndexPatcher) -> bool:
    (root / path).write_bytes(content)
    blob = pygit2.Repository(str(root)).create_blob(content)  # as redline writes it
    return patcher.stage(root, {path: (blob.raw, 0o100644)})


def test_patched_entries_are_what_git_reads(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    patcher = IndexPatcher(root / ".git" / "index")
    assert _stage(root, "d1/f4.txt", b"changed\n", patcher)
    assert _stage(root, "d2/f5.txt", b"also changed\n", patcher)
    staged = _git(root, "ls-files", "-s", "d1/f4.txt", "d2/f5.txt").split("\n")
    assert staged[0].split()[1] == str(pygit2.hash(b"changed\n"))
    assert staged[1].split()[1] == str(pygit2.hash(b"also changed\n"))
    # Nothing unstaged: the stat data matches the files on disk.
    assert _git(root, "diff", "--name-only") == ""
    assert sorted(_git(root, "diff", "--cached", "--name-only").split()) == [
        "d1/f4.txt",
        "d2/f5.txt",
    ]
    _git(root, "fsck", "--strict")  # git verifies the index checksum here
    assert pygit2.Repository(str(root)).status() == {
        "d1/f4.txt": pygit2.enums.FileStatus.INDEX_MODIFIED,
        "d2/f5.txt": pygit2.enums.FileStatus.INDEX_MODIFIED,
    }


def test_a_rewritten_index_is_read_again(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    patcher = IndexPatcher(root / ".git" / "index")
    assert _stage(root, "d0/f0.txt", b"one\n", patcher)
    (root / "d0" / "f3.txt").write_text("by git\n")
    _git(root, "add", "d0/f3.txt")  # git rewrites the index behind the patcher's back
    assert _stage(root, "d0/f0.txt", b"two\n", patcher)
    assert _git(root, "diff", "--name-only") == ""
    assert "d0/f3.txt" in _git(root, "diff", "--cached", "--name-only")


def test_unknown_paths_and_index_v4_fall_back(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    patcher = IndexPatcher(root / ".git" / "index")
    before = (root / ".git" / "index").read_bytes()
    assert not _stage(root, "new.txt", b"new\n", patcher)
    assert (root / ".git" / "index").read_bytes() == before
    v4 = _repo(tmp_path / "v4", index_version=4)
    assert not _stage(v4, "d0/f0.txt", b"x\n", IndexPatcher(v4 / ".git" / "index"))


def test_a_held_index_lock_is_left_to_its_owner(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    lock = root / ".git" / "index.lock"
    lock.write_bytes(b"")
    assert not _stage(root, "d0/f0.txt", b"x\n", IndexPatcher(root / ".git" / "index"))
    assert lock.read_bytes() == b""


def test_checksums_stay_right_across_patches_anywhere_in_a_large_index(tmp_path: Path) -> None:
    root = tmp_path / "big"
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    for i in range(2500):  # an index of ~200 KiB: several checksum chunks
        folder = root / f"dir{i // 100:02d}"
        folder.mkdir(exist_ok=True)
        (folder / f"file{i:04d}.txt").write_text(f"{i}\n")
    _git(root, "add", "-A")
    patcher = IndexPatcher(root / ".git" / "index")
    for n, i in enumerate((2400, 10, 1300, 2499, 0, 1301)):
        path = f"dir{i // 100:02d}/file{i:04d}.txt"
        assert _stage(root, path, f"changed {n}\n".encode(), patcher)
        _git(root, "fsck", "--strict", "--no-dangling")  # verifies the index checksum
        assert _git(root, "diff", "--name-only") == ""


def test_later_patches_overwrite_the_entries_in_the_index_itself(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    index = root / ".git" / "index"
    patcher = IndexPatcher(index)
    assert _stage(root, "d0/f0.txt", b"first\n", patcher)  # drops the cache tree: whole
    written = index.stat()
    assert _stage(root, "d1/f1.txt", b"second\n", patcher)
    assert _stage(root, "d0/f0.txt", b"third\n", patcher)
    patched = index.stat()
    assert (patched.st_ino, patched.st_size) == (written.st_ino, written.st_size)
    assert not (root / ".git" / "index.lock").exists()
    staged = _git(root, "ls-files", "-s", "d0/f0.txt", "d1/f1.txt").split("\n")
    assert staged[0].split()[1] == str(pygit2.hash(b"third\n"))
    assert staged[1].split()[1] == str(pygit2.hash(b"second\n"))
    assert _git(root, "diff", "--name-only") == ""
    _git(root, "fsck", "--strict", "--no-dangling")
    pygit2.Repository(str(root)).index.read(force=True)  # libgit2 checks the checksum too


def test_a_patch_torn_before_its_checksum_is_repaired(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    index = root / ".git" / "index"
    patcher = IndexPatcher(index)
    assert _stage(root, "d0/f0.txt", b"first\n", patcher)
    assert not repair_checksum(index)  # a sound index is left alone
    good = index.read_bytes()
    assert _stage(root, "d2/f2.txt", b"second\n", patcher)
    torn = bytearray(index.read_bytes())
    torn[-20:] = good[-20:]  # killed after the entry was written, before the checksum
    index.write_bytes(torn)
    with pytest.raises(pygit2.GitError):
        pygit2.Repository(str(root)).index.read(force=True)
    assert repair_checksum(index)
    assert index.read_bytes()[:-20] == torn[:-20]
    _git(root, "fsck", "--strict", "--no-dangling")
    assert _git(root, "diff", "--name-only") == ""
    assert "d2/f2.txt" in _git(root, "diff", "--cached", "--name-only")
    pygit2.Repository(str(root)).index.read(force=True)
