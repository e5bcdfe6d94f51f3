"""Shared test configuration (the helpers themselves live in ``tests/support/``).

Hypothesis runs deterministically (the "ci" profile) so that a failure seen once
is seen on every run and on every machine. Every test runs hermetically: HOME
points at an empty directory that must stay empty, no GIT_* variable from the
caller leaks in, and git's identity and configuration are pinned.

Daemons the CLI starts in this process run on threads (``support.daemon``) and
are stopped after the test that started them; a test marked ``daemon_process``
gets real daemon processes instead. At the end of the run, a daemon or ``redline
mcp`` process still alive fails the run (``support.leaks``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from support import daemon
from support.env import IDENTITY, assert_untouched, hermetic

pytest_plugins = ["support.leaks", "pytester"]

settings.register_profile("ci", derandomize=True, deadline=None, max_examples=200, database=None)
# The same with new random examples each run, to hunt: `pytest --hypothesis-profile=fresh`.
settings.register_profile("fresh", settings.get_profile("ci"), derandomize=False)
settings.load_profile("ci")

GIT_IDENTITY = IDENTITY  # the name older test modules import


@pytest.fixture(autouse=True, scope="session")
def daemons_in_process() -> Iterator[None]:
    """Daemons the CLI starts in this process run on its threads; it may not kill itself."""
    with daemon.in_process(), pytest.MonkeyPatch.context() as edge:
        edge.setattr(os, "kill", daemon.guarded_kill)
        yield


@pytest.fixture(autouse=True)
def daemons_stopped(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every daemon a test starts on a thread is stopped after it; ``daemon_process``
    tests get real daemon processes."""
    mark = daemon.started()
    if request.node.get_closest_marker("daemon_process") is not None:
        with daemon.real_processes():
            yield
    else:
        yield
    stuck = daemon.stop_started_since(mark)
    assert not stuck, f"daemons that would not stop: {daemon.describe(stuck)}"


@pytest.fixture(autouse=True)
def hermetic_environment(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    home = hermetic(tmp_path_factory, monkeypatch)
    yield home
    assert_untouched(home)
