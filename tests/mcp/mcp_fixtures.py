"""A plain folder (no git) for the embedded-mode tests of ``redline mcp``, with the
environment its processes get; ``tests/mcp/conftest.py`` imports the fixture."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from gitmode_fixtures import FILES, scrubbed_env, short_runtime_dir, write


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
