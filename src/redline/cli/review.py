"""``redline review``: the flagged edits waiting for a person, each as it will be judged.

Per flagged edit: the rule it broke, how it matched, what was tolerated (in
words), the text the agent sent beside the text the file had (cli.beside), then
the diff — and the command that approves it. ``--html FILE`` writes the same as
one self-contained page (cli.review_html); ``--json`` the records.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from redline.cli.guard import head_policy
from redline.cli.guard_hook import evidence_repo
from redline.cli.options import repo_option
from redline.engine.confidence import shown_confidence
from redline.engine.errors import RedlineError


@click.command("review")
@repo_option
@click.option("--json", "as_json", is_flag=True)
@click.option(
    "--html",
    "html_file",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    help="Also write the review as one self-contained HTML page to FILE.",
)
def review_command(repo: Path, as_json: bool, html_file: Path | None) -> None:
    """List the flagged edits still waiting for approval: the rule, the match, what was
    tolerated, the agent's text beside the file's, and the diff."""
    from redline.hooks import ledger
    from redline.hooks.approve import waiting
    from redline.hooks.guard import Unreadable, describe_unreadable

    git = evidence_repo(repo)
    entries = ledger.load(git)
    settled: list[str] = []
    policy = head_policy(git, entries)
    signatures = None
    if policy.approvals == "signed":  # only approvals that verify count (hooks.signed)
        from redline.hooks.signed import for_review

        entries, signatures = for_review(git, entries)
    items = waiting(git, policy, entries, settled)
    unreadable = [Unreadable(c, why) for c, why in sorted(entries.unreadable.items())]
    if signatures is not None:
        for item in items:
            item["ignored_approvals"] = [
                {"by": i.by, "commit": i.commit, "reason": i.reason}
                for i in signatures.ignored
                if i.edit == item["edit"]
            ]
    if html_file is not None:
        from redline.cli.review_html import page

        try:
            html_file.write_text(page(items, settled), encoding="utf-8")
        except OSError as exc:
            raise RedlineError(
                f"cannot write the review page to {html_file}: {exc.strerror or exc}; "
                "name a file in a folder you can write to"
            ) from None
    if as_json:
        click.echo(json.dumps(items))
    elif items:
        for line in shown(items):
            click.echo(line)
    elif not unreadable:
        still = " still on a branch" if settled else ""
        click.echo(f"nothing waiting: every flagged edit{still} is approved")
    if signatures is not None and not as_json:
        for edit, who in sorted(signatures.signed.items()):
            click.echo(f"edit {edit}: approved, signed by {', '.join(who)}")
    if settled and not as_json:
        click.echo(not_listed(settled))
    if html_file is not None and not as_json:
        click.echo(f"review page written to {html_file} (open it in a browser)")
    if unreadable:  # they may be flagged edits too: say so, and fail
        click.echo(describe_unreadable(unreadable, "redline review: "), err=True)
        sys.exit(1)


_NAMED = 10  # edits named in review's "not listed" line


def not_listed(settled: list[str]) -> str:
    """Review's line about the flagged edits no branch holds any more."""
    one = len(settled) == 1
    named = " ".join(settled[:_NAMED]) + (
        f" and {len(settled) - _NAMED} more" if len(settled) > _NAMED else ""
    )
    return (
        f"not listed: {len(settled)} unapproved flagged edit{'' if one else 's'} no longer "
        f"on any branch, HEAD or the index (undone, or the lines removed since): {named}; "
        f"the guard lets {'it' if one else 'them'} pass, so "
        f"{'it needs' if one else 'they need'} no approval"
    )


def how_matched(item: dict[str, Any]) -> str:
    """``fuzzy 0.95``, or the operation or rule when no text was matched."""
    if item.get("match_type") is not None and item.get("confidence") is not None:
        return f"{item['match_type']} {shown_confidence(item['confidence'])}"
    return str(item.get("op") or item.get("rule") or "")


def lines_of(item: dict[str, Any]) -> str:
    start, end = item.get("start_line"), item.get("end_line")
    return f"lines {start}-{end}" if start else ""


def shown(items: list[dict[str, Any]]) -> list[str]:
    """The review as a person reads it on a terminal."""
    from redline.cli.beside import beside
    from redline.engine.paths import safe_text, shown_path

    out: list[str] = []
    for item in items:
        where = " ".join(p for p in (lines_of(item), how_matched(item)) if p)
        out.append(
            click.style(
                f"edit {item['edit']} (commit {item['commit'][:12]}): "
                f"{shown_path(item['path'])} {where}",
                bold=True,
            )
        )
        out.append(safe_text(f"  rule {item['rule']}: {item['reason']}", keep=""))
        for ignored in item.get("ignored_approvals", []):
            said = f"  approval by {ignored['by']} ignored: {ignored['reason']}"
            out.append(safe_text(said, keep=""))
        for said in item.get("tolerated") or []:
            out.append(safe_text(f"  tolerated: {said.get('text', '')}", keep=""))
        if item.get("sent_old") is not None and item.get("found") is not None:
            what = "old_string" if item.get("tool") == "edit" else "the hunk's lines"
            out += [
                "  " + safe_text(line)
                for line in beside(item["sent_old"], item["found"], lines_of(item), what)
            ]
        elif item.get("sent_said"):
            out.append(safe_text(f"  the request as sent: {item['sent_said']}", keep=""))
        out.append(safe_text(item["diff"]))
        out.append(f"  approve: redline approve {item['edit']}")
    out.append("Approve with `redline approve EDIT...` once you have read each diff.")
    return out
