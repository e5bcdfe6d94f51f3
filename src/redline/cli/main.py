"""``redline``: the entry point (the command group is :mod:`redline.cli.group`)."""

from redline.cli.group import cli, main

__all__ = ["cli", "main"]
