"""The environment of the tests: pinned, scrubbed, and kept out of the real HOME.

Every test runs with an empty HOME that must stay empty, no ``GIT_*`` variable
from the caller and git's identity pinned (``tests/conftest.py`` applies
:func:`hermetic` to each test). A subprocess gets :func:`scrubbed_env`: the same,
plus a short ``XDG_RUNTIME_DIR`` for long socket paths and a short idle timeout so
that a daemon a failed test leaves behind dies soon.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

IDENTITY = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00+00:00",
    "GIT_COMMITTER_NAME": "Test Committer",
    "GIT_COMMITTER_EMAIL": "committer@example.com",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00+00:00",
    "GIT_CONFIG_NOSYSTEM": "1",
}
IDLE_TIMEOUT = "30"  # seconds: a daemon a failed test leaves behind dies soon
# Marks every process this test run starts (inherited through the environment), so
# that the leak check (support.leaks) finds the ones still alive at the end. Not a
# REDLINE_ or GIT_ variable: the subprocess environments below keep it.
RUN_MARK = "PYTEST_REDLINE_RUN"


def without_caller_variables(env: Mapping[str, str], *prefixes: str) -> dict[str, str]:
    """``env`` without GIT_*/REDLINE_* (and any other ``prefixes``) variables."""
    return {k: v for k, v in env.items() if not k.startswith(("GIT_", "REDLINE_", *prefixes))}


def scrubbed_env(home: Path, runtime: Path, **extra: str) -> dict[str, str]:
    """A subprocess environment: our HOME and runtime dir, no GIT_*/REDLINE_* leaking in."""
    env = without_caller_variables(os.environ)
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_RUNTIME_DIR=str(runtime),
        REDLINE_IDLE_TIMEOUT=IDLE_TIMEOUT,
        PYTHONDONTWRITEBYTECODE="1",
    )
    env.update(IDENTITY)
    env.update(extra)
    return env


@contextlib.contextmanager
def short_runtime_dir() -> Iterator[Path]:
    """A short-named XDG_RUNTIME_DIR (socket paths must stay under ~100 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="rl-", dir="/tmp"))
    path.chmod(0o700)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def assert_untouched(home: Path) -> None:
    """The HOME guard: a test's HOME is still empty."""
    touched = sorted(p.name for p in home.iterdir())
    assert not touched, f"a test wrote into HOME: {touched}"


@contextlib.contextmanager
def guarded_home(home: Path) -> Iterator[Path]:
    """``home`` created empty, and checked to be empty again at the end."""
    home.mkdir(parents=True, exist_ok=True)
    yield home
    assert_untouched(home)


def hermetic(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Make this process hermetic for one test; its (empty) HOME."""
    home = tmp_path_factory.mktemp("home")
    for name in list(os.environ):
        if name.startswith("GIT_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    # Crash logs (redline.crashlog) go to the cache directory: away from HOME.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
    for name, value in IDENTITY.items():
        monkeypatch.setenv(name, value)
    return home
