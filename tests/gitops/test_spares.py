"""Spare files: a new file takes a spare's inode, and keeps the meaning of O_CREAT | O_EXCL."""

from __future__ import annotations

import errno
import logging
import os
import shutil
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from redline.fsops.atomic import write_all
from redline.gitops import spares
from redline.gitops.spares import SparePool
from redline.gitops.writer import PLAIN, Writer


def _inodes(folder: Path) -> set[int]:
    return {p.stat().st_ino for p in folder.rglob("*") if p.is_file()}


def _wait_for(pool: SparePool, count: int) -> None:
    deadline = time.monotonic() + 10
    while len(pool) < count:
        assert time.monotonic() < deadline, f"the pool holds {len(pool)} spares, not {count}"
        time.sleep(0.005)


@pytest.fixture
def pool(tmp_path: Path) -> Iterator[SparePool]:
    pool = SparePool(tmp_path / "spares", keep=8)
    pool.start()
    _wait_for(pool, 8)
    yield pool
    pool.stop()


def test_a_new_file_takes_a_spare_inode_and_the_pool_is_topped_up(
    pool: SparePool, tmp_path: Path
) -> None:
    before = _inodes(pool.folder)
    target = tmp_path / "new.pack"
    fd = Writer(spares=pool).open_new(target, 0o444)
    try:
        write_all(fd, b"payload")
    finally:
        os.close(fd)

    info = target.stat()
    assert info.st_ino in before  # a spare's inode, under its new name only
    assert info.st_nlink == 1 and info.st_ino not in _inodes(pool.folder)
    assert stat.S_IMODE(info.st_mode) == 0o444 and target.read_bytes() == b"payload"
    _wait_for(pool, 8)


def test_the_pool_is_topped_up_only_once_requests_pause(tmp_path: Path) -> None:
    pool = SparePool(tmp_path / "spares", keep=8, pause=1.0)
    pool.start()
    try:
        _wait_for(pool, 8)
        for i in range(4):
            os.close(Writer(spares=pool).open_new(tmp_path / f"burst-{i}"))
        time.sleep(0.3)  # well inside the pause: the thread must not have made any
        assert len(pool) == 4
        _wait_for(pool, 8)  # after it
    finally:
        pool.stop()


def test_the_pool_is_not_topped_up_while_a_request_is_served(tmp_path: Path) -> None:
    """A request that takes no spare (a session's checkout) still holds the top-up off."""
    pool = SparePool(tmp_path / "spares", keep=8, pause=0.2)
    pool.start()
    try:
        _wait_for(pool, 8)
        for i in range(4):
            os.close(Writer(spares=pool).open_new(tmp_path / f"taken-{i}"))
        with pool.serving():
            time.sleep(1.0)  # long past the pause since the last take
            assert len(pool) == 4
        _wait_for(pool, 8)  # once the request is done, and the pause has passed
    finally:
        pool.stop()


def test_a_long_burst_keeps_the_pool_from_running_dry(tmp_path: Path) -> None:
    """Requests that take nearly every spare make the thread top the pool up to a low
    mark while they run (not to the full pool: that waits for a pause)."""
    pool = SparePool(tmp_path / "spares", keep=16, pause=0.5)
    pool.start()
    try:
        _wait_for(pool, 16)
        low = 16 // spares.LOW
        with pool.serving():
            for i in range(15):
                os.close(Writer(spares=pool).open_new(tmp_path / f"burst-{i}"))
            _wait_for(pool, low)  # while the request is still served
            time.sleep(0.2)
            assert len(pool) == low
        _wait_for(pool, 16)  # the rest once requests pause
    finally:
        pool.stop()


def test_the_mode_is_masked_by_the_umask_as_os_open_does(pool: SparePool, tmp_path: Path) -> None:
    os.close(Writer(spares=pool).open_new(tmp_path / "plain", 0o666))
    plain = os.open(tmp_path / "reference", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    os.close(plain)
    assert stat.S_IMODE((tmp_path / "plain").stat().st_mode) == stat.S_IMODE(
        (tmp_path / "reference").stat().st_mode
    )


def test_an_existing_name_is_refused_and_left_alone(pool: SparePool, tmp_path: Path) -> None:
    lock = tmp_path / "index.lock"
    lock.write_bytes(b"held by git")
    count = len(pool)

    with pytest.raises(FileExistsError):
        Writer(spares=pool).open_new(lock)

    assert lock.read_bytes() == b"held by git"
    assert len(pool) == count  # the spare it did not use is kept


def test_a_spare_that_is_also_another_file_is_thrown_away(tmp_path: Path) -> None:
    # A daemon killed between link() and unlink() leaves a spare that is also a pack.
    folder = tmp_path / "spares"
    (folder / "a").mkdir(parents=True)
    pack = tmp_path / "pack-1.pack"
    pack.write_bytes(b"PACK data")
    os.link(pack, folder / "a" / "1-1")
    pool = SparePool(folder, keep=0)  # no top-up: only the damaged spare could be taken
    pool.start()
    try:
        assert len(pool) == 0
        assert not (folder / "a" / "1-1").exists()
    finally:
        pool.stop()
    assert pack.read_bytes() == b"PACK data" and pack.stat().st_nlink == 1


def test_a_spare_linked_elsewhere_after_start_is_not_written(tmp_path: Path) -> None:
    folder = tmp_path / "spares"
    pool = SparePool(folder, keep=1)
    pool.start()
    try:
        _wait_for(pool, 1)
        [spare] = [p for p in folder.rglob("*") if p.is_file()]
        other = tmp_path / "other"
        os.link(spare, other)
        other.write_bytes(b"keep me")  # same inode: the spare is no longer empty

        fd = pool.take(tmp_path / "wanted", 0o644)

        assert fd is None  # refused: open_new falls back to creating the file
        assert other.read_bytes() == b"keep me"
        assert not (tmp_path / "wanted").exists()
    finally:
        pool.stop()


def test_without_a_pool_or_when_it_is_empty_files_are_created_as_usual(tmp_path: Path) -> None:
    os.close(PLAIN.open_new(tmp_path / "one"))
    pool = SparePool(tmp_path / "spares", keep=0)
    pool.start()
    try:
        fd = Writer(spares=pool).open_new(tmp_path / "two", 0o600)
        os.close(fd)
    finally:
        pool.stop()
    assert (tmp_path / "one").is_file()
    assert stat.S_IMODE((tmp_path / "two").stat().st_mode) == 0o600


def test_a_pool_on_another_file_system_falls_back(tmp_path: Path) -> None:
    shm = Path("/dev/shm")
    if not shm.is_dir() or os.stat(shm).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("needs /dev/shm on a file system other than the test's temporary folder")
    folder = shm / f"redline-spares-{os.getpid()}"
    pool = SparePool(folder, keep=2)
    pool.start()
    try:
        _wait_for(pool, 2)
        os.close(Writer(spares=pool).open_new(tmp_path / "made"))
        assert (tmp_path / "made").is_file()
        assert len(pool) == 2  # the spare it could not use is kept for a file it can
    finally:
        pool.stop()
        for leftover in folder.rglob("*"):
            if leftover.is_file():
                leftover.unlink()


def test_spares_left_by_a_previous_daemon_are_adopted(tmp_path: Path) -> None:
    folder = tmp_path / "spares"
    first = SparePool(folder, keep=4)
    first.start()
    _wait_for(first, 4)
    first.stop()
    left = _inodes(folder)

    second = SparePool(folder, keep=4)
    second.start()
    try:
        assert len(second) >= 4
        fd = Writer(spares=second).open_new(tmp_path / "taken")
        os.close(fd)
        assert (tmp_path / "taken").stat().st_ino in left
    finally:
        second.stop()


def test_concurrent_takers_each_get_their_own_file(pool: SparePool, tmp_path: Path) -> None:
    made: list[Path] = []
    lock = threading.Lock()

    def work(n: int) -> None:
        for i in range(40):
            path = tmp_path / f"t{n}-{i}"
            fd = Writer(spares=pool).open_new(path)
            write_all(fd, path.name.encode())
            os.close(fd)
            with lock:
                made.append(path)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(made) == 160
    assert all(p.read_bytes() == p.name.encode() and p.stat().st_nlink == 1 for p in made)
    assert len({p.stat().st_ino for p in made}) == 160


def test_the_pool_makes_spares_again_once_it_can(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A full disk (or its folder removed) stops the top-up for a while, not for good: the
    daemon is not restarted to get its spares back."""
    real = os.open
    refusing = [True]

    def full(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if refusing[0] and flags & os.O_CREAT and str(path).startswith(str(tmp_path / "spares")):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        return real(path, flags, *args, **kwargs)

    monkeypatch.setattr(spares.os, "open", full)
    pool = SparePool(tmp_path / "spares", keep=4, pause=0.0, retry=0.1)
    with caplog.at_level(logging.INFO, logger="redline.daemon"):
        pool.start()
        try:
            time.sleep(0.5)
            assert len(pool) == 0
            refusing[0] = False
            shutil.rmtree(tmp_path / "spares" / "a")  # and its folder went too
            _wait_for(pool, 4)
        finally:
            pool.stop()
    said = [r.getMessage() for r in caplog.records]
    assert sum("cannot make spare files" in m for m in said) == 1  # once, not every retry
    assert any(m.startswith("spare files are made again") for m in said)
