"""fsops.atomic: git's lock files and temporary files, in one place."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from redline.fsops import atomic
from redline.fsops.atomic import LockHeld, locked, replace_file


def test_a_lock_replaces_the_file_when_the_block_succeeds(tmp_path: Path) -> None:
    target = tmp_path / "HEAD"
    target.write_text("old\n")
    with locked(target) as lock:
        assert (tmp_path / "HEAD.lock").exists()
        lock.write(b"new\n")
        assert target.read_text() == "old\n"  # nobody sees the new content before the end
    assert target.read_text() == "new\n"
    assert not (tmp_path / "HEAD.lock").exists()


def test_an_error_inside_the_block_removes_the_lock_and_keeps_the_file(tmp_path: Path) -> None:
    target = tmp_path / "HEAD"
    target.write_text("old\n")
    with pytest.raises(ZeroDivisionError), locked(target) as lock:
        lock.write(b"half")
        _ = 1 / 0
    assert target.read_text() == "old\n"
    assert not (tmp_path / "HEAD.lock").exists()


def test_release_only_ends_without_replacing(tmp_path: Path) -> None:
    target = tmp_path / "index"
    target.write_text("patched in place\n")
    with locked(target) as lock:
        lock.release_only()
    assert target.read_text() == "patched in place\n"
    assert not (tmp_path / "index.lock").exists()


def test_a_lock_held_by_another_process_is_named_in_gits_words_and_left(tmp_path: Path) -> None:
    target = tmp_path / "HEAD"
    held = tmp_path / "HEAD.lock"
    held.write_text("someone else's\n")
    with pytest.raises(LockHeld) as info, locked(target, wait=0.02):
        pass
    message = str(info.value)
    assert message.startswith(f"unable to create '{held}': file exists.")
    assert "Another git process seems to be running in this repository" in message
    assert f"remove it (`rm '{held}'`) and try again" in message
    assert held.read_text() == "someone else's\n"


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_replace_file_keeps_a_mode_or_gives_what_open_would(tmp_path: Path, umask: int) -> None:
    old = os.umask(umask)
    try:
        kept = tmp_path / "script.sh"
        kept.write_text("old\n")
        kept.chmod(0o750)
        replace_file(kept, b"new\n")
        fresh = tmp_path / "fresh.txt"
        replace_file(fresh, b"x\n")
        explicit = tmp_path / "tool"
        replace_file(explicit, b"#!/bin/sh\n", 0o777)
    finally:
        os.umask(old)
    assert kept.read_bytes() == b"new\n" and stat.S_IMODE(kept.stat().st_mode) == 0o750
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o666 & ~umask
    assert stat.S_IMODE(explicit.stat().st_mode) == 0o777 & ~umask
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fresh.txt", "script.sh", "tool"]


def test_a_lock_with_content_holds_it_from_its_first_moment(tmp_path: Path) -> None:
    target = tmp_path / "main"
    target.write_text("old\n")
    with locked(target, content=b"new\n") as lock:
        # What a process killed right now would leave: a lock that says what it was writing.
        assert lock.lock.read_bytes() == b"new\n"
        assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".redline-tmp")] == []
    assert target.read_text() == "new\n"


def test_a_lock_with_content_is_refused_like_any_other_when_held(tmp_path: Path) -> None:
    target = tmp_path / "main"
    (tmp_path / "main.lock").write_text("git's\n")
    with pytest.raises(LockHeld), locked(target, content=b"new\n"):
        pass
    assert (tmp_path / "main.lock").read_text() == "git's\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["main.lock"]


def test_a_lock_taken_without_a_descriptor_to_spare_is_not_left_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lock is linked from its staged content, then opened again (dup): when that finds
    no descriptor left, the lock goes, or it would block every later writer."""
    target = tmp_path / "ref"
    target.write_text("old\n")

    def no_descriptor(fd: int) -> int:
        raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))

    monkeypatch.setattr(atomic.os, "dup", no_descriptor)
    with (
        pytest.raises(OSError, match="Too many open files"),
        atomic.locked(target, content=b"new\n"),
    ):
        pass
    monkeypatch.undo()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ref"]
    with atomic.locked(target, content=b"new\n"):
        pass
    assert target.read_text() == "new\n"
