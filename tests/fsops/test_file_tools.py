"""Embedded write, delete and read (fsops.apply.apply_in_directory) on a real folder."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from redline.engine.read import ReadRequest
from redline.engine.write import DeleteRequest, WriteRequest, plan_file
from redline.fsops.apply import apply_in_directory
from redline.fsops.patch import DirectorySnapshot, land


def snapshot_of(root: Path) -> dict[str, Any]:
    """Every entry under ``root`` (not following links): bytes, link target, or a folder."""
    out: dict[str, Any] = {}
    for path in sorted(root.rglob("*")):
        name = path.relative_to(root).as_posix()
        if path.is_symlink():
            out[name] = ("link", os.readlink(path))
        elif path.is_dir():
            out[name] = "dir"
        elif path.is_file():
            out[name] = (path.read_bytes(), stat.S_IMODE(path.stat().st_mode))
        else:
            out[name] = "special"
    return out


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_bytes(b"print('hi')\r\n")
    (root / "run.sh").write_bytes(b"#!/bin/sh\necho one\n")
    (root / "run.sh").chmod(0o755)
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_bytes(b"[core]\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_bytes(b"secret\n")
    (root / "out").symlink_to(outside, target_is_directory=True)
    (root / "alias.py").symlink_to("src/app.py")
    return root


def test_write_creates_a_file_and_its_folders_inside_the_root(root: Path) -> None:
    result = apply_in_directory(root, WriteRequest("pkg/sub/new.py", "x = 1\n"))
    assert result.status == "applied", result.error
    assert (root / "pkg" / "sub" / "new.py").read_bytes() == b"x = 1\n"
    assert result.path == "pkg/sub/new.py"
    assert result.diff == "--- /dev/null\n+++ b/pkg/sub/new.py\n@@ -0,0 +1 @@\n+x = 1\n"
    assert not [p for p in root.rglob("*") if "redline-tmp" in p.name]


def test_an_absolute_path_inside_the_root_is_reported_relative(root: Path) -> None:
    result = apply_in_directory(root, WriteRequest(str(root / "src" / "app.py"), "x\n"))
    assert result.status == "applied"
    assert result.path == "src/app.py"


def test_overwrite_keeps_mode_and_line_endings(root: Path) -> None:
    result = apply_in_directory(root, WriteRequest("run.sh", "#!/bin/sh\necho two\n"))
    assert result.status == "applied"
    assert stat.S_IMODE((root / "run.sh").stat().st_mode) == 0o755
    crlf = apply_in_directory(root, WriteRequest("src/app.py", "print('bye')\n"))
    assert crlf.line_ending == "crlf"
    assert (root / "src" / "app.py").read_bytes() == b"print('bye')\r\n"


@pytest.mark.parametrize(
    ("path", "says"),
    [
        ("out/secret.txt", "resolves outside the root through a symbolic link ('out')"),
        ("out/new.txt", "resolves outside the root through a symbolic link ('out')"),
        ("alias.py", "is a symbolic link ('alias.py'); only regular files are changed here"),
        (".git/config", "is inside a .git directory"),
        (".git/hooks/pre-commit", "is inside a .git directory"),
        ("../outside/secret.txt", "contains '..'"),
        ("src", "'src' is a directory; write works on one file"),
        ("run.sh/inner.txt", "'run.sh' is a file, so nothing can be inside it"),
        ("logo.png", "'logo.png' is a binary file"),
    ],
)
def test_write_refusals_change_nothing(root: Path, path: str, says: str) -> None:
    before = snapshot_of(root.parent)
    result = apply_in_directory(root, WriteRequest(path, "HACKED\n"))
    assert result.status == "invalid"
    assert result.error is not None and says in result.error, result.error
    assert snapshot_of(root.parent) == before


def test_delete_removes_one_regular_file(root: Path) -> None:
    result = apply_in_directory(root, DeleteRequest("src/app.py"))
    assert result.status == "applied"
    assert not (root / "src" / "app.py").exists()
    assert (root / "src").is_dir()  # the folder stays, as a patch's Delete leaves it
    assert result.diff is not None and result.diff.startswith("--- a/src/app.py\n+++ /dev/null")
    binary = apply_in_directory(root, DeleteRequest("logo.png"))
    assert binary.status == "applied" and not (root / "logo.png").exists()


@pytest.mark.parametrize(
    ("path", "says"),
    [
        ("src", "'src' is a directory; delete works on one file"),
        ("missing.py", "file 'missing.py' does not exist; nothing was deleted"),
        ("alias.py", "is a symbolic link ('alias.py')"),
        ("out/secret.txt", "resolves outside the root"),
        (".git/config", "is inside a .git directory"),
    ],
)
def test_delete_refusals_change_nothing(root: Path, path: str, says: str) -> None:
    before = snapshot_of(root.parent)
    result = apply_in_directory(root, DeleteRequest(path))
    assert result.status == "invalid"
    assert result.error is not None and says in result.error, result.error
    assert snapshot_of(root.parent) == before


def test_a_fifo_is_neither_written_deleted_nor_read(root: Path) -> None:
    os.mkfifo(root / "pipe")
    for request in (WriteRequest("pipe", "x\n"), DeleteRequest("pipe"), ReadRequest("pipe")):
        result = apply_in_directory(root, request)
        assert result.status == "invalid"
        assert result.error is not None and "is not a regular file" in result.error
    assert stat.S_ISFIFO(os.lstat(root / "pipe").st_mode)


def test_dry_run_writes_nothing(root: Path) -> None:
    before = snapshot_of(root)
    for request in (
        WriteRequest("new/dir/file.txt", "x\n"),
        WriteRequest("src/app.py", "changed\n"),
        DeleteRequest("run.sh"),
    ):
        result = apply_in_directory(root, request, dry_run=True)
        assert result.status == "applied"
        assert result.dry_run is True
        assert result.diff
    assert snapshot_of(root) == before


def test_a_file_changed_after_planning_is_not_overwritten(root: Path) -> None:
    snapshot = DirectorySnapshot(root)
    outcome = plan_file(WriteRequest("src/app.py", "mine\n"), snapshot)

    def someone_else() -> None:
        (root / "src" / "app.py").write_bytes(b"theirs\n")

    result = land(snapshot, outcome, before_write=someone_else)
    assert result.status == "failed"
    assert result.error is not None and "changed after planning" in result.error
    assert (root / "src" / "app.py").read_bytes() == b"theirs\n"


def test_read_follows_links_inside_the_root_as_an_edit_does(root: Path) -> None:
    result = apply_in_directory(root, ReadRequest("alias.py"))
    assert result.status == "read"
    assert result.content == "     1\tprint('hi')"
    assert result.line_ending == "crlf"
    assert result.dry_run is False


@pytest.mark.parametrize(
    ("path", "says"),
    [
        ("out/secret.txt", "resolves outside the root"),
        (".git/config", "is inside a .git directory"),
        ("src", "'src' is a directory; read works on one file"),
        ("nope.py", "file 'nope.py' does not exist; to create it, use write"),
        ("run.sh/x", "file 'run.sh/x' does not exist"),
        ("logo.png", "'logo.png' is a binary file"),
    ],
)
def test_read_refusals(root: Path, path: str, says: str) -> None:
    result = apply_in_directory(root, ReadRequest(path))
    assert result.status == "invalid"
    assert result.error is not None and says in result.error, result.error
    assert result.content is None
