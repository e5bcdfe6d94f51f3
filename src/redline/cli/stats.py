"""``redline stats``: per-match_type figures from the notes, the history and the outcome log."""

from __future__ import annotations

import json
import re
import shutil
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import click

from redline.cli.options import repo_option

DEFAULT_LATER = 10  # gitops.stats.DEFAULT_LATER (not imported: --help stays light)
_UNITS = {
    "second": 1,
    "minute": 60,
    "hour": 3600,
    "day": 86400,
    "week": 7 * 86400,
    "month": 30 * 86400,
    "year": 365 * 86400,
}
_RELATIVE = re.compile(
    r"\s*(\d+)[\s.]*(second|minute|hour|day|week|month|year)s?(?:[\s.]+ago)?\s*", re.I
)
_BLOCKS = " ▏▎▍▌▋▊▉█"
BAR_WIDTH = 40  # at most; less on a narrow terminal


def parse_since(text: str, now: float) -> float:
    """Seconds since the epoch for ``--since``: an ISO date or time (local time unless
    it names its zone), ``N units ago`` (git's style, ``2.weeks.ago`` too),
    ``today``, ``yesterday`` or ``now``."""
    word = text.strip().lower()
    if word in ("now", "today", "yesterday"):
        if word == "now":
            return now
        midnight = datetime.fromtimestamp(now).replace(hour=0, minute=0, second=0, microsecond=0)
        return (midnight - timedelta(days=word == "yesterday")).timestamp()
    relative = _RELATIVE.fullmatch(text)
    try:
        if relative:
            return now - int(relative.group(1)) * _UNITS[relative.group(2).lower()]
        return datetime.fromisoformat(text.strip().replace("Z", "+00:00")).timestamp()
    except (ValueError, OverflowError):  # not a date, or one out of the clock's range
        raise click.BadParameter(
            f"{text!r} is not a date this system's clock can hold: give an ISO date or time "
            "(2026-01-31, 2026-01-31T09:00:00Z) or a relative one ('2 weeks ago', "
            "'3 days ago', yesterday)",
            param_hint="--since",
        ) from None


def bar(share: float, width: int) -> str:
    """``share`` (0..1) of ``width`` cells in Unicode blocks, to an eighth of a cell."""
    eighths = round(max(0.0, min(1.0, share)) * width * 8)
    full, part = divmod(eighths, 8)
    text = "█" * full + (_BLOCKS[part] if part else "")
    return text.ljust(width)


@click.command("stats")
@repo_option
@click.option("--session", "session", metavar="NAME", help="Only this session's edits.")
@click.option("--all", "all_sessions", is_flag=True, help="Every session's edits (the default).")
@click.option(
    "--since",
    metavar="DATE",
    help="Only edits made at or after DATE: 2026-01-31, '2 weeks ago', yesterday.",
)
@click.option(
    "--later",
    type=click.IntRange(min=1),
    default=DEFAULT_LATER,
    show_default=True,
    metavar="N",
    help="Follow inserted lines through the N commits after each edit.",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object, for tooling.")
def stats_command(
    repo: Path,
    session: str | None,
    all_sessions: bool,
    since: str | None,
    later: int,
    as_json: bool,
) -> None:
    """Per match_type: how many edits, their share, confidence quartiles, how many
    were flagged, approved, rejected or failed validation, and how often a later
    commit changed what they inserted.

    \b
    The later-changed rate is the share of an edit's inserted lines that a later
    commit (on the session branch or any branch that took the edit) changed or
    removed within N commits: a proxy for edits that were wrong. Read it beside
    the shares: an "applied rate" alone rewards the most aggressive tool, since
    the more a tool tolerates, the more it applies.

    \b
    Edits, flags and approvals come from the notes (refs/notes/redline) of
    commits on a branch, so they travel with the repository. Rejected requests
    and validation failures leave no commit: they come from this clone's
    outcome log (.git/redline/outcomes/), which is local to this machine.
    Reads the repository directly: no daemon is started.
    """
    from redline.gitops.names import check_name
    from redline.gitops.stats import compute

    if session is not None and all_sessions:
        raise click.UsageError("give --session NAME or --all, not both")
    if session is not None:
        check_name(session)
    since_at = parse_since(since, time.time()) if since is not None else None
    from redline.cli._repository import open_repository

    handle, layout = open_repository(repo)
    report = compute(handle, layout, session=session, since=since_at, later=later)
    if as_json:
        click.echo(json.dumps(report.to_json()))
        return
    click.echo(render(report.to_json(), _where(handle), _width()))


def _where(handle: Any) -> str:
    return str(handle.workdir or handle.path).rstrip("/")


def _width() -> int:
    return shutil.get_terminal_size((100, 24)).columns


def render(data: dict[str, Any], where: str, columns: int) -> str:
    """The report as text: a table, a bar chart of the shares, the refused requests."""
    scope = f"session {data['session']}" if data["session"] else "all sessions"
    if data["since"]:
        scope += f", since {data['since']}"
    rows = data["match_types"]
    lines = [f"redline stats for {where} ({scope})"]
    if not data["edits"]:
        lines.append(_nothing(data))
    if rows:
        lines += ["", *_table(rows, data["later"]), ""]
    if data["edits"]:
        lines.append("Share of edits")
        width = max(10, min(BAR_WIDTH, columns - 26))
        for row in rows:
            if row["edits"]:
                share = row["share"]
                lines.append(f"  {row['match_type']:<17}{bar(share, width)} {share:6.1%}")
        lines.append("")
        overall = _rate(
            data["later_changed_rate"], data["later_changed_lines"], data["inserted_lines"]
        )
        lines.append(
            f"later-changed: inserted lines a later commit changed or removed within "
            f"{data['later']} commits (a proxy for edits that were wrong); overall {overall}"
        )
    refused = data["outcomes"]
    lines.append(
        "refused requests (outcome log of this clone): "
        + ", ".join(f"{status} {refused[status]}" for status in refused)
    )
    return "\n".join(lines)


def _nothing(data: dict[str, Any]) -> str:
    if data["older"]:
        return (
            f"no edits since {data['since']} ({data['older']} older); "
            "give an earlier --since or leave it out"
        )
    if data["session"] and data["noted"]:
        return (
            f"no edit commits of session {data['session']} on a branch yet; "
            "`redline stats --all` covers every session"
        )
    return (
        "no redline edits recorded here: no note in refs/notes/redline belongs to a commit "
        "on a branch. Edits sent with `redline apply --session NAME` are recorded there; "
        "to read a teammate's, fetch their notes too "
        "(`git fetch origin refs/notes/redline:refs/notes/redline`)"
    )


_HEADER = (
    f"{'match_type':<17}{'edits':>6}{'share':>8}  "
    f"{'min':>6}{'q1':>7}{'median':>7}{'q3':>7}{'max':>7}  "
    f"{'flagged':>7}{'approved':>9}{'rejected':>9}{'val.fail':>9}  later-changed"
)


def _table(rows: list[dict[str, Any]], later: int) -> list[str]:
    out = [_HEADER]
    for row in rows:
        conf = row["confidence"]
        quart = (
            f"{conf['min']:>6.3f}{conf['q1']:>7.3f}{conf['median']:>7.3f}"
            f"{conf['q3']:>7.3f}{conf['max']:>7.3f}"
            if conf
            else f"{'-':>6}{'-':>7}{'-':>7}{'-':>7}{'-':>7}"
        )
        rate = _rate(row["later_changed_rate"], row["later_changed_lines"], row["inserted_lines"])
        out.append(
            f"{row['match_type']:<17}{row['edits']:>6}{row['share']:>8.1%}  {quart}  "
            f"{row['flagged']:>7}{row['approved']:>9}{row['rejected']:>9}"
            f"{row['validation_failed']:>9}  {rate}"
        )
    out.append(
        f"(val.fail: validation failures; confidence quartiles over the edits; "
        f"later-changed within {later} commits)"
    )
    return out


def _rate(rate: float | None, changed: int, inserted: int) -> str:
    if rate is None:
        return "-"
    return f"{rate:.1%} ({changed}/{inserted} lines)"
