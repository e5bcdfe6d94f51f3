"""fsops.patch: apply_patch on a real directory — atomic writes, verification, rollback."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

import redline.fsops.patch as fs_patch
from redline.fsops.patch import apply_patch_in_directory

Tree = dict[str, bytes | str | None]  # file bytes, symlink target, or None for a directory


def tree(root: Path) -> Tree:
    """Every entry under ``root``: files by content, links by target, directories as None."""
    out: Tree = {}
    for path in sorted(root.rglob("*")):
        name = path.relative_to(root).as_posix()
        if path.is_symlink():
            out[name] = os.readlink(path)
        elif path.is_dir():
            out[name] = None
        else:
            out[name] = path.read_bytes()
    return out


def leftovers(root: Path) -> list[str]:
    return sorted(p.name for p in root.rglob("*") if "redline-tmp" in p.name)


def patch(*sections: str) -> str:
    return "*** Begin Patch\n" + "".join(sections) + "*** End Patch\n"


def update(path: str, *lines: str, move_to: str | None = None) -> str:
    move = f"*** Move to: {move_to}\n" if move_to else ""
    return f"*** Update File: {path}\n{move}" + "".join(line + "\n" for line in lines)


def add(path: str, *lines: str) -> str:
    return f"*** Add File: {path}\n" + "".join("+" + line + "\n" for line in lines)


def delete(path: str) -> str:
    return f"*** Delete File: {path}\n"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "src").mkdir(parents=True)
    (root / "a.txt").write_bytes(b"alpha\n")
    (root / "b.txt").write_bytes(b"beta\r\nline two\r\n")
    (root / "c.txt").write_bytes(b"gamma\n")
    (root / "src" / "app.py").write_bytes(b"def main():\n    return 1\n")
    return root


# --- writing -----------------------------------------------------------------------------


def test_applies_every_kind_of_operation(root: Path) -> None:
    text = patch(
        update("a.txt", "@@", "-alpha", "+ALPHA"),
        update("b.txt", "@@", " beta", "-line two", "+line 2", "+line 3"),
        add("docs/new.md", "# New"),
        delete("c.txt"),
        update(
            "src/app.py", "@@ def main():", "-    return 1", "+    return 2", move_to="pkg/main.py"
        ),
    )
    result = apply_patch_in_directory(root, text)
    assert result.status == "applied", result.error
    assert tree(root) == {
        "a.txt": b"ALPHA\n",
        "b.txt": b"beta\r\nline 2\r\nline 3\r\n",
        "docs": None,
        "docs/new.md": b"# New\n",
        "pkg": None,
        "pkg/main.py": b"def main():\n    return 2\n",
        "src": None,
    }
    assert leftovers(root) == []


def test_writes_replace_the_file_atomically(root: Path) -> None:
    target = root / "a.txt"
    with target.open("rb") as reader:
        result = apply_patch_in_directory(root, patch(update("a.txt", "@@", "-alpha", "+ALPHA")))
        assert result.status == "applied"
        assert reader.read() == b"alpha\n"  # the old inode is untouched: never half-written
    assert target.read_bytes() == b"ALPHA\n"
    assert leftovers(root) == []


def test_updated_file_keeps_its_mode(root: Path) -> None:
    script = root / "run.sh"
    script.write_bytes(b"#!/bin/sh\necho old\n")
    script.chmod(0o755)
    result = apply_patch_in_directory(root, patch(update("run.sh", "@@", "-echo old", "+echo new")))
    assert result.status == "applied"
    assert script.read_bytes() == b"#!/bin/sh\necho new\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o755


def test_moves_create_parent_directories(root: Path) -> None:
    text = patch(update("a.txt", "@@", "-alpha", "+ALPHA", move_to="deep/er/still/a.txt"))
    result = apply_patch_in_directory(root, text)
    assert result.status == "applied"
    assert not (root / "a.txt").exists()
    assert (root / "deep" / "er" / "still" / "a.txt").read_bytes() == b"ALPHA\n"


def test_dry_run_writes_nothing_but_returns_the_diff(root: Path) -> None:
    before = tree(root)
    text = patch(
        update("a.txt", "@@", "-alpha", "+ALPHA"),
        add("new/file.txt", "x"),
        delete("c.txt"),
    )
    result = apply_patch_in_directory(root, text, dry_run=True)
    assert result.status == "applied"
    assert tree(root) == before
    assert result.diff is not None
    assert "--- a/a.txt\n+++ b/a.txt\n" in result.diff
    assert "-alpha\n+ALPHA\n" in result.diff
    assert "--- /dev/null\n+++ b/new/file.txt\n" in result.diff
    assert "--- a/c.txt\n+++ /dev/null\n" in result.diff


def test_dry_run_does_not_call_before_write(root: Path) -> None:
    calls: list[int] = []
    text = patch(update("a.txt", "@@", "-alpha", "+ALPHA"))
    apply_patch_in_directory(root, text, dry_run=True, before_write=lambda: calls.append(1))
    assert calls == []


def test_partially_applied_writes_only_the_groups_that_apply(root: Path) -> None:
    text = patch(
        update("a.txt", "@@", "-alpha", "+ALPHA"),
        update("c.txt", "@@", "-not there", "+x"),
        add("a2.txt", "two"),
    )
    result = apply_patch_in_directory(root, text)
    assert result.status == "partially_applied"
    assert result.exit_code == 3
    assert (root / "a.txt").read_bytes() == b"ALPHA\n"
    assert (root / "a2.txt").read_bytes() == b"two\n"
    assert (root / "c.txt").read_bytes() == b"gamma\n"
    assert [g.paths for g in result.not_applied] == [["c.txt"]]


def test_failed_patch_writes_nothing(root: Path) -> None:
    before = tree(root)
    result = apply_patch_in_directory(root, patch(add("a.txt", "x"), delete("missing.txt")))
    assert result.status == "failed"
    assert tree(root) == before


def test_move_onto_a_directory_fails_only_its_group(root: Path) -> None:
    text = patch(
        update("a.txt", "@@", "-alpha", "+ALPHA", move_to="src"),
        update("c.txt", "@@", "-gamma", "+GAMMA"),
    )
    result = apply_patch_in_directory(root, text)
    assert result.status == "partially_applied"
    (failed,) = result.not_applied
    assert failed.reason is not None
    assert failed.reason.startswith("cannot move a.txt to src: it is a directory")
    assert (root / "a.txt").read_bytes() == b"alpha\n"
    assert (root / "c.txt").read_bytes() == b"GAMMA\n"
    assert (root / "src" / "app.py").exists()


def test_delete_of_a_directory_is_refused(root: Path) -> None:
    before = tree(root)
    result = apply_patch_in_directory(root, patch(delete("src")))
    assert result.status == "failed"
    assert result.error == (
        "apply_patch failed: delete src: cannot delete src: it is a directory "
        "(apply_patch works on files)"
    )
    assert tree(root) == before


@pytest.mark.parametrize(
    "section",
    [
        delete("alias.py"),
        update("alias.py", "@@", "-def main():", "+def start():"),
        add("linkdir/new.txt", "x"),
    ],
)
def test_patches_refuse_symbolic_links(root: Path, section: str) -> None:
    # A link inside the root is not followed: deleting or editing "through" it
    # would change its target instead of the link.
    (root / "alias.py").symlink_to("src/app.py")
    (root / "linkdir").symlink_to("src", target_is_directory=True)
    before = tree(root)
    result = apply_patch_in_directory(root, patch(section))
    assert result.status == "invalid"
    assert "symbolic link" in (result.error or "")
    assert tree(root) == before


# --- changed after planning -------------------------------------------------------------


def _changed_after_planning(root: Path, text: str, change: Callable[[], None]) -> None:
    seen: dict[str, Tree] = {}

    def before_write() -> None:
        change()
        seen["tree"] = tree(root)

    result = apply_patch_in_directory(root, text, before_write=before_write)
    assert result.status == "failed"
    assert result.exit_code == 1
    assert result.error is not None
    assert result.error.startswith("changed after planning: ")
    assert "nothing was written" in result.error
    assert tree(root) == seen["tree"]  # every file as the concurrent change left it
    assert leftovers(root) == []


TWO_GROUPS = patch(
    update("a.txt", "@@", "-alpha", "+ALPHA"),
    update("c.txt", "@@", "-gamma", "+GAMMA"),
    add("new.txt", "new"),
)


def test_changed_after_planning_modified_file(root: Path) -> None:
    _changed_after_planning(
        root, TWO_GROUPS, lambda: (root / "c.txt").write_bytes(b"gamma\nmore\n")
    )
    assert (root / "a.txt").read_bytes() == b"alpha\n"  # another group's file is untouched too
    assert not (root / "new.txt").exists()


def test_changed_after_planning_deleted_file(root: Path) -> None:
    _changed_after_planning(root, TWO_GROUPS, (root / "a.txt").unlink)
    assert (root / "c.txt").read_bytes() == b"gamma\n"


def test_changed_after_planning_file_created_where_an_add_goes(root: Path) -> None:
    _changed_after_planning(root, TWO_GROUPS, lambda: (root / "new.txt").write_bytes(b"theirs\n"))
    assert (root / "new.txt").read_bytes() == b"theirs\n"


def test_changed_after_planning_names_the_file(root: Path) -> None:
    result = apply_patch_in_directory(
        root, TWO_GROUPS, before_write=lambda: (root / "c.txt").write_bytes(b"x\n")
    )
    assert result.path == "c.txt"
    assert result.error is not None
    assert result.error.startswith("changed after planning: c.txt changed on disk")


def test_a_file_outside_the_plan_may_change(root: Path) -> None:
    result = apply_patch_in_directory(
        root,
        patch(update("a.txt", "@@", "-alpha", "+ALPHA")),
        before_write=lambda: (root / "c.txt").write_bytes(b"edited elsewhere\n"),
    )
    assert result.status == "applied"
    assert (root / "a.txt").read_bytes() == b"ALPHA\n"
    assert (root / "c.txt").read_bytes() == b"edited elsewhere\n"


# --- a write failure midway rolls back ----------------------------------------------------


ROLLBACK_PATCH = patch(
    update("a.txt", "@@", "-alpha", "+ALPHA"),  # write_atomic call 1
    update("b.txt", "@@", "-line two", "+line 2", move_to="moved/deep/b.txt"),  # unlink, call 2
    delete("c.txt"),  # unlink
    add("created/new.txt", "new"),  # call 3
    update("src/app.py", "@@", "-    return 1", "+    return 2"),  # call 4
)


@pytest.mark.parametrize("failing_call", [1, 2, 3, 4])
def test_write_failure_midway_rolls_back_this_requests_writes(
    root: Path, monkeypatch: pytest.MonkeyPatch, failing_call: int
) -> None:
    before = tree(root)
    real = fs_patch.write_atomic
    calls: list[Path] = []

    def flaky(path: Path, data: bytes) -> None:
        calls.append(path)
        if len(calls) == failing_call:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        real(path, data)

    monkeypatch.setattr(fs_patch, "write_atomic", flaky)
    result = apply_patch_in_directory(root, ROLLBACK_PATCH)
    assert result.status == "failed"
    assert result.exit_code == 1
    failed = ["a.txt", "moved/deep/b.txt", "created/new.txt", "src/app.py"][failing_call - 1]
    assert result.path == failed
    assert result.error == (
        f"cannot write {failed}: the disk is full (No space left on device); free space on the "
        f"file system that holds {root / failed}, then retry. This request's writes were rolled "
        "back and nothing changed"
    )
    # Rewritten files are restored byte for byte, deleted ones come back, created
    # files (and the directories made for them) are gone.
    assert tree(root) == before
    assert leftovers(root) == []
    assert result.written == result.committed == []


def test_a_disk_that_stays_full_cannot_keep_the_rollback_from_happening(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once the disk is full no file can be written any more, the rollback's included: it
    gives the replaced and deleted files their old inodes back, which takes no space."""
    before = tree(root)
    real = fs_patch.write_atomic
    calls: list[Path] = []

    def full_from_the_fourth(path: Path, data: bytes) -> None:
        calls.append(path)
        if len(calls) >= 4:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        real(path, data)

    monkeypatch.setattr(fs_patch, "write_atomic", full_from_the_fourth)
    result = apply_patch_in_directory(root, ROLLBACK_PATCH)
    assert result.status == "failed"
    assert len(calls) == 4  # the rollback wrote nothing
    assert tree(root) == before
    assert leftovers(root) == []


def test_rollback_restores_crlf_bytes_exactly(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = fs_patch.write_atomic
    calls: list[Path] = []

    def fail_second(path: Path, data: bytes) -> None:
        calls.append(path)
        if len(calls) == 2:
            raise OSError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        real(path, data)

    monkeypatch.setattr(fs_patch, "write_atomic", fail_second)
    text = patch(update("b.txt", "@@", " beta", "-line two", "+line 2"), add("z.txt", "z"))
    result = apply_patch_in_directory(root, text)
    assert result.status == "failed"
    assert result.error is not None
    assert result.error.startswith("cannot write z.txt: permission was denied (Permission denied);")
    assert (root / "b.txt").read_bytes() == b"beta\r\nline two\r\n"
    assert not (root / "z.txt").exists()


def test_an_add_under_a_file_fails_its_group_at_planning(root: Path) -> None:
    # The Add needs a directory where a file stands: that group is refused before
    # anything is written, and the independent Update still applies.
    (root / "blocker").write_bytes(b"a file, not a directory\n")
    text = patch(update("a.txt", "@@", "-alpha", "+ALPHA"), add("blocker/inside/x.txt", "x"))
    result = apply_patch_in_directory(root, text)
    assert result.status == "partially_applied"
    assert [g.reason for g in result.not_applied] == [
        "cannot add blocker/inside/x.txt: blocker is a file, "
        "so blocker/inside/x.txt cannot be created inside it"
    ]
    assert (root / "blocker").read_bytes() == b"a file, not a directory\n"
    assert (root / "a.txt").read_bytes().startswith(b"ALPHA")


# --- paths that leave the root ------------------------------------------------------------


@pytest.fixture
def outside(tmp_path: Path, root: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_bytes(b"secret\n")
    (root / "escape_dir").symlink_to(outside, target_is_directory=True)
    (root / "escape.txt").symlink_to(outside / "secret.txt")
    return outside


@pytest.mark.parametrize(
    "section",
    [
        update("escape.txt", "@@", "-secret", "+stolen"),
        update("escape_dir/secret.txt", "@@", "-secret", "+stolen"),
        add("escape_dir/planted.txt", "x"),
        delete("escape_dir/secret.txt"),
        delete("escape.txt"),
        update("a.txt", "@@", "-alpha", "+x", move_to="escape_dir/moved.txt"),
    ],
)
def test_paths_escaping_through_a_symlink_are_refused(
    root: Path, outside: Path, section: str
) -> None:
    before, before_outside = tree(root), tree(outside)
    # A harmless group first: a refused path makes the whole request invalid.
    text = patch(update("c.txt", "@@", "-gamma", "+GAMMA"), section)
    result = apply_patch_in_directory(root, text)
    assert result.status == "invalid"
    assert result.exit_code == 2
    assert result.error is not None
    assert "outside the root through a symbolic link" in result.error
    assert tree(root) == before
    assert tree(outside) == before_outside


def test_mixed_ending_file_keeps_the_replaced_lines_crlf(tmp_path: Path) -> None:
    # Issue 10 item 8: a replaced CRLF line in a mixed file was written as LF.
    (tmp_path / "f.txt").write_bytes(b"one\r\ntwo\nthree\r\nfour\n")
    text = "*** Begin Patch\n*** Update File: f.txt\n@@\n two\n-three\n+THREE\n four\n*** End Patch"
    result = apply_patch_in_directory(tmp_path, text)
    assert result.status == "applied", result
    assert (tmp_path / "f.txt").read_bytes() == b"one\r\ntwo\nTHREE\r\nfour\n"


def test_context_free_pure_addition_hunk_before_an_ordinary_hunk(tmp_path: Path) -> None:
    (tmp_path / "f.py").write_bytes(b"import os\n\n\ndef f():\n    return 1\n")
    text = patch(
        update("f.py", "@@", "+# appended", "@@ def f():", "-    return 1", "+    return 2")
    )
    result = apply_patch_in_directory(tmp_path, text)
    assert result.status == "applied", result.error
    assert (
        tmp_path / "f.py"
    ).read_bytes() == b"import os\n\n\ndef f():\n    return 2\n# appended\n"
