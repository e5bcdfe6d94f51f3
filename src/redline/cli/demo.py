"""``redline demo``: a throwaway project, an exact and a tolerant edit, their evidence."""

from __future__ import annotations

import tempfile
from pathlib import Path

import click

SAMPLE = '''\
"""Greeting service."""


def greet(name):
\tmessage = f“Hello, {name}!”
\treturn message


def farewell(name):
\treturn f"Goodbye, {name}."
'''

EXACT = {
    "old_string": 'def farewell(name):\n\treturn f"Goodbye, {name}."\n',
    "new_string": 'def farewell(name, polite=True):\n\treturn f"Goodbye, {name}."\n',
}
# What a model typically sends: spaces for the file's tabs, straight quotes for
# curly ones. redline finds it, says how, and keeps the file's own style.
TOLERANT = {
    "old_string": 'def greet(name):\n    message = f"Hello, {name}!"\n    return message\n',
    "new_string": (
        'def greet(name):\n    message = f"Hello, {name}!"\n'
        '    log.info("greeted %s", name)\n    return message\n'
    ),
}


@click.command("demo")
@click.option("--keep", is_flag=True, help="Keep the throwaway directory and print its path.")
def demo_command(keep: bool) -> None:
    """Run two edits on a throwaway project and show their evidence."""
    from redline.engine.edit import EditItem, EditRequest
    from redline.fsops.apply import apply_in_directory

    root = Path(tempfile.mkdtemp(prefix="redline-demo-"))
    (root / "greet.py").write_text(SAMPLE, encoding="utf-8")
    click.secho(f"Throwaway project: {root}", bold=True)
    for title, edit in (("Exact edit", EXACT), ("Tolerant edit", TOLERANT)):
        request = EditRequest("greet.py", (EditItem(edit["old_string"], edit["new_string"]),))
        result = apply_in_directory(root, request)
        click.secho(f"\n== {title}: {result.status}", bold=True)
        click.echo(f"match_type={result.match_type} confidence={result.confidence}")
        for match in result.matches:
            click.echo(f"lines {match.start_line}-{match.end_line}, matched_text:")
            click.echo("".join(f"  | {line}\n" for line in match.matched_text.splitlines()))
        if result.error:
            click.echo(result.error)
        click.echo(result.diff or "")
    click.secho("== greet.py now", bold=True)
    click.echo((root / "greet.py").read_text(encoding="utf-8"))
    if keep:
        click.echo(f"Kept {root}")
    else:
        import shutil

        shutil.rmtree(root)
