"""``redline``: the click command group. Keep imports here light: ``redline --help``
must not load pygit2, watchdog or pydantic, and each command loads only its own
module. The calls that run on every edit and every commit (``apply``, ``guard`` in a
hook) do not come here at all: ``redline.cli.main`` starts them without click."""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from redline import __version__

# name -> "module:attribute", in the order `redline --help` lists them.
COMMANDS = {
    "apply": "redline.cli.apply:apply_command",
    "session": "redline.cli.session:session_group",
    "log": "redline.cli.log:log_command",
    "stats": "redline.cli.stats:stats_command",
    "undo": "redline.cli.land:undo_command",
    "land": "redline.cli.land:land_command",
    "review": "redline.cli.review:review_command",
    "approve": "redline.cli.guard:approve_command",
    "guard": "redline.cli.guard:guard_command",
    "hooks": "redline.cli.guard:hooks_group",
    "notes": "redline.cli.notes:notes_group",
    "daemon": "redline.cli.daemon:daemon_group",
    "schema": "redline.cli.schema:schema_command",
    "tools": "redline.cli.tools:tools_command",
    "mcp": "redline.cli.mcp:mcp_command",
    "demo": "redline.cli.demo:demo_command",
}


class _LazyGroup(click.Group):
    """A group whose commands are imported when used (or listed by --help), and the
    CLI's one error boundary (``redline.cli.boundary``): click handles its own usage
    errors as usual; a RedlineError is its message and exit code; anything else is
    "unexpected error" and the path of a crash log, never a traceback."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        from redline.cli import boundary
        from redline.fsops.interrupts import Interrupted

        try:
            return super().main(*args, **kwargs)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise  # reaches here only with standalone_mode=False: the caller handles it
        except Interrupted as stopped:  # SIGINT or SIGTERM (redline.fsops.interrupts)
            sys.exit(boundary.interrupted(stopped))
        except Exception as exc:
            sys.exit(boundary.report(exc))

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module, _, attribute = target.partition(":")
        command = getattr(importlib.import_module(module), attribute)
        assert isinstance(command, click.Command)
        return command


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="redline")
def cli() -> None:
    """Apply code-agent edits so that every edit is explainable, atomic and reviewable."""
