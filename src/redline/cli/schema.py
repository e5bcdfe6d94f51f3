"""``redline schema``: the JSON Schema of requests and results."""

from __future__ import annotations

import json

import click


@click.command("schema")
def schema_command() -> None:
    """Print the JSON Schema of requests and results."""
    from redline.tools.schema import json_schema

    click.echo(json.dumps(json_schema(), indent=2))
