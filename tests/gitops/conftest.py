"""Fixtures of the in-process git-mode tests: a real repository built with git."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitmode_fixtures import FILES, make_repo


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository on main with a few files (tool.sh executable, *.log ignored)."""
    return make_repo(tmp_path / "repo", FILES, executable=("tool.sh",))
