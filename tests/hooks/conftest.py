"""Fixtures of the guard tests."""

from __future__ import annotations

import pytest
from guard_fixtures import pre_commit_caches


@pytest.fixture(scope="session")
def pre_commit_cache(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """One pre-commit store, pip cache and virtualenv app data for the whole run: the
    environment pre-commit builds for a hook repository at a commit is built once, and
    what pip downloaded for one build serves the next."""
    return pre_commit_caches(tmp_path_factory.mktemp("pre-commit-caches"))
