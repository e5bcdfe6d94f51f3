"""What git's core.fsync asks of the daemon's writes."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from gitmode_fixtures import FILES, git, make_repo
from redline.gitops.durability import Durability


@pytest.mark.parametrize(
    ("settings", "objects", "refs"),
    [
        ({}, False, False),  # git's default: a commit's objects and refs are not fsynced
        ({"core.fsync": "committed"}, True, True),
        ({"core.fsync": "all"}, True, True),
        ({"core.fsync": "loose-object"}, True, False),
        ({"core.fsync": "reference"}, False, True),
        ({"core.fsync": "objects,reference"}, True, True),
        ({"core.fsync": "committed,-reference"}, True, False),
        ({"core.fsync": "reference,none"}, False, False),
        ({"core.fsync": "pack,index"}, False, False),  # components an edit does not write
        ({"core.fsyncObjectFiles": "true"}, True, False),
    ],
)
def test_the_daemon_fsyncs_what_core_fsync_names(
    tmp_path: Path, settings: dict[str, str], objects: bool, refs: bool
) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    for key, value in settings.items():
        git(repo, "config", key, value)
    durability = Durability.from_config(pygit2.Repository(str(repo)).config)
    assert durability == Durability(objects=objects, refs=refs)
