"""Fixtures of the daemon tests: a real repository and a real daemon, stopped afterwards."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitmode_fixtures import FILES, gm, make_repo

__all__ = ["gm", "repo"]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository on main with a few files, for what runs in this process."""
    return make_repo(tmp_path / "repo", FILES, executable=("tool.sh",))
