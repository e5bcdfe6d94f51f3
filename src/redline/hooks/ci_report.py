"""The guard's range check for GitHub Actions: annotations and a step summary.

``redline guard --range BASE..HEAD --format github`` prints one workflow command
per flagged edit the range carries, at its file and lines in HEAD (gitops.follow
decides where the edit's lines are now): ``::error`` for an edit no person has
approved — the check fails — and ``::notice`` for one approved, naming who. Each
says the rule, what was tolerated, what the agent sent and what the file had,
and how to approve. A Markdown summary (for ``$GITHUB_STEP_SUMMARY``) says the
same per edit, with its diff.

Workflow commands: https://docs.github.com/actions/reference/workflow-commands —
a message escapes ``%``, CR and LF; a property also ``:`` and ``,``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pygit2

from redline.engine.policy import Policy
from redline.gitops.follow import Follower
from redline.hooks.gate import RangeVerdict
from redline.hooks.guard import carrying_commit, flagged_operations, lines_of
from redline.hooks.ledger import Ledger
from redline.hooks.sent_found import sent_and_found

_FENCE = "````"  # a fence longer than any a quoted text is likely to hold


@dataclass
class Shown:
    """One flagged edit of the range, where HEAD has it, with what it was about."""

    edit: str
    commit: str
    path: str  # in HEAD
    lines: tuple[tuple[int, int], ...]  # in HEAD; (n + 1, n): lines deleted after line n
    how: str  # "fuzzy 0.95", or the operation
    rule: str
    reason: str
    approved_by: list[str]
    texts: dict[str, Any] = field(default_factory=dict)  # hooks.sent_found
    diff: str = ""


def flagged_in_range(
    repo: pygit2.Repository, ledger: Ledger, verdict: RangeVerdict, policy: Policy
) -> list[Shown]:
    """The blocked edits of the verdict, then the approved flagged edits the range's
    commits carry, each where HEAD holds it."""
    from redline.engine.confidence import shown_confidence
    from redline.hooks.approve import commit_diff
    from redline.hooks.stages import brought

    follower = Follower(repo)
    out: list[Shown] = []
    for b in verdict.findings.blocked:
        found = repo.get(b.commit)
        assert isinstance(found, pygit2.Commit)
        commit = found
        how = (
            f"{b.match_type} {shown_confidence(b.confidence)}"
            if b.match_type and b.confidence is not None
            else str(b.op or "")
        )
        shown = Shown(b.edit, b.commit, b.path, b.lines, how, b.rule, b.reason, [])
        shown.texts = sent_and_found(repo, commit, b.edit, b.edited_as or b.path, b.start_line)
        shown.diff = commit_diff(repo, commit, b.edited_as or b.path)
        out.append(shown)
    in_range = {str(c.id) for c in brought(repo, verdict.change)}
    for entry in ledger.entries.values():
        if not entry.approved or in_range.isdisjoint(entry.commits):
            continue
        commit = carrying_commit(repo, entry)
        if commit is None:
            continue
        for op, rule, reason in flagged_operations(entry, policy, ledger):
            edit = follower.edit(commit, op.path, moved=op.op != "delete")
            where = follower.holds(edit, verdict.head.tree)
            if where is None:
                continue  # undone since: nothing of it in HEAD
            how = (
                f"{op.match_type} {shown_confidence(op.confidence)}"
                if op.match_type and op.confidence is not None
                else str(op.op or "")
            )
            # one name per reviewer: an approval is found in each note that carries the edit
            by = list(dict.fromkeys(str(a.get("by", "")) for a in entry.approvals))
            shown = Shown(entry.edit, str(commit.id), where.path, lines_of(where.spans), how,
                          rule, reason, by)  # fmt: skip
            shown.texts = sent_and_found(repo, commit, entry.edit, op.path, op.start_line)
            shown.diff = commit_diff(repo, commit, op.path)
            out.append(shown)
    return out


def _message(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _message(text).replace(":", "%3A").replace(",", "%2C")


def _span(shown: Shown) -> tuple[int, int]:
    if not shown.lines:
        return 1, 1
    first, last = shown.lines[0]
    return max(1, first), max(1, first, last)


def commands(items: list[Shown], other_problems: str = "") -> list[str]:
    """One workflow command per flagged edit (and one for any other refusal)."""
    out = []
    for item in items:
        first, last = _span(item)
        level = "notice" if item.approved_by else "error"
        state = (
            f"approved by {', '.join(item.approved_by)}"
            if item.approved_by
            else "unapproved flagged edit"
        )
        title = f"redline: {state} {item.edit} ({item.how})"
        out.append(
            f"::{level} file={_property(item.path)},line={first},endLine={last},"
            f"title={_property(title)}::{_message(chr(10).join(_said(item)))}"
        )
    if other_problems:
        out.append(f"::error title=redline guard::{_message(other_problems)}")
    return out


def _said(item: Shown) -> list[str]:
    """What an annotation says: rule, tolerated, the two texts, how to approve."""
    lines = [f"rule {item.rule}: {item.reason}"]
    lines += [f"tolerated: {t.get('text', '')}" for t in item.texts.get("tolerated") or []]
    if item.texts.get("sent_old") is not None:
        lines += ["the agent sent:", *str(item.texts["sent_old"]).splitlines()]
    elif item.texts.get("sent_said"):
        lines.append(f"the request as sent: {item.texts['sent_said']}")
    if item.texts.get("found") is not None:
        lines += ["the file had:", *str(item.texts["found"]).splitlines()]
    if not item.approved_by:
        lines.append(f"after review: redline approve {item.edit}")
    return lines


def markdown(items: list[Shown], summary: str) -> str:
    """The step summary: the verdict, then each flagged edit with its texts and diff."""
    out = ["## redline guard", "", summary, ""]
    if not items:
        out += ["No flagged edit in this range.", ""]
    for item in items:
        first, last = _span(item)
        state = (
            f"approved by {', '.join(item.approved_by)}" if item.approved_by else "**not approved**"
        )
        out += [
            f"### edit `{item.edit}` — `{item.path}` lines {first}-{last} ({item.how}): {state}",
            "",
            f"- rule `{item.rule}`: {item.reason}",
        ]
        out += [f"- tolerated: {t.get('text', '')}" for t in item.texts.get("tolerated") or []]
        out.append("")
        if item.texts.get("sent_old") is not None:
            out += ["The agent sent:", "", _FENCE, str(item.texts["sent_old"]).rstrip("\n"),
                    _FENCE, ""]  # fmt: skip
        elif item.texts.get("sent_said"):
            out += [f"The request as sent: {item.texts['sent_said']}", ""]
        if item.texts.get("found") is not None:
            out += ["The file had:", "", _FENCE, str(item.texts["found"]).rstrip("\n"), _FENCE,
                    ""]  # fmt: skip
        if item.diff:
            out += ["<details><summary>diff</summary>", "", _FENCE + "diff",
                    item.diff.rstrip("\n"), _FENCE, "", "</details>", ""]  # fmt: skip
        if not item.approved_by:
            out += [f"Approve after review: `redline approve {item.edit}`", ""]
    return "\n".join(out) + "\n"
