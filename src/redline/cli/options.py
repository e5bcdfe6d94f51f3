"""Options several commands share."""

from __future__ import annotations

from pathlib import Path

import click

repo_option = click.option(
    "--repo",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=Path("."),
    show_default="the current directory",
    help="A path inside the git repository.",
)
