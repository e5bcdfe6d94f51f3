"""``redline apply``: the command's options and help (what it does:
:mod:`redline.cli.apply_stream`). ``redline.cli.main`` reads these same options
without click for the calls an agent makes per edit; ``redline apply --help`` and
every argument it does not read plainly come here."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from redline.cli.options import repo_option


@click.command("apply")
@click.option(
    "--root",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=Path("."),
    show_default="the current directory",
    help="Directory that request paths are relative to (embedded mode).",
)
@click.option(
    "--session",
    default=None,
    help="Apply in this session's worktree through the daemon (git mode): one commit per "
    "file group, evidence in git notes.",
)
@repo_option
@click.option("--jsonl", is_flag=True, help="One request per line; one result per line, in order.")
@click.option(
    "--dry-run", is_flag=True, help="Compute everything, the diff included; write nothing."
)
@click.option(
    "--full",
    is_flag=True,
    help="Print every field of each result, null and empty ones included (by default: the "
    "result contract - status, path, match_type, confidence, matched_text - and the fields "
    "that say something).",
)
@click.option(
    "--threshold",
    type=click.FloatRange(0.0, 1.0, min_open=True),
    default=None,
    help="Similarity a fuzzy match needs (default 0.8); a request's own threshold wins.",
)
def apply_command(
    root: Path,
    session: str | None,
    repo: Path,
    jsonl: bool,
    dry_run: bool,
    full: bool,
    threshold: float | None,
) -> None:
    """Apply an edit request read as JSON from stdin and print the result as JSON.

    \b
    {"tool": "edit", "path": "a.py", "old_string": "...", "new_string": "..."}
    {"tool": "edit", "path": "a.py", "edits": [{"old_string": "...", "new_string": "..."}]}
    {"tool": "apply_patch", "patch": "*** Begin Patch\\n...\\n*** End Patch"}
    {"tool": "write", "path": "a.py", "content": "...", "line_ending": "lf"}
    {"tool": "delete", "path": "a.py"}
    {"tool": "read", "path": "a.py", "offset": 1, "limit": 2000}

    Exit status: 0 applied, no change or read, 1 not applied, 2 bad request,
    3 partially applied (with --jsonl: the highest of the requests').
    """
    from redline.cli.apply_stream import run_apply

    sys.exit(run_apply(root, session, repo, jsonl, dry_run, threshold, full))
