"""fsops.files: paths confined to the root, atomic writes that keep the file's mode."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from redline.engine.errors import RequestError
from redline.fsops.files import resolve, write_atomic


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "a.py").write_text("a = 1\n")
    (root / "pkg" / "sub" / "deep.py").write_text("deep = 1\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    (root / "escape.txt").symlink_to(outside / "secret.txt")
    (root / "escape_dir").symlink_to(outside, target_is_directory=True)
    (root / "alias.py").symlink_to("pkg/sub/deep.py")
    return root


def _refused(root: Path, relative: str) -> RequestError:
    with pytest.raises(RequestError) as info:
        resolve(root, relative)
    assert info.value.field == "path"
    return info.value


# --- refusals ------------------------------------------------------------------


def test_absolute_path_is_refused(root: Path, tmp_path: Path) -> None:
    error = _refused(root, str(tmp_path / "outside" / "secret.txt"))
    assert "is absolute" in str(error)
    assert "relative to the root" in str(error)


@pytest.mark.parametrize("relative", ["/etc/passwd", "\\windows\\system.ini", "C:\\x.py", "c:x"])
def test_absolute_spellings_are_refused(root: Path, relative: str) -> None:
    assert "is absolute" in str(_refused(root, relative))


@pytest.mark.parametrize(
    "relative", ["../outside/secret.txt", "pkg/../../outside/secret.txt", "..", "pkg/../a.py"]
)
def test_dotdot_is_refused(root: Path, relative: str) -> None:
    # Even a '..' that would land back inside the root: the rule is simple and stated.
    assert "'..' is not allowed" in str(_refused(root, relative))


@pytest.mark.parametrize("relative", ["a.py\x00", "\x00"])
def test_nul_is_refused(root: Path, relative: str) -> None:
    assert "NUL byte" in str(_refused(root, relative))


def test_empty_is_refused(root: Path) -> None:
    assert str(_refused(root, "")) == "path is empty; name a file relative to the root"


@pytest.mark.parametrize("relative", ["escape.txt", "escape_dir/secret.txt"])
def test_symlink_escaping_the_root_is_refused(root: Path, relative: str) -> None:
    error = _refused(root, relative)
    assert "outside the root through a symbolic link" in str(error)


@pytest.mark.parametrize("relative", ["pkg", "pkg/sub"])
def test_directory_is_refused(root: Path, relative: str) -> None:
    assert "is a directory; name a file" in str(_refused(root, relative))


def test_the_root_itself_is_refused(root: Path) -> None:
    assert "'.' names the root itself, not a file" in str(_refused(root, "."))


@pytest.mark.parametrize("relative", ["pkg/", "pkg/mod.py/", "a.py\\"])
def test_trailing_slash_is_refused(root: Path, relative: str) -> None:
    assert "ends with a slash; name a file" in str(_refused(root, relative))


@pytest.mark.parametrize("relative", ["missing.py", "pkg/missing.py", "nodir/x.py"])
def test_missing_file_is_refused(root: Path, relative: str) -> None:
    error = _refused(root, relative)
    assert "does not exist" in str(error)
    assert "check the path" in str(error)


def test_dangling_symlink_is_a_missing_file(root: Path) -> None:
    (root / "dangling.py").symlink_to("nowhere.py")
    assert "does not exist" in str(_refused(root, "dangling.py"))


# --- acceptance ----------------------------------------------------------------


def test_plain_and_nested_paths_resolve(root: Path) -> None:
    assert resolve(root, "a.py") == (root / "a.py").resolve()
    assert resolve(root, "pkg/sub/deep.py") == (root / "pkg/sub/deep.py").resolve()
    assert resolve(root, "./pkg//sub/deep.py") == (root / "pkg/sub/deep.py").resolve()


def test_symlink_inside_the_root_resolves_to_its_target(root: Path) -> None:
    assert resolve(root, "alias.py") == (root / "pkg" / "sub" / "deep.py").resolve()


def test_root_given_through_a_symlink(root: Path, tmp_path: Path) -> None:
    link = tmp_path / "root_link"
    link.symlink_to(root, target_is_directory=True)
    assert resolve(link, "pkg/sub/deep.py") == (root / "pkg/sub/deep.py").resolve()
    assert "symbolic link" in str(_refused(link, "escape.txt"))


# --- write_atomic --------------------------------------------------------------


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if "redline-tmp" in p.name)


@pytest.mark.parametrize("mode", [0o755, 0o644, 0o600, 0o640])
def test_write_atomic_keeps_mode_and_replaces_content(tmp_path: Path, mode: int) -> None:
    target = tmp_path / "script.sh"
    target.write_bytes(b"#!/bin/sh\necho old\n")
    target.chmod(mode)
    write_atomic(target, b"#!/bin/sh\necho new\n")
    assert target.read_bytes() == b"#!/bin/sh\necho new\n"
    assert stat.S_IMODE(target.stat().st_mode) == mode
    assert _leftovers(tmp_path) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["script.sh"]


def test_write_atomic_replaces_the_inode(tmp_path: Path) -> None:
    # A reader holding the old file keeps seeing the old bytes: nothing is half-written.
    target = tmp_path / "a.txt"
    target.write_bytes(b"old\n")
    with target.open("rb") as reader:
        write_atomic(target, b"new content\n")
        assert reader.read() == b"old\n"
    assert target.read_bytes() == b"new content\n"


def test_write_atomic_arbitrary_bytes(tmp_path: Path) -> None:
    target = tmp_path / "blob"
    target.write_bytes(b"x")
    data = bytes(range(256)) * 3 + b"\r\n\x00"
    write_atomic(target, data)
    assert target.read_bytes() == data
    write_atomic(target, b"")
    assert target.read_bytes() == b""
    assert _leftovers(tmp_path) == []


def test_write_atomic_failure_leaves_no_temp_file(tmp_path: Path) -> None:
    # os.replace cannot put a file over a directory: the error propagates and the
    # temporary file is cleaned up.
    target = tmp_path / "adir"
    target.mkdir()
    (target / "keep.txt").write_text("keep\n")
    with pytest.raises(OSError):
        write_atomic(target, b"data")
    assert (target / "keep.txt").read_text() == "keep\n"
    assert _leftovers(tmp_path) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_write_atomic_in_read_only_directory_fails_cleanly(tmp_path: Path) -> None:
    directory = tmp_path / "ro"
    directory.mkdir()
    target = directory / "a.txt"
    target.write_bytes(b"old\n")
    directory.chmod(0o555)
    try:
        with pytest.raises(PermissionError):
            write_atomic(target, b"new\n")
        assert target.read_bytes() == b"old\n"
    finally:
        directory.chmod(0o755)
    assert _leftovers(directory) == []
