"""``redline``: the command group. Keep imports here light: ``redline --help``
must not load pygit2, watchdog or pydantic."""

from __future__ import annotations

import click

from redline import __version__
from redline.cli.apply import apply_command
from redline.cli.daemon import daemon_group
from redline.cli.demo import demo_command
from redline.cli.guard import approve_command, guard_command, hooks_group, review_command
from redline.cli.log import log_command
from redline.cli.schema import schema_command
from redline.cli.session import session_group


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="redline")
def cli() -> None:
    """Apply code-agent edits so that every edit is explainable, atomic and reviewable."""


cli.add_command(apply_command)
cli.add_command(schema_command)
cli.add_command(demo_command)
cli.add_command(session_group)
cli.add_command(daemon_group)
cli.add_command(log_command)
cli.add_command(guard_command)
cli.add_command(approve_command)
cli.add_command(review_command)
cli.add_command(hooks_group)


def main() -> None:
    cli()
