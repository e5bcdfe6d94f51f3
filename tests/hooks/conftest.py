"""Fixtures of the guard tests.

The hooks a test installs call back into the test process (``support.hooks``):
git runs the installed hook script, and the guard it starts runs here. Tests
marked ``e2e`` install hooks that start a real Python, as users' do.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from guard_fixtures import pre_commit_caches

from support import hooks


@pytest.fixture(scope="session")
def pre_commit_cache(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """One pre-commit store, pip cache and virtualenv app data for the whole run: the
    environment pre-commit builds for a hook repository at a commit is built once, and
    what pip downloaded for one build serves the next."""
    return pre_commit_caches(tmp_path_factory.mktemp("pre-commit-caches"))


@pytest.fixture(scope="session")
def hook_host() -> Iterator[None]:
    yield
    hooks.close()


@pytest.fixture(autouse=True)
def hooks_in_process(request: pytest.FixtureRequest, hook_host: None) -> Iterator[None]:
    if request.node.get_closest_marker("e2e") is not None:
        yield
        return
    with hooks.hooks_in_process():
        yield
