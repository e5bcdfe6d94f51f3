"""Fixtures of the fault suite: per module, a small tmpfs holding a repository (root only;
skipped with the reason otherwise) and the environment every process of the module gets."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from fault_support import Machine, Place, Tmpfs, need_root_and_mount, short_dir

from gitmode_fixtures import FILES, IDENTITY, make_repo, scrubbed_env


@contextlib.contextmanager
def _environment(home: Path, runtime: Path, cache: Path) -> Iterator[dict[str, str]]:
    """The environment of the module's processes; the daemon of the module runs in this
    process, so it gets the same one."""
    with pytest.MonkeyPatch.context() as patch:
        env = scrubbed_env(home, runtime, XDG_CACHE_HOME=str(cache))
        for name in [n for n in os.environ if n.startswith("GIT_")]:
            patch.delenv(name)
        for name in ("HOME", "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR", "XDG_CACHE_HOME"):
            patch.setenv(name, env[name])
        for name, value in IDENTITY.items():
            patch.setenv(name, value)
        yield env


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Machine]:
    """A repository on a small tmpfs (root only)."""
    need_root_and_mount()
    base = tmp_path_factory.mktemp("faults")
    home = base / "home"
    home.mkdir()
    disk = Tmpfs(base / "disk")
    disk.mount()
    try:
        with short_dir() as runtime, _environment(home, runtime, disk.path / "cache") as env:
            repo = make_repo(disk.path / "repo", FILES, env)
            yield Machine(disk, repo, env, runtime)
    finally:
        disk.umount()


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Place]:
    """A repository for the faults other processes make (no root needed)."""
    base = tmp_path_factory.mktemp("faults")
    home = base / "home"
    home.mkdir()
    with short_dir() as runtime, _environment(home, runtime, base / "cache") as env:
        yield Place(make_repo(base / "repo", FILES, env), env, runtime)
