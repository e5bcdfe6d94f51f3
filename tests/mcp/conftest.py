"""Fixtures of the MCP server tests: a real repository (its daemon stopped afterwards) and
a plain folder for embedded mode, each with the environment its processes get."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from gitmode_fixtures import FILES, gm, scrubbed_env, short_runtime_dir, write

__all__ = ["folder", "gm"]


@dataclass(frozen=True)
class Folder:
    root: Path
    env: dict[str, str]


@pytest.fixture
def folder(tmp_path: Path, hermetic_environment: Path) -> Iterator[Folder]:
    """A folder that is no git repository, holding the usual files."""
    root = tmp_path / "plain"
    for name, content in FILES.items():
        write(root / name, content)
    with short_runtime_dir() as runtime:
        yield Folder(root, scrubbed_env(hermetic_environment, runtime))
