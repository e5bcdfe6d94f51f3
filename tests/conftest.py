"""Shared test configuration.

Hypothesis runs deterministically (the "ci" profile) so that a failure seen once
is seen on every run and on every machine. Every test runs hermetically: HOME
points at an empty directory that must stay empty, no GIT_* variable from the
caller leaks in, and git's identity and configuration are pinned.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, deadline=None, max_examples=200, database=None)
settings.load_profile("ci")

GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00+00:00",
    "GIT_COMMITTER_NAME": "Test Committer",
    "GIT_COMMITTER_EMAIL": "committer@example.com",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00+00:00",
    "GIT_CONFIG_NOSYSTEM": "1",
}


@pytest.fixture(autouse=True)
def hermetic_environment(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("home")
    for name in list(os.environ):
        if name.startswith("GIT_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    # Crash logs (redline.cli.boundary) go to the cache directory: away from HOME.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
    for name, value in GIT_IDENTITY.items():
        monkeypatch.setenv(name, value)
    yield home
    touched = sorted(p.name for p in home.iterdir())
    assert not touched, f"a test wrote into HOME: {touched}"
