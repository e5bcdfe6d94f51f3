"""``redline apply``: requests on stdin, results on stdout."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from redline.engine.hints import FailureHints
    from redline.engine.result import Result


@click.command("apply")
@click.option(
    "--root",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=Path("."),
    show_default="the current directory",
    help="Directory that request paths are relative to.",
)
@click.option("--jsonl", is_flag=True, help="One request per line; one result per line, in order.")
@click.option(
    "--dry-run", is_flag=True, help="Compute everything, the diff included; write nothing."
)
@click.option(
    "--threshold",
    type=click.FloatRange(0.0, 1.0, min_open=True),
    default=None,
    help="Similarity a fuzzy match needs (default 0.8); a request's own threshold wins.",
)
def apply_command(root: Path, jsonl: bool, dry_run: bool, threshold: float | None) -> None:
    """Apply an edit request read as JSON from stdin and print the result as JSON.

    \b
    {"tool": "edit", "path": "a.py", "old_string": "...", "new_string": "..."}
    {"tool": "edit", "path": "a.py", "edits": [{"old_string": "...", "new_string": "..."}]}

    Exit status: 0 applied or no change, 1 not applied, 2 bad request,
    3 partially applied (with --jsonl: the highest of the requests').
    """
    from redline.engine.hints import FailureHints

    hints = FailureHints()
    # Bytes, not the locale's text: JSON on the wire is UTF-8 whatever the locale says.
    stdin = sys.stdin.buffer
    if jsonl:
        worst = 0
        for line in stdin:
            if not line.strip():
                continue
            result = _run(line, root, dry_run, threshold, hints)
            _emit(result.to_dict())
            worst = max(worst, result.exit_code)
        sys.exit(worst)
    result = _run(stdin.read(), root, dry_run, threshold, hints)
    _emit(result.to_dict())
    sys.exit(result.exit_code)


def _run(
    data: bytes, root: Path, dry_run: bool, threshold: float | None, hints: FailureHints
) -> Result:
    from redline.engine.edit import EditRequest
    from redline.engine.errors import RequestError
    from redline.engine.result import Result
    from redline.fsops.apply import apply_in_directory
    from redline.tools.schema import parse_request

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Result(
            "invalid",
            error=f"request is not valid UTF-8 (byte {exc.start}); send JSON encoded as UTF-8",
        )
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        return Result(
            "invalid",
            error=f"request is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); "
            "send one JSON object (with --jsonl, one per line)",
        )
    except RecursionError:
        return Result(
            "invalid",
            error="request is nested too deeply to decode; send one flat JSON object "
            "of strings, booleans and a list of edits",
        )
    try:
        request, turn = parse_request(obj, threshold)
    except RequestError as exc:
        path = obj.get("path") if isinstance(obj, dict) else None
        return Result("invalid", path=path if isinstance(path, str) else None, error=str(exc))
    result = apply_in_directory(root, request, dry_run=dry_run)
    if isinstance(request, EditRequest):
        hints.observe(request.path, turn, result)
    return result


def _emit(payload: dict[str, Any]) -> None:
    line = json.dumps(payload, ensure_ascii=False) + "\n"
    # UTF-8 whatever the locale; a lone surrogate a request carried in (JSON allows
    # "\ud800") is written back as that same escape instead of crashing the stream.
    sys.stdout.buffer.write(line.encode("utf-8", "backslashreplace"))
    sys.stdout.buffer.flush()
